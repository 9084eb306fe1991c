"""Page cache control: flush and drop before a trial, and prove it worked.

A read that is served from the page cache measures memory, not the disk, and a
write that ends in the page cache measures nothing durable. Before every trial
we write back dirty data (`sync`) and drop clean pages; afterwards we count,
with util-linux `fincore` (mincore(2)), how much of the data file and of its
backing files is still resident, and store that figure with the trial.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path

from cryptbench.backends.base import Target
from cryptbench.machine.system import is_root, which


class DropMethod(StrEnum):
    DROP_CACHES = "drop_caches"  # sync; echo 3 > /proc/sys/vm/drop_caches (root)
    FADVISE = "fadvise"  # sync; posix_fadvise(DONTNEED) on the files we know (any user)


def drop_method() -> DropMethod:
    return DropMethod.DROP_CACHES if is_root() else DropMethod.FADVISE


def drop_caches(files: Iterable[Path]) -> DropMethod:
    """Write back dirty pages, then drop clean ones. Dirty pages cannot be dropped,
    so the sync must come first."""
    if is_root():
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return DropMethod.DROP_CACHES
    return drop_files(files)


def drop_files(files: Iterable[Path]) -> DropMethod:
    """Write back dirty pages, then drop the clean pages of `files` alone (posix_fadvise):
    what any user may do, and what touches nothing of anyone else's."""
    os.sync()
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return DropMethod.FADVISE


def make_cold(target: Target, files: Iterable[Path]) -> str:
    """Every cache a read of `target` could be served from, emptied: the layer's own first
    (Target.empty_cache: ZFS's ARC), then the page cache (of `files`, its
    backends.base.cache_files, where not root). Returns how, for the trial's record."""
    own = target.empty_cache() if target.empty_cache is not None else None
    method = drop_caches(files)
    return f"{own}, then {method}" if own else str(method)


def resident_bytes(files: Iterable[Path]) -> int:
    """Bytes of these files that are in the page cache now (fincore)."""
    names = [str(p) for p in files if p.is_file()]
    if not names:
        return 0
    exe = which("fincore")
    if exe is None:
        raise RuntimeError("fincore (util-linux) is not installed")
    total = 0
    # Batches keep the argument list short for a directory of many files.
    for i in range(0, len(names), 256):
        out = subprocess.run(
            [exe, "--json", "--bytes", "--output", "RES,FILE", *names[i : i + 256]],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.stdout.strip():
            total += sum(int(row["res"]) for row in json.loads(out.stdout)["fincore"])
    return total
