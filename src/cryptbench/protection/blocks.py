"""Which 4 KiB blocks of a target's backing changed between two moments: a checksum per
block of every backing file (a change detector, not a security claim: the sum of the
block's 64-bit words, each times a fixed odd weight, modulo 2**64, so any change to one
word changes it; computed with NumPy a megabyte at a time, not block by block from
Python, which is slow under the kernel lab's emulated CPU; holes skipped, extents.py),
and the runs of consecutive blocks that differ. The tamper probe finds a file's ciphertext this
way, whatever the layout below (a loop image, a LUKS header and dm-integrity's tags, a
qcow2 file's clusters, a FUSE daemon's files): it rewrites the file and looks for what
changed. The change-granularity probe counts what one byte's change rewrote.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cryptbench.backends.base import iter_files
from cryptbench.protection import extents
from cryptbench.protection.extents import BLOCK

READ = 1 << 20  # bytes read at a time (a whole number of blocks)
HOLE = (1 << 64) - 1  # the mark of a block in a hole: no block's sum is given it
_HOLES = array("Q", [HOLE])
# One fixed odd weight per 64-bit word of a block (odd: a word's change never vanishes).
_WEIGHTS = np.random.default_rng(20261127).integers(0, 1 << 62, BLOCK // 8, dtype=np.uint64) * 2 + 1
_SHORT = np.uint64(0x9E3779B97F4A7C15)  # weighs a short last block's length into its sum


@dataclass(frozen=True)
class Blocks:
    """A sum per BLOCK of each backing file (HOLE for a block in a hole), the last block possibly short."""

    crcs: dict[Path, array]


@dataclass(frozen=True)
class Run:
    """Consecutive changed (or new) blocks of one backing file."""

    path: Path
    first: int  # index of its first block (bytes: first * BLOCK)
    count: int  # blocks

    @property
    def middle(self) -> int:
        """Offset, in bytes, inside the run's middle block, clear of its edges."""
        return (self.first + self.count // 2) * BLOCK + BLOCK // 2


def digest(backing: tuple[Path, ...]) -> Blocks:
    crcs: dict[Path, array] = {}
    for p in iter_files(backing):
        try:
            crcs[p] = _file(p)
        except FileNotFoundError:
            continue  # removed meanwhile (a daemon's temporary file)
    return Blocks(crcs)


def _file(path: Path) -> array:
    """A sparse image's holes are skipped (SEEK_DATA), not read: a large image that holds
    little costs little."""
    sums = array("Q")
    buf = memoryview(bytearray(READ))
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        for offset, got in extents.chunks(f, buf):
            sums.extend(_HOLES * (offset // BLOCK - len(sums)))
            sums.frombytes(block_sums(buf[:got]).tobytes())
    tail = -(-size // BLOCK)
    del sums[tail:]
    sums.extend(_HOLES * (tail - len(sums)))
    return sums


def block_sums(chunk: bytes | memoryview) -> np.ndarray:
    """Each BLOCK of `chunk`'s sum (its last block may be short: zero-padded, its length
    weighed in), none of them HOLE. The whole blocks are summed where they lie, not copied."""
    data = np.frombuffer(chunk, dtype=np.uint8)
    whole = len(data) - len(data) % BLOCK
    with np.errstate(over="ignore"):  # modulo 2**64 is the point
        sums = data[:whole].view("<u8").reshape(-1, BLOCK // 8) @ _WEIGHTS
        if whole < len(data):
            last = np.zeros(BLOCK, dtype=np.uint8)
            last[: len(data) - whole] = data[whole:]
            short = last.view("<u8") @ _WEIGHTS + np.uint64(len(data) - whole) * _SHORT
            sums = np.append(sums, short)
    sums[sums == np.uint64(HOLE)] -= np.uint64(1)
    return sums


def changed(before: Blocks, after: Blocks) -> list[Run]:
    """Runs of blocks that are new or differ in `after`, file by file (a file that is
    gone counts nothing: no byte of it can be read any more)."""
    runs = []
    for path, now in after.crcs.items():
        was = before.crcs.get(path, array("Q"))
        new = np.frombuffer(now, dtype=np.uint64)
        old = np.frombuffer(was, dtype=np.uint64)[: len(new)]
        differs = np.ones(len(new), dtype=np.int8)
        differs[: len(old)] = new[: len(old)] != old
        # where a run of differing blocks starts (+1) and ends (-1)
        edges = np.diff(np.concatenate(([0], differs, [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs += [Run(path, int(a), int(b - a)) for a, b in zip(starts, ends, strict=True)]
    return runs


def flip_byte(path: Path, offset: int) -> int:
    """Invert the byte at `offset` of `path`, durably; returns the byte it was."""
    with open(path, "r+b") as f:
        f.seek(offset)
        original = f.read(1)[0]
    write_byte(path, offset, original ^ 0xFF)
    return original


def write_byte(path: Path, offset: int, value: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(bytes([value]))
        f.flush()
        os.fsync(f.fileno())
