"""The cipher document as types: what `cryptbench cipher` measures and prints, and
what a run stores of its own layers' ciphers (pipeline/cipher_speed.py makes it;
cipher/ceilings.py and report/cipher_table.py read it).

Its JSON is `cipher --json` and the `ciphers` table's `result_json`
(docs/architecture.md, "The cipher document"). `to_json()` writes the keys this
version writes, in their order. `from_json()` also reads what older versions
stored: schema 1 had no `engine` and no `lower_bounds` (all its figures were timed
from Python), and its AF_ALG figures no `samples` and no `engine`.
Throughput is in bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cryptbench.model.result import JsonObject

SCHEMA = 2  # 2: "engine" and "lower_bounds" (the C loop against the system libcrypto)


@dataclass(frozen=True)
class UserspaceFigure:
    """OpenSSL on one cipher and data unit, on some cores (cipher/userspace.py)."""

    cipher: str  # OpenSSL's name, e.g. aes-256-xts
    unit: int  # bytes encrypted per call
    mode: str  # what the call does, e.g. "encrypt", "seal"
    used_by: str  # the layers that use this cipher and unit
    cores: int  # processes encrypting at once, one per core
    throughput: float  # bytes/s, median of the repeats
    min: float  # bytes/s, the slowest repeat
    max: float  # bytes/s, the fastest repeat
    samples: list[float]  # bytes/s, one per repeat

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Unmeasured:
    """A case (userspace, or a kernel algorithm through AF_ALG) this machine could not time."""

    cipher: str
    unit: int  # bytes per call
    reason: str

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class DriverInfo:
    """The implementation the kernel picks for an algorithm the backends need (/proc/crypto)."""

    algorithm: str  # the name asked for, e.g. xts(aes)
    driver: str  # e.g. xts-aes-aesni
    module: str  # "kernel" (built in) or the module's name
    priority: int  # higher wins
    type: str  # skcipher, aead, …
    acceleration: str  # what the driver's name says of it (cipher/kernel.classify)
    used_by: str  # the layers that need it

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class AfAlgFigure:
    """The kernel's cipher through AF_ALG on one data unit."""

    algorithm: str  # e.g. xts(aes)
    key_bits: int
    unit: int  # bytes per request
    cores: int  # requests in flight, one per core; 1 in documents before there were more
    throughput: float  # bytes/s, median of the repeats
    samples: list[float]  # bytes/s, one per repeat; none in schema 1

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: JsonObject) -> AfAlgFigure:
        return cls(
            d["algorithm"], d["key_bits"], d["unit"], d.get("cores", 1), d["throughput"], d.get("samples", [])
        )


