"""The kernel's ciphers: which driver serves each algorithm a backend needs, and how fast.

The kernel picks, for an algorithm name such as `xts(aes)`, the registered
implementation with the highest priority (/proc/crypto lists them all). Its
driver name tells generic software from code that uses the CPU's AES
instructions; `classify` holds the rules, documented in docs/methodology.md.

Throughput is measured through AF_ALG (the kernel's crypto socket) where the
kernel offers it, one data unit per request, as dm-crypt and fscrypt submit
them, on one core and with a request in flight per core, timed in C
(_af_alg.c) where it was built, else from Python (a lower bound). Where it does not, `cryptbench
cipher` measures the encrypted stack on RAM instead (pipeline/cipher_speed.py).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptbench.cipher.cipher_document import DriverInfo

try:
    # a C extension built at install time (setup.py): there is no .py for mypy to read
    from cryptbench.cipher import _af_alg  # type: ignore[attr-defined]
except ImportError:  # not built (no compiler or Python headers at install): timed from Python
    _af_alg = None

PROC_CRYPTO = Path("/proc/crypto")
DRIVER_DETAIL = "kernel_cipher_driver"  # a kernel-crypto target's detail: its driver, /proc/crypto's name

# Algorithms the kernel-side backends need, and who needs them.
NEEDED: dict[str, str] = {
    "xts(aes)": "fscrypt file contents, dm-crypt/LUKS aes-xts-plain64",
    "cts(cbc(aes))": "fscrypt file names",
    "adiantum(xchacha12,aes)": "fscrypt-adiantum, luks-adiantum",
    "cbc(aes)": "ecryptfs file contents",
    "hmac(sha256)": "luks-aes256-hmac, -hmac-nojournal (dm-integrity's tags)",
}


@dataclass(frozen=True)
class AfAlgCase:
    """A kernel cipher `cryptbench cipher` times through AF_ALG."""

    algorithm: str  # the kernel's name for it
    key_bytes: int
    iv_bytes: int  # the unit's number, little endian, zero-padded to this
    units: tuple[int, ...]  # bytes per request
    used_by: str
    kind: str = "skcipher"  # the AF_ALG socket type: skcipher, or hash for a keyed digest (no IV)


AF_ALG_CASES = (
    AfAlgCase("xts(aes)", 64, 16, (512, 4096), "fscrypt, dm-crypt/LUKS aes-xts-plain64"),
    AfAlgCase("adiantum(xchacha12,aes)", 32, 32, (4096,), "fscrypt-adiantum, luks-adiantum"),
    AfAlgCase("cbc(aes)", 32, 16, (4096,), "ecryptfs (AES-256 per 4 KiB extent)"),
    # Adiantum's bulk cipher alone: how much of Adiantum's cost is XChaCha12's
    AfAlgCase("xchacha12", 32, 32, (4096,), "Adiantum's stream cipher"),
    # dm-integrity's tag under LUKS2 --integrity hmac-sha256: one digest per 4 KiB sector
    AfAlgCase("hmac(sha256)", 32, 16, (4096,), "luks-aes256-hmac, -hmac-nojournal (the tags)", "hash"),
)


@dataclass(frozen=True)
class Driver:
    algorithm: str  # the name asked for, e.g. xts(aes)
    driver: str  # the implementation the kernel picks, e.g. xts(ecb(aes-fixed-time))
    module: str  # kernel (built in) or the module's name
    priority: int  # higher wins
    kind: str  # skcipher, aead, cipher, ...
    acceleration: str  # see classify()

    def info(self) -> DriverInfo:
        """The document's record of it, with the layers that need the algorithm."""
        return DriverInfo(
            self.algorithm,
            self.driver,
            self.module,
            self.priority,
            self.kind,
            self.acceleration,
            NEEDED.get(self.algorithm, ""),
        )


# Substrings of a driver name and what they say, first match wins. x86:
# aesni (AES-NI), vaes (VAES, with AVX2 or AVX-512); arm64: -ce (Crypto
# Extensions); the rest are table- or bit-sliced software.
_RULES: tuple[tuple[str, str], ...] = (
    ("vaes", "hardware: VAES instructions"),
    ("aesni", "hardware: AES-NI instructions"),
    ("aes-ce", "hardware: ARMv8 Crypto Extensions"),
    ("-ce)", "hardware: ARMv8 Crypto Extensions"),
    ("neonbs", "software: bit-sliced NEON"),
    ("aes-fixed-time", "software: generic constant-time C (no AES instructions used)"),
    ("aes-generic", "software: generic table-based C (no AES instructions used)"),
    ("aes-lib", "software: generic C library AES (no AES instructions used)"),
    ("aes-arm64", "software: scalar arm64 assembly"),
)


def classify(driver: str) -> str:
    """What a driver name says about how it computes AES, or 'unknown'."""
    for needle, meaning in _RULES:
        if needle in driver:
            return meaning
    return "unknown: not a driver name cryptbench knows"


