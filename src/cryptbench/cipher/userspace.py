"""Userspace cipher throughput on this CPU, through OpenSSL.

Storage layers encrypt in data units: a 512-byte or 4 KiB sector (dm-crypt,
fscrypt, qemu's LUKS), a 4 KiB block (gocryptfs, securefs). One call per unit
is what they pay, so that is what is timed here; one call over a 64 KiB buffer
would hide the cost per unit and overstate the ceiling.

Two engines time the same calls:

- `libcrypto` (preferred): a loop in C (`_units.c`, built at install time)
  against the system's libcrypto, the library `openssl speed` uses. It runs
  without the GIL, so all cores are timed by threads of this process.
- `cryptography` (fallback, when the C loop was not built): the same calls from
  Python through the `cryptography` package, which bundles its own OpenSSL
  release. The loop over units runs in C (`map` drained by a zero-length
  `deque`), but each call still carries the interpreter's call overhead, a
  large share of a 512-byte call: those figures are lower bounds, and every
  place that prints them says so. All cores: one spawned process per core.

XTS and CBC: one update per unit on a context keyed once, as `openssl speed
-evp` does (a layer also sets a new tweak per unit: one more AES block, 1/32 of
the work at 512 bytes). AEAD: a fresh nonce, the update and the tag per unit, as
gocryptfs and securefs seal each block.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from cryptbench.cipher.cipher_document import UserspaceFigure
from cryptbench.model.errors import CryptbenchError

try:
    # a C extension built at install time (setup.py): there is no .py for mypy to read
    from cryptbench.cipher import _units  # type: ignore[attr-defined]
except ImportError:  # not built: no compiler, Python headers or libssl-dev at install time
    _units = None

ENGINES = ("libcrypto", "cryptography")
NOT_BUILT = "the libcrypto timing loop was not built (see README: install and run)"

WORKER_GRACE = 60.0  # seconds a worker may take beyond its measurement (start-up, imports)
BUFFER = 1 << 20  # bytes encrypted per pass: fits the L2 cache, as openssl speed's buffer fits L1


@dataclass(frozen=True)
class CipherCase:
    name: str  # e.g. aes-256-xts
    unit: int  # bytes per call: the data unit
    key_bytes: int  # bytes of key (XTS: both halves)
    mode: str  # xts, cbc, aead or stream
    used_by: str  # which storage layers use it, in words


CASES: tuple[CipherCase, ...] = (
    CipherCase("aes-128-xts", 512, 32, "xts", "dm-crypt/LUKS aes-xts-plain64 256-bit key, 512 B sectors"),
    CipherCase("aes-128-xts", 4096, 32, "xts", "dm-crypt/LUKS 256-bit key, 4 KiB sectors"),
    CipherCase("aes-256-xts", 512, 64, "xts", "qemu LUKS images, dm-crypt with 512 B sectors"),
    CipherCase("aes-256-xts", 4096, 64, "xts", "fscrypt contents, dm-crypt/LUKS 4 KiB sectors"),
    CipherCase("aes-256-gcm", 4096, 32, "aead", "gocryptfs and securefs blocks"),
    CipherCase("chacha20-poly1305", 4096, 32, "aead", "CryFS (XChaCha20-), rclone crypt (XSalsa20-Poly1305)"),
    CipherCase("aes-192-cbc", 1024, 24, "cbc", "EncFS --standard blocks"),
    # beside the kernel's xchacha12 and Adiantum: the stream cipher family on this CPU in OpenSSL
    CipherCase("chacha20", 4096, 32, "stream", "compare: Adiantum's XChaCha12 (kernel)"),
)


def case(name: str, unit: int) -> CipherCase:
    for c in CASES:
        if (c.name, c.unit) == (name, unit):
            return c
    raise KeyError(f"{name}/{unit}")


def engine() -> str:
    """The engine figures are timed with unless one is asked for: libcrypto when built."""
    return "libcrypto" if _units is not None else "cryptography"


def _loop() -> Any:
    """The C timing loop, or the one-line reason it is missing."""
    if _units is None:
        raise CryptbenchError(NOT_BUILT)
    return _units


def lower_bounds(using: str) -> bool:
    """Whether an engine's figures understate the cipher (Python's per-call cost)."""
    return using == "cryptography"


def library(using: str | None = None) -> str:
    """The OpenSSL an engine's measurements go through, and how they are taken."""
    if (using or engine()) == "libcrypto":
        return f"{_loop().version()} (system libcrypto, timed in C)"
    import cryptography
    from cryptography.hazmat.backends.openssl.backend import backend

    return f"{backend.openssl_version_text()} (cryptography {cryptography.__version__}, timed from Python)"


def unavailable(c: CipherCase, using: str | None = None) -> str | None:
    """Why this OpenSSL cannot run `c`, or None."""
    try:
        _timed(c, 0.0, using)
    except Exception as e:  # UnsupportedAlgorithm, or a build without the cipher
        return f"{c.name} is not available in {library(using)}: {e}"
    return None