@dataclass(frozen=True)
class AfAlg:
    available: bool  # the kernel offers AF_ALG sockets
    reason: str  # why not, when not
    engine: str  # what timed it: "C", or "Python" (lower bounds; documents without the key)
    results: list[AfAlgFigure] = field(default_factory=list)
    # algorithms the kernel refused (not built, or no module): none in older documents
    skipped: list[Unmeasured] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        return {
            "available": self.available,
            "reason": self.reason,
            "engine": self.engine,
            "results": [r.to_json() for r in self.results],
            **({"skipped": [u.to_json() for u in self.skipped]} if self.skipped else {}),
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> AfAlg:
        return cls(
            d["available"],
            d["reason"],
            d.get("engine", "Python"),
            [AfAlgFigure.from_json(r) for r in d.get("results", [])],
            [Unmeasured(**u) for u in d.get("skipped", [])],
        )


@dataclass(frozen=True)
class StackFigure:
    """One RAM-stack target in one direction."""

    target: str  # ram:fscrypt or ram:ext4-loop
    direction: str  # write or read
    throughput: float  # bytes/s, median of the repeats
    samples: list[float]  # bytes/s, one per repeat

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StackCipher:
    """The kernel cipher's own rate, separated from the stack with and without it."""

    algorithm: str  # xts(aes)
    direction: str  # write or read
    stack: float  # bytes/s: fscrypt on RAM
    without_cipher: float  # bytes/s: ext4-loop on RAM
    throughput: float | None  # bytes/s: the cipher alone; None when the difference is noise
    explanation: str  # how it was separated, or why it could not be

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RamStack:
    """fscrypt against ext4-loop on RAM, where no disk hides the cipher."""

    measured: bool
    reason: str  # why not, when not measured
    size: int | None = None  # bytes per trial; None when not measured
    block: int | None = None  # bytes per I/O
    iodepth: int | None = None
    results: list[StackFigure] = field(default_factory=list)
    cipher: list[StackCipher] = field(default_factory=list)

    def to_json(self) -> JsonObject:
        d: JsonObject = {"measured": self.measured, "reason": self.reason}
        if self.measured:
            d |= {
                "size": self.size,
                "block": self.block,
                "iodepth": self.iodepth,
                "results": [r.to_json() for r in self.results],
                "cipher": [c.to_json() for c in self.cipher],
            }
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> RamStack:
        return cls(
            d["measured"],
            d["reason"],
            d.get("size"),
            d.get("block"),
            d.get("iodepth"),
            [StackFigure(**r) for r in d.get("results", [])],
            [StackCipher(**c) for c in d.get("cipher", [])],
        )


@dataclass(frozen=True)
class CryptsetupFigure:
    """`cryptsetup benchmark --cipher CIPHER --key-size KEY_BITS`: the kernel's cipher
    through AF_ALG, one 64 KiB request at a time on one core (cipher/cryptsetup_bench.py)."""

    cipher: str  # cryptsetup's spec, e.g. aes-xts-plain64
    key_bits: int
    algorithm: str  # the kernel's crypto API name it resolves to, e.g. xts(aes)
    encrypt: float  # bytes/s (cryptsetup prints MiB/s)
    decrypt: float  # bytes/s

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Cryptsetup:
    """What `cryptsetup benchmark` said here, beside the kernel's own figures."""

    available: bool  # it printed at least one figure
    reason: str  # why none, in cryptsetup's words; "" when available
    results: list[CryptsetupFigure] = field(default_factory=list)
    skipped: list[Unmeasured] = field(default_factory=list)  # the cases it refused, each with why

    def to_json(self) -> JsonObject:
        return {
            "available": self.available,
            "reason": self.reason,
            "results": [r.to_json() for r in self.results],
            "skipped": [u.to_json() for u in self.skipped],
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> Cryptsetup:
        return cls(
            d["available"],
            d["reason"],
            [CryptsetupFigure(**r) for r in d.get("results", [])],
            [Unmeasured(**u) for u in d.get("skipped", [])],
        )


@dataclass(frozen=True)
class KernelCiphers:
    drivers: list[DriverInfo]
    missing: list[str]  # algorithms /proc/crypto does not list yet, each with what that means
    af_alg: AfAlg
    ram_stack: RamStack
    cryptsetup: Cryptsetup | None = None  # None: not asked (a run's own figures), or an older document

    def to_json(self) -> JsonObject:
        return {
            "drivers": [d.to_json() for d in self.drivers],
            "missing": self.missing,
            "af_alg": self.af_alg.to_json(),
            "ram_stack": self.ram_stack.to_json(),
            **({"cryptsetup": self.cryptsetup.to_json()} if self.cryptsetup is not None else {}),
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> KernelCiphers:
        return cls(
            [DriverInfo(**x) for x in d["drivers"]],
            d["missing"],
            AfAlg.from_json(d["af_alg"]),
            RamStack.from_json(d["ram_stack"]),
            Cryptsetup.from_json(d["cryptsetup"]) if "cryptsetup" in d else None,
        )


@dataclass(frozen=True)
class CipherDocument:
    schema: int
    library: str  # the OpenSSL the userspace figures used, and how they were timed
    engine: str | None  # "libcrypto" (C loop) or "cryptography"; None in schema 1
    lower_bounds: bool  # the userspace figures were timed from Python (always, in schema 1)
    cores: int  # the machine's cores
    seconds: float  # seconds per measurement
    repeats: int  # measurements of each figure
    userspace: list[UserspaceFigure]
    unavailable: list[Unmeasured]
    kernel: KernelCiphers
    environment: JsonObject | None = None  # `cipher` adds the machine's facts to what it prints
    id: int | None = None  # `cipher` adds the stored row's id

    def to_json(self) -> JsonObject:
        d: JsonObject = {
            "schema": self.schema,
            "library": self.library,
            "engine": self.engine,
            "lower_bounds": self.lower_bounds,
            "cores": self.cores,
            "seconds": self.seconds,
            "repeats": self.repeats,
            "userspace": [u.to_json() for u in self.userspace],
            "unavailable": [u.to_json() for u in self.unavailable],
            "kernel": self.kernel.to_json(),
        }
        if self.environment is not None:
            d["environment"] = self.environment
        if self.id is not None:
            d["id"] = self.id
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> CipherDocument:
        return cls(
            schema=d.get("schema", 1),
            library=d["library"],
            engine=d.get("engine"),
            lower_bounds=d.get("lower_bounds", True),
            cores=d["cores"],
            seconds=d["seconds"],
            repeats=d["repeats"],
            userspace=[UserspaceFigure(**u) for u in d["userspace"]],
            unavailable=[Unmeasured(**u) for u in d["unavailable"]],
            kernel=KernelCiphers.from_json(d["kernel"]),
            environment=d.get("environment"),
            id=d.get("id"),
        )