def is_software(acceleration: str) -> bool:
    return acceleration.startswith("software")


def parse(text: str) -> list[dict[str, str]]:
    """/proc/crypto as one dict per entry (blank-line separated `key : value` lines)."""
    entries: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                entries.append(current)
            current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        entries.append(current)
    return entries


def selected(entries: list[dict[str, str]], algorithm: str) -> Driver | None:
    """The implementation the kernel would pick for `algorithm`: passed its
    self-test, not internal, highest priority."""
    usable = [
        e
        for e in entries
        if e.get("name") == algorithm
        and e.get("internal", "no") == "no"
        and e.get("selftest", "passed") in ("passed", "unknown")
    ]
    if not usable:
        return None
    best = max(usable, key=lambda e: int(e.get("priority", "0")))
    return Driver(
        algorithm=algorithm,
        driver=best.get("driver", "?"),
        module=best.get("module", "?"),
        priority=int(best.get("priority", "0")),
        kind=best.get("type", "?"),
        acceleration=classify(best.get("driver", "")),
    )


def drivers(text: str | None = None) -> tuple[list[Driver], list[str]]:
    """The drivers for NEEDED, and a note for each algorithm not (yet) registered.

    The kernel registers a template such as xts(aes) on first use; fscrypt
    instantiates it when a key is added, so a fresh boot may not list it.
    """
    entries = parse(PROC_CRYPTO.read_text() if text is None else text)
    found, missing = [], []
    for algorithm in NEEDED:
        d = selected(entries, algorithm)
        if d is None:
            missing.append(
                f"{algorithm} is not in /proc/crypto (not instantiated yet, or the kernel lacks it)"
            )
        else:
            found.append(d)
    return found, missing


def af_alg_unavailable() -> str | None:
    """Why the kernel's crypto socket cannot measure xts(aes) here, or None."""
    if not hasattr(socket, "AF_ALG"):
        return "this Python has no AF_ALG support"
    try:
        with socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0) as s:
            s.bind(("skcipher", "xts(aes)"))
    except OSError as e:
        return (
            f"the kernel offers no AF_ALG skcipher socket ({e.strerror}; "
            "CONFIG_CRYPTO_USER_API_SKCIPHER is not enabled)"
        )
    return None


def af_alg_engine() -> str:
    """What times AF_ALG requests: "C" (the loop in _af_alg.c) or "Python" (a lower bound)."""
    return "C" if _af_alg is not None else "Python"


def af_alg_throughput(
    algorithm: str,
    key_bytes: int,
    unit: int,
    seconds: float,
    workers: int = 1,
    iv_bytes: int = 16,
    kind: str = "skcipher",
) -> float:
    """Bytes/s of the kernel's `algorithm` through AF_ALG: one request per data
    unit, as dm-crypt and fscrypt submit them, with `workers` requests in
    flight (a thread and a socket each, outside Python's lock), as dm-crypt's
    workqueue spreads a stream over every core. With kind "hash", each unit's keyed
    digest instead (one tag per sector, as dm-integrity's are made).

    Each request also costs two system calls. From the C loop that is all it
    costs beyond the cipher; from Python (where the loop was not built) the
    interpreter's overhead comes on top, and the figure is a lower bound.
    """
    key = os.urandom(key_bytes)
    moved = [0] * workers
    took = [0.0] * workers
    failed: list[OSError] = []
    loop = _c_loop if _af_alg is not None else _python_loop

    def work(i: int) -> None:
        try:
            # Each worker its own sectors, as a disk's concurrent requests.
            moved[i], took[i] = loop(algorithm, key, unit, seconds, i << 40, iv_bytes, kind)
        except OSError as e:
            failed.append(e)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return sum(moved) / max(took)


def _c_loop(
    algorithm: str, key: bytes, unit: int, seconds: float, first: int, iv_bytes: int, kind: str
) -> tuple[int, float]:
    assert _af_alg is not None
    done, took = _af_alg.encrypt_for(algorithm, key, unit, seconds, first, iv_bytes, kind)
    return int(done), float(took)


def _python_loop(
    algorithm: str, key: bytes, unit: int, seconds: float, first: int, iv_bytes: int, kind: str
) -> tuple[int, float]:
    data = os.urandom(unit)
    with socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0) as alg:
        alg.bind((kind, algorithm))
        alg.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, key)
        op, _ = alg.accept()
        with op:
            done, sector, start = 0, first, time.perf_counter()
            while True:
                for _ in range(64):
                    if kind == "hash":  # one send finishes the digest; the tag is at most 64 bytes
                        op.send(data)
                        op.recv(64)
                    else:
                        iv = sector.to_bytes(iv_bytes, "little")  # plain64 IVs: the sector number
                        op.sendmsg_afalg([data], op=socket.ALG_OP_ENCRYPT, iv=iv)
                        op.recv(unit)
                    sector += 1
                done += 64 * unit
                elapsed = time.perf_counter() - start
                if elapsed >= seconds:
                    return done, elapsed
