"""Which 4 KiB blocks of a target's backing changed between two moments: a checksum per
block of every backing file (CRC-32: a change detector, not a security claim), and the
runs of consecutive blocks that differ. The tamper probe finds a file's ciphertext this
way, whatever the layout below (a loop image, a LUKS header and dm-integrity's tags, a
qcow2 file's clusters, a FUSE daemon's files): it rewrites the file and looks for what
changed. The change-granularity probe counts what one byte's change rewrote.
"""

from __future__ import annotations

import os
import zlib
from array import array
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.base import iter_files

BLOCK = 4096  # bytes per checksummed block
READ = 1 << 20  # bytes read at a time (a whole number of blocks)
HOLE = 1 << 32  # the mark of a block in a hole: no CRC-32 equals it


@dataclass(frozen=True)
class Blocks:
    """A CRC-32 per BLOCK of each backing file, the last block possibly short."""

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
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: nothing but a hole up to the end
                data = size
            data -= data % BLOCK
            sums.extend([HOLE] * ((data - pos) // BLOCK))
            if data >= size:
                break
            try:
                end = os.lseek(fd, data, os.SEEK_HOLE)
            except OSError:
                end = size
            f.seek(data)
            pos = data
            # to the end of the data, rounded up to a whole block
            while pos < end and (chunk := f.read(min(READ, -(-(end - pos) // BLOCK) * BLOCK))):
                sums.extend(zlib.crc32(chunk[i : i + BLOCK]) for i in range(0, len(chunk), BLOCK))
                pos += len(chunk)
        tail = -(-size // BLOCK)
        del sums[tail:]
        sums.extend([HOLE] * (tail - len(sums)))
    return sums


def changed(before: Blocks, after: Blocks) -> list[Run]:
    """Runs of blocks that are new or differ in `after`, file by file (a file that is
    gone counts nothing: no byte of it can be read any more)."""
    runs = []
    for path, now in after.crcs.items():
        was = before.crcs.get(path, array("Q"))
        start = None
        for i, crc in enumerate(now):
            differs = i >= len(was) or was[i] != crc
            if differs and start is None:
                start = i
            elif not differs and start is not None:
                runs.append(Run(path, start, i - start))
                start = None
        if start is not None:
            runs.append(Run(path, start, len(now) - start))
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
