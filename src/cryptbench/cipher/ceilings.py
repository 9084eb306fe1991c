"""What each encrypted target could at best do here, and how much of it it did.

A stack cannot go faster than the device under it (plain on the same medium)
nor than its cipher on the cores it uses. Its efficiency is what it achieved
over the lower of the two. The cipher's figure comes, first found first used:

- userspace layers: the run's own OpenSSL measurement of the layer's cipher
  case (one core, or all cores for a layer that spreads its work), else the
  newest `cryptbench cipher` stored for this host, kernel and CPU;
- kernel layers: AF_ALG measured by the run, else the run's own RAM twins
  (the layer against its cipher-less baseline, both on RAM, for the same
  workload: 1/cipher = 1/stack - 1/without), else the newest stored
  `cryptbench cipher` of this host, kernel and CPU (its RAM stack), else
  unknown, with what to run to know it.

Every figure says where it came from (`source`). docs/methodology.md,
"Efficiency", gives the rules and their limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptbench.backends import REGISTRY
from cryptbench.backends.base import RAM_PREFIX, CipherUse
from cryptbench.cipher.cipher_document import AfAlgFigure, CipherDocument, UserspaceFigure
from cryptbench.model.result import CipherInfo, EfficiencyRow, JsonObject

UNKNOWN_HINT = "run `cryptbench cipher`, or this run with --ram, to measure it"
SAME_MACHINE = ("hostname", "kernel", "cpu_model")  # environment keys a stored figure must share


@dataclass(frozen=True)
class Ceiling:
    """The cipher's rate for one target and workload, with its provenance."""

    throughput: float | None  # bytes/s; None: unknown
    source: str  # where the figure comes from, or why there is none


@dataclass(frozen=True)
class Efficiency:
    workload: str
    target: str
    achieved: float  # bytes/s, median
    plain: float | None  # bytes/s, median of plain on the same medium
    plain_target: str | None  # its name
    use: CipherUse | None  # the layer's cipher, as its backend declares it
    ceiling: Ceiling
    cores: int  # cores the ceiling was measured on: those the layer's cipher can use
    openssl: float | None  # bytes/s: OpenSSL on the layer's cipher and unit, on those cores
    cpu_seconds_per_gb: float | None  # s/GB, median, system-wide
    plain_cpu_seconds_per_gb: float | None  # s/GB, median of the plain target

    @property
    def bound(self) -> float | None:
        """Bytes/s: the lower of plain's speed and the cipher's."""
        known = [x for x in (self.plain, self.ceiling.throughput) if x is not None and x > 0]
        return min(known) if known else None

    @property
    def limit(self) -> str | None:
        """Which of the two sets the bound: plain (the medium) or cipher."""
        if self.bound is None:
            return None
        return "plain" if self.plain is not None and self.bound == self.plain else "cipher"

    @property
    def efficiency(self) -> float | None:
        """Achieved over the bound, a fraction (above 1 when the bound was not reached by either)."""
        return None if self.bound is None else self.achieved / self.bound

    def row(self) -> EfficiencyRow:
        """The document's row: these figures with the bound, limit and efficiency they give."""
        return EfficiencyRow(
            workload=self.workload,
            target=self.target,
            achieved=self.achieved,
            plain=self.plain,
            plain_target=self.plain_target,
            cipher=None
            if self.use is None
            else CipherInfo(self.use.where, self.use.algorithm, self.use.unit),
            ceiling=self.ceiling.throughput,
            ceiling_source=self.ceiling.source,
            cores=self.cores,
            openssl=self.openssl,
            bound=self.bound,
            limit=self.limit,
            efficiency=self.efficiency,
            cpu_seconds_per_gb=self.cpu_seconds_per_gb,
            plain_cpu_seconds_per_gb=self.plain_cpu_seconds_per_gb,
        )

    def to_json(self) -> JsonObject:
        return self.row().to_json()


def cipher_use(backend: str) -> CipherUse | None:
    b = REGISTRY.get(backend)
    return None if b is None else b.cipher_use


# The OpenSSL case that computes what a kernel algorithm computes (fscrypt and
# LUKS2 both key AES-256-XTS: 64-byte keys).
# A kernel layer's cipher -> OpenSSL's case of the same algorithm, where AF_ALG has no figure.
# gcm(aes): ZFS encrypts with its own AES-GCM in the zfs module (the ICP), not the crypto API.
KERNEL_EQUIVALENT = {"xts(aes)": "aes-256-xts", "gcm(aes)": "aes-256-gcm"}


