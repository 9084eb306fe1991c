"""Deterministic inputs: the same seed gives the same bytes, on every target
and in every run, so that targets are compared on identical work.

`random.Random` seeded with a string is stable across Python versions (it
hashes the string with SHA-512), and its `randbytes` is fast enough to make
hundreds of MiB outside the clock.
"""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

CHUNK = 8 << 20  # bytes written per call when making a file

# Bytes → source-code-like text: letters, digits, punctuation, spaces and
# newlines, in roughly the proportions of C source, so that a tree of it
# looks (and compresses) like code rather than noise.
_TEXT = b"abcdefghijklmnopqrstuvwxyz" * 4 + b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789(){};,.=+-*/_<>"
TEXT_TABLE = (_TEXT + b" " * 40 + b"\n" * 8)[:256].ljust(256, b" ")


def rng(seed: int, *labels: object) -> random.Random:
    """A generator for one item of one workload (a photo, a message)."""
    return random.Random(":".join([str(seed), *map(str, labels)]))


def incompressible(seed: int, n: int, *labels: object) -> bytes:
    """n random bytes: no layer can compress or deduplicate them."""
    return rng(seed, *labels).randbytes(n)


def text(seed: int, n: int, *labels: object) -> bytes:
    """n bytes of code-like text."""
    return rng(seed, *labels).randbytes(n).translate(TEXT_TABLE)


def write_incompressible(path: Path, seed: int, n: int, *labels: object) -> None:
    """A file of n random bytes, written in chunks (a photo need not fit in memory twice)."""
    r = rng(seed, *labels)
    with open(path, "wb") as f:
        left = n
        while left:
            k = min(CHUNK, left)
            f.write(r.randbytes(k))
            left -= k
        f.flush()
        os.fsync(f.fileno())


def write_from_pool(path: os.PathLike[str], size: int, pool: bytes, chunk: int, salt: int | None) -> None:
    """A new file of `size` bytes in `chunk`-sized writes drawn from `pool`, fsynced.

    With a salt, each chunk starts with (salt, chunk number), so no two chunks
    of any file are alike however small the pool; without one the pool's bytes
    go as they are (a pool of zeros writes zeros).
    """
    span = len(pool) - chunk  # the offsets a whole chunk can start at
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        left, k = size, 0
        while left:
            n = min(chunk, left)
            at = (k * chunk) % span if span else 0
            if salt is None:
                data = pool[at : at + n]
            else:
                data = (salt * 1_000_003 + k).to_bytes(8, "little") + pool[at + 8 : at + n]
            view = memoryview(data)
            while view:  # a short write is legal; finish it
                view = view[os.write(fd, view) :]
            left -= n
            k += 1
        os.fsync(fd)
    finally:
        os.close(fd)


def lognormal_sizes(seed: int, total: int, median: int, sigma: float, low: int, high: int) -> list[int]:
    """File sizes (bytes) with a log-normal spread, as in real trees, summing to about `total`."""
    r = rng(seed, "sizes")
    mu = math.log(median)
    sizes: list[int] = []
    acc = 0
    while acc < total:
        s = int(min(high, max(low, r.lognormvariate(mu, sigma))))
        s = min(s, total - acc) if total - acc >= low else s
        sizes.append(s)
        acc += s
    return sizes
