"""Run inside a kernel-lab guest, in the background: keep the Python code its tests
start again and again in the guest's page cache, across every drop.

The guest reads the host's tree through 9p under an emulated CPU. guest_script
(tests/support/kernel_lab.py) mounts it a second time with the page cache on (cache=loose),
so that a file read once is read from memory after. But every trial drops the page
cache, and each `python -m cryptbench` the tests start then reads its interpreter,
NumPy, SciPy and every module again through 9p: tens of seconds a start, in a lab
that starts dozens. This process imports what those starts import, then maps those
files whole, every page read in at once (MAP_POPULATE), and keeps them mapped, so no
drop frees them (the kernel drops no mapped page: the run's own `measure/resident.py`
keeps fio's code the same way, but only the pages already resident, since a run must
read nothing for it; here the imports race the first trials' drops, which would leave
only part of what a start reads resident to hold). No figure measured in the lab is a
speed figure.

It runs until the guest powers off; `ready`, a file in the shared directory, says
what it holds.
"""

from __future__ import annotations

import importlib
import importlib.util
import mmap
import pkgutil
import signal
import sys
from pathlib import Path


def _import_all() -> None:
    import cryptbench

    for info in pkgutil.walk_packages(cryptbench.__path__, "cryptbench."):
        if not info.name.endswith(".__main__"):  # that one runs the command line
            importlib.import_module(info.name)
    # imported inside functions, where the command line's start-up does not pay for them
    for name in ("scipy.stats", "scipy.special", "cryptography.hazmat.primitives.ciphers.aead"):
        importlib.import_module(name)


def _files() -> set[Path]:
    """Every file this process mapped (the interpreter, extension modules and their
    libraries) and every module's source and bytecode."""
    files = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            files.add(Path(fields[5]))
    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if not source:
            continue
        files.add(Path(source))
        if source.endswith(".py"):
            files.add(Path(importlib.util.cache_from_source(source)))
    return {f for f in files if f.is_file()}


def _map_whole(path: Path) -> mmap.mmap | None:
    try:
        with open(path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE, prot=mmap.PROT_READ)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return None


def main(ready: Path) -> None:
    _import_all()
    maps = [m for m in map(_map_whole, sorted(_files())) if m is not None]
    ready.write_text(f"{len(maps)} files, {sum(len(m) for m in maps) >> 20} MiB held\n")
    while True:
        signal.pause()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
