"""The measuring program's own code, kept in memory across the cache drops.

Before every trial the page cache is dropped (measure/cache.py), and with it fio's
executable and its shared libraries: Debian's fio loads 63 of them, Ceph's and
GlusterFS's among them. Each fio would then read them again from the root
filesystem while it starts, and fault in the rest during its timed job: reads of
the disk a plain target may be on, in the middle of the measurement, and seconds
of start-up per trial where the root filesystem is slow (the kernel lab's 9p root
under emulation, docs/kernel-lab.md).

The kernel drops no page that a process maps (drop_caches and
posix_fadvise(DONTNEED) skip mapped pages alike), so the run maps the pages of
fio's files that are already in the page cache, once, after its first fio, and
keeps them mapped until its end. Only pages already resident are held: nothing is
read for it, and a page fio never touched is never held. The data files are
not fio's code: their pages are dropped as before.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench.machine.system import which

PAGE = mmap.PAGESIZE  # bytes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_int = ctypes.c_int
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, _int, _int, _int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
_MAP_FAILED = ctypes.c_void_p(-1).value


@dataclass(frozen=True)
class Held:
    """What a hold keeps in memory."""

    files: int  # files mapped
    pages: int  # their pages that were resident, and are now mapped
    bytes: int  # those pages' size, bytes


def program_files(program: str) -> list[Path]:
    """The executable `program` resolves to on PATH and the shared libraries the
    dynamic loader gives it (ldd); [] where either is missing."""
    exe = which(program)
    ldd = which("ldd")
    if exe is None or ldd is None:
        return []
    out = subprocess.run([ldd, exe], capture_output=True, text=True, check=False).stdout
    files = [Path(exe)]
    for line in out.splitlines():
        # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x…)", "/lib64/ld-linux-x86-64.so.2 (0x…)";
        # the vDSO has no file.
        path = line.split("=>", 1)[-1].split("(", 1)[0].strip()
        if path.startswith("/"):
            files.append(Path(path))
    return files


def _map_resident(path: Path) -> tuple[int, int, int] | None:
    """Map `path` read-only and fault in the pages of it already in the page cache:
    (address, length in bytes, pages held); None where it cannot be mapped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        length = os.fstat(fd).st_size
        if length == 0:
            return None
        addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if addr is None or addr == _MAP_FAILED:
        return None
    pages = (length + PAGE - 1) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    if _libc.mincore(addr, length, vec) != 0:
        _libc.munmap(addr, length)
        return None
    held = 0
    for i in range(pages):
        if vec[i] & 1:
            # A read of the page maps it into this process: from now on it is a mapped page.
            _ = ctypes.c_ubyte.from_address(addr + i * PAGE).value
            held += 1
    return addr, length, held


@contextmanager
def hold(files: Iterable[Path]) -> Iterator[Held]:
    """Keep the resident pages of `files` mapped, and so in the page cache across
    every drop, until the block ends."""
    maps = [m for m in (_map_resident(p) for p in files) if m is not None]
    try:
        pages = sum(m[2] for m in maps)
        yield Held(len(maps), pages, pages * PAGE)
    finally:
        for addr, length, _pages in maps:
            _libc.munmap(addr, length)