def openssl_case(use: CipherUse) -> tuple[str, int] | None:
    """(cipher, unit) OpenSSL is timed on for this layer: its own cipher, or the kernel's equivalent."""
    if use.where == "userspace":
        return use.algorithm, use.unit
    name = KERNEL_EQUIVALENT.get(use.algorithm)
    return None if name is None else (name, use.unit)


def openssl_cells(backends: Iterable[str], cores: int) -> list[tuple[tuple[str, int], int]]:
    """((cipher, unit), workers) OpenSSL must be timed on for `backends`' layers:
    all cores for a layer that spreads its work, else one."""
    out = []
    for name in backends:
        use = cipher_use(name)
        found = None if use is None else openssl_case(use)
        if use is not None and found is not None:
            out.append((found, cores if use.parallel else 1))
    return list(dict.fromkeys(out))


def same_machine(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) is not None and a.get(k) == b.get(k) for k in SAME_MACHINE)


@dataclass(frozen=True)
class StoredCipher:
    """A `cryptbench cipher` measurement from the store."""

    id: int
    measured_at: str  # ISO 8601
    environment: JsonObject  # the machine it was measured on
    result: CipherDocument


def _timed_from_python(doc: CipherDocument) -> str:
    """A note for figures that understate the cipher, as their document says (schema 1: all did)."""
    if doc.lower_bounds:
        return " (timed from Python: a lower bound)"
    return ""


def _on_cores(rows: Sequence[UserspaceFigure | AfAlgFigure], use: CipherUse) -> tuple[float, int] | None:
    """The figure (bytes/s) of `rows` on the cores the layer uses: all it was
    timed on for a layer that spreads its work, else one; and those cores."""
    if not rows:
        return None
    cores = max(r.cores for r in rows) if use.parallel else 1
    for r in rows:
        if r.cores == cores:
            return float(r.throughput), cores
    return None


def _userspace(doc: CipherDocument | None, use: CipherUse) -> tuple[float, int] | None:
    """OpenSSL's rate (bytes/s) for the layer's case, and the cores it ran on."""
    if doc is None:
        return None
    wanted = openssl_case(use)
    return _on_cores([r for r in doc.userspace if (r.cipher, r.unit) == wanted], use)


def _af_alg(doc: CipherDocument | None, use: CipherUse) -> tuple[float, int] | None:
    """AF_ALG's rate (bytes/s) for the layer's algorithm and unit, and the cores it ran on."""
    if doc is None:
        return None
    rows = doc.kernel.af_alg.results
    return _on_cores([r for r in rows if (r.algorithm, r.unit) == (use.algorithm, use.unit)], use)


def _ram_stack(doc: CipherDocument, direction: str) -> float | None:
    """The stored RAM-stack cipher figure for a direction (write, read, or both: the lower)."""
    figures = {c.direction: c.throughput for c in doc.kernel.ram_stack.cipher if c.throughput}
    wanted = ("write", "read") if direction == "mixed" else (direction,)
    known = [figures[d] for d in wanted if d in figures]
    return min(known) if known else None


