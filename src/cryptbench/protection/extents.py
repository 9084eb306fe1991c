"""Reading a backing file's data and not its holes, through one buffer the caller owns.

The probes read whole images, several times a target: a sparse or preallocated image is
skipped where SEEK_DATA finds nothing written, and each read goes straight into the same
buffer (readinto on an unbuffered file), because a fresh megabyte per read costs page
faults and a copy, which under the kernel lab's emulated CPU are dear.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

BLOCK = 4096  # bytes: a region of data begins at a multiple of this, and ends rounded up to one


def chunks(f: io.FileIO, buf: memoryview) -> Iterator[tuple[int, int]]:
    """Read `f`'s data into the front of `buf`, chunk by chunk, in order: each step yields
    (offset in the file, bytes read), valid until the next. A region of data begins at a
    multiple of BLOCK and runs to its end rounded up to a whole BLOCK, or to the file's end;
    holes between regions are skipped. `buf`'s length must be a whole number of BLOCKs."""
    assert len(buf) % BLOCK == 0 and len(buf) > 0
    fd = f.fileno()
    size = os.fstat(fd).st_size
    pos = 0
    while pos < size:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: nothing but a hole up to the end
            return
        # Data may begin inside a BLOCK (a 1 KiB-block filesystem): the region starts at that
        # BLOCK's start, never before what was read, and its end is sought from the data itself.
        start = max(data - data % BLOCK, pos)
        try:
            end = os.lseek(fd, data, os.SEEK_HOLE)
        except OSError:
            end = size
        end = min(size, -(-end // BLOCK) * BLOCK)
        os.lseek(fd, start, os.SEEK_SET)
        pos = start
        while pos < end:
            got = f.readinto(buf[: min(len(buf), end - pos)])
            if not got:  # the file shrank meanwhile (a daemon's file)
                return
            yield pos, got
            pos += got