def _encrypt_units(c: CipherCase) -> Callable[[], int]:
    """A function that encrypts BUFFER bytes, one call per unit, and returns the bytes done."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

    key = os.urandom(c.key_bytes)
    data = memoryview(bytearray(os.urandom(BUFFER)))
    units = [data[i : i + c.unit] for i in range(0, BUFFER, c.unit)]
    done = len(units) * c.unit
    if c.mode == "stream":
        update_stream = Cipher(algorithms.ChaCha20(key, os.urandom(16)), None).encryptor().update_into
        out_stream = bytearray(c.unit)

        def run_stream() -> int:
            deque(map(update_stream, units, repeat(out_stream)), maxlen=0)
            return done

        return run_stream
    if c.mode in ("xts", "cbc"):
        mode = modes.XTS(os.urandom(16)) if c.mode == "xts" else modes.CBC(os.urandom(16))
        update_into = Cipher(algorithms.AES(key), mode).encryptor().update_into
        out = bytearray(c.unit + 16)

        def run() -> int:
            deque(map(update_into, units, repeat(out)), maxlen=0)
            return done

        return run
    aead = ChaCha20Poly1305(key) if c.name.startswith("chacha20") else AESGCM(key)
    nonce = os.urandom(12)  # one nonce for all: only the speed is wanted, never the ciphertext

    def run_aead() -> int:
        deque(map(aead.encrypt, repeat(nonce), units, repeat(None)), maxlen=0)
        return done

    return run_aead


def _timed(c: CipherCase, seconds: float, using: str | None = None) -> tuple[int, float]:
    """(bytes encrypted, seconds taken) for about `seconds` of one core's work."""
    if (using or engine()) == "libcrypto":
        try:
            done, took = _loop().encrypt_for(c.name, c.unit, seconds, BUFFER)
        except RuntimeError as e:  # OpenSSL refused: its reason, on one line
            raise CryptbenchError(f"OpenSSL timing failed: {e}") from None
        return int(done), float(took)
    run = _encrypt_units(c)
    run()  # warm: first-touch page faults and the CPU's clock ramp
    total, start = 0, time.perf_counter()
    while True:
        total += run()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return total, elapsed


def _worker(c: CipherCase, seconds: float, go: Any, out: Any) -> None:
    # go and out: a multiprocessing Event and Queue, whose context-bound types mypy cannot name
    go.wait()
    out.put(_timed(c, seconds, "cryptography"))


def _result(out: Any, procs: list[Any], seconds: float) -> tuple[int, float]:
    """The next worker's (bytes, seconds); a clear error as soon as a worker
    dies without one, rather than a wait for a result that will not come."""
    deadline = time.monotonic() + seconds + WORKER_GRACE
    while time.monotonic() < deadline:
        try:
            return out.get(timeout=0.1)
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise CryptbenchError(f"an OpenSSL timing process died (exit status {dead[0]})") from None
    raise CryptbenchError(f"an OpenSSL timing process gave no result within {seconds + WORKER_GRACE:.0f} s")


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def throughput(c: CipherCase, seconds: float, workers: int = 1, using: str | None = None) -> float:
    """Bytes/s with `workers` encrypting at once (one per core), summed; `using`
    an engine (default: `engine()`)."""
    return sum(rates(c, seconds, workers, using))


def rates(c: CipherCase, seconds: float, workers: int = 1, using: str | None = None) -> list[float]:
    """Each worker's bytes/s, the workers encrypting at once."""
    using = using or engine()
    if workers == 1:
        results = [_timed(c, seconds, using)]
    elif using == "libcrypto":
        results = _threads(c, seconds, workers)
    else:
        results = _processes(c, seconds, workers)
    return [done / took for done, took in results]


def _threads(c: CipherCase, seconds: float, workers: int) -> list[tuple[int, float]]:
    """The C loop in `workers` threads: it releases the GIL, so each has a core."""
    start = threading.Barrier(workers)

    def one() -> tuple[int, float]:
        start.wait()
        return _timed(c, seconds, "libcrypto")

    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(one) for _ in range(workers)]
        return [f.result() for f in futures]


def _processes(c: CipherCase, seconds: float, workers: int) -> list[tuple[int, float]]:
    """The Python loop in `workers` processes: one interpreter cannot run two at once."""
    # spawn, not fork: the parent may have threads (Rich's refresh) that fork would copy mid-lock.
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(c, seconds, go, out), daemon=True) for _ in range(workers)]
    for p in procs:
        p.start()
    try:
        go.set()
        return [_result(out, procs, seconds) for _ in procs]
    except BaseException:
        for p in procs:  # the others' figures are useless now: do not wait for them
            p.kill()
        raise
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()


@dataclass(frozen=True)
class Measured:
    case: CipherCase
    workers: int  # processes encrypting at once, one per core
    samples: tuple[float, ...]  # bytes/s, one per repeat

    @property
    def median(self) -> float:  # bytes/s
        return statistics.median(self.samples)

    def figure(self) -> UserspaceFigure:
        """The document's figure: the median, the range and every sample."""
        c = self.case
        xs = list(self.samples)
        return UserspaceFigure(
            c.name, c.unit, c.mode, c.used_by, self.workers, self.median, min(xs), max(xs), xs
        )


def grid(cases: Iterable[CipherCase], workers: Iterable[int]) -> list[tuple[CipherCase, int]]:
    """Every case at every worker count."""
    return [(c, w) for c in cases for w in dict.fromkeys(workers)]


def measure(
    cells: Iterable[tuple[CipherCase, int]], seconds: float, repeats: int, using: str | None = None
) -> list[Measured]:
    """Each (case, workers), `repeats` times, interleaved so that a slow spell
    of a shared machine spreads over all of them."""
    order = list(dict.fromkeys(cells))
    samples: dict[tuple[CipherCase, int], list[float]] = {k: [] for k in order}
    for _ in range(repeats):
        for c, w in order:
            samples[(c, w)].append(throughput(c, seconds, w, using))
    return [Measured(c, w, tuple(samples[(c, w)])) for c, w in order]