class Resolver:
    """Finds the ceiling of each (target, workload) from what the run and the store hold."""

    def __init__(
        self,
        env: JsonObject,
        run_cipher: CipherDocument | None,
        stored: list[StoredCipher],
        medians: Mapping[tuple[str, str], float],
        baselines: Mapping[str, str | None],
        directions: Mapping[str, str],
        bulk: Mapping[str, str],
    ) -> None:
        self.env = env
        self.run_cipher = run_cipher  # what the run measured of its layers' ciphers
        self.stored = [s for s in stored if same_machine(s.environment, env)]  # newest first
        self.medians = medians  # (workload, target) -> throughput median, bytes/s
        self.baselines = baselines  # target -> its baseline's name
        self.directions = directions  # workload -> read, write or mixed
        self.bulk = bulk  # read or write -> the workload with the largest blocks and depth

    def resolve(self, target: str, backend: str, workload: str) -> tuple[Ceiling, int]:
        """The ceiling for `target` at `workload`, and the cores it stands for."""
        use = cipher_use(backend)
        if use is None:
            return Ceiling(None, f"{backend} declares no cipher use"), 1
        if use.where == "userspace":
            return self._userspace(use)
        cores = int(self.env.get("cpu_count") or 1) if use.parallel else 1
        return self._kernel(use, target, workload), cores

    def openssl(self, backend: str) -> float | None:
        """OpenSSL's rate for the layer's cipher and unit on the cores the layer uses, bytes/s."""
        use = cipher_use(backend)
        if use is None:
            return None
        for doc in (self.run_cipher, *(s.result for s in self.stored)):
            found = _userspace(doc, use)
            if found is not None:
                return found[0]
        return None

    def _userspace(self, use: CipherUse) -> tuple[Ceiling, int]:
        found = _userspace(self.run_cipher, use)
        label = f"OpenSSL {use.algorithm} on {use.unit}-byte units"
        if found is not None and self.run_cipher is not None:
            rate, cores = found
            note = _timed_from_python(self.run_cipher)
            return Ceiling(rate, f"{label}, {_cores(cores)}, measured by this run{note}"), cores
        for s in self.stored:
            found = _userspace(s.result, use)
            if found is not None:
                rate, cores = found
                note = _timed_from_python(s.result)
                source = f"{label}, {_cores(cores)}, cryptbench cipher #{s.id} ({s.measured_at}){note}"
                return Ceiling(rate, source), cores
        return Ceiling(None, f"{label}: not measured ({UNKNOWN_HINT})"), 1

    def _kernel(self, use: CipherUse, target: str, workload: str) -> Ceiling:
        found = _af_alg(self.run_cipher, use)
        if found is not None and self.run_cipher is not None:
            rate, cores = found
            # Documents before the C loop have no engine: their figures were timed from Python.
            note = (
                " (timed from Python: a lower bound)"
                if self.run_cipher.kernel.af_alg.engine == "Python"
                else ""
            )
            return Ceiling(
                rate,
                f"the kernel's {use.algorithm} through AF_ALG, {use.unit}-byte requests, {_cores(cores)}, "
                f"measured by this run{note}",
            )
        direction = self.directions.get(workload, "mixed")
        twins = self._twins(target.removeprefix(RAM_PREFIX), direction)
        if twins is not None:
            return twins
        for s in self.stored:
            on_ram = _ram_stack(s.result, direction)
            if on_ram is not None:
                return Ceiling(
                    on_ram,
                    f"the kernel's {use.algorithm} on the RAM stack ({direction}), "
                    f"cryptbench cipher #{s.id} ({s.measured_at})",
                )
        return Ceiling(None, f"the kernel's {use.algorithm}: unknown ({UNKNOWN_HINT})")

    def _twins(self, name: str, direction: str) -> Ceiling | None:
        """The cipher's bulk rate from the run's RAM twins: the layer against its
        baseline, both on RAM, at the run's largest-block, deepest workload in
        this direction (the lower of both for a mixed one), as `cryptbench
        cipher` measures it with 1 MiB requests. Small requests would charge
        the layer's cost per request to the cipher."""
        base = self.baselines.get(name)
        if base is None:
            return None
        found = []
        for d in ("write", "read") if direction == "mixed" else (direction,):
            bulk = self.bulk.get(d)
            if bulk is None:
                return None
            stack = self.medians.get((bulk, RAM_PREFIX + name))
            without = self.medians.get((bulk, RAM_PREFIX + base))
            est = None if stack is None or without is None else separate(stack, without)
            if est is None:
                return None
            found.append((est, bulk))
        rate, bulk = min(found)
        return Ceiling(
            rate,
            f"this run's RAM twins at {bulk}: 1/cipher = 1/{RAM_PREFIX}{name} - 1/{RAM_PREFIX}{base}",
        )


def separate(stack: float, without: float) -> float | None:
    """The cipher's own rate (bytes/s) from the stack with it and the same stack without it.

    Time per byte adds up: 1/stack = 1/without + 1/cipher. None when the stack
    with the cipher was not slower: then its cost is lost in the noise.
    """
    if stack <= 0 or without <= 0 or stack >= without:
        return None
    return 1.0 / (1.0 / stack - 1.0 / without)


def _cores(n: int) -> str:
    return "one core" if n == 1 else f"{n} cores"


def bulk_workloads(specs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Per direction, the fio workload with the largest blocks (then depth) that reads the data itself."""
    best: dict[str, tuple[int, int, str]] = {}
    for name, s in specs.items():
        d = direction(s["rw"])
        if d == "mixed" or s.get("view", "decrypted") != "decrypted":
            continue
        key = (int(s["bs"]), int(s["iodepth"]), name)
        if d not in best or key[:2] > best[d][:2]:
            best[d] = key
    return {d: k[2] for d, k in best.items()}


def direction(rw: str | None) -> str:
    """read, write or mixed, from a fio rw= value (None: an application task, mixed)."""
    if rw in ("read", "randread"):
        return "read"
    if rw in ("write", "randwrite"):
        return "write"
    return "mixed"
