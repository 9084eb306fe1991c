"""What a target costs in space, and how much of its backing one byte's change rewrites.

Space: two data sets are written through the view, one after the other, each in a
directory of its own that is removed after it is measured:

- a tree of small files, the source-tree workload's spread (log-normal sizes, a few
  dozen files per directory): what a source tree or a home directory costs;
- one large file of random bytes.

What each adds to the backing is counted as `du` counts it, in allocated blocks: of
the ciphertext directory (a FUSE target, plain), or of the filesystem inside an image
(its statvfs, which neither a sparse image's reused blocks nor its never-touched ones
can blur). The backing's fixed cost, which no data set changes (a LUKS header, an empty
filesystem, a config file), is its allocated bytes before. The pipeline divides each
figure by its baseline's (pipeline/verify.py).

Change granularity: one byte in the middle of the large file is changed, and the backing's
4 KiB blocks that changed are counted (blocks.py): what a sync client or an incremental
backup of the backing must send for it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path

from cryptbench.backends.base import Target
from cryptbench.engines.apps.base import durable
from cryptbench.engines.apps.data import incompressible, lognormal_sizes, text
from cryptbench.engines.apps.source_tree import FILES_PER_DIR, LARGEST, MEDIAN_FILE, SIGMA, SMALLEST
from cryptbench.model.json_types import JsonObject
from cryptbench.protection import blocks
from cryptbench.protection.blocks import Blocks
from cryptbench.protection.sight import is_image

TREE_BYTES = 2 << 20  # bytes of the small-file tree's contents
LARGE_BYTES = 8 << 20  # bytes of the large file
SEED = 35  # the data sets are the same on every target and in every run
MARGIN = 4 << 20  # bytes of free space left on the target beyond a data set's


def allocated(paths: tuple[Path, ...]) -> int:
    """Bytes allocated to these files and directories, and everything under them (`du`)."""
    total = 0
    for p in paths:
        total += os.lstat(p).st_blocks * 512
        if p.is_dir():
            for folder, dirs, files in os.walk(p):
                for name in dirs + files:
                    try:
                        total += os.lstat(os.path.join(folder, name)).st_blocks * 512
                    except FileNotFoundError:
                        continue  # a daemon's temporary file, gone meanwhile
    return total


def used(target: Target) -> int:
    """Bytes the data on the target takes where it is allocated: the filesystem inside an
    image (statvfs), or the backing directory (du)."""
    if is_image(target):
        st = os.statvfs(target.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize
    return allocated(target.backing)


def _fits(target: Target, need: int) -> bool:
    st = os.statvfs(target.path)
    return st.f_bavail * st.f_frsize >= need + MARGIN


def _write(path: Path, data: bytes, fsync: bool) -> None:
    with open(path, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())


# The data sets are made once a run, not once a target: they are the same bytes every time.
@cache
def tree_contents() -> tuple[bytes, ...]:
    """The small-file tree's files' contents, in order."""
    sizes = lognormal_sizes(SEED, TREE_BYTES, MEDIAN_FILE, SIGMA, SMALLEST, LARGEST)
    return tuple(text(SEED, size, "space", i) for i, size in enumerate(sizes))


@cache
def large_contents() -> bytes:
    return incompressible(SEED, LARGE_BYTES, "space-large")


def write_tree(root: Path, fsync: bool) -> tuple[int, int]:
    """The small-file tree; returns (files, bytes of contents)."""
    contents = tree_contents()
    folder = root
    root.mkdir()
    for i, data in enumerate(contents):
        if i % FILES_PER_DIR == 0:
            folder = root / f"d{i // FILES_PER_DIR}"
            folder.mkdir()
        _write(folder / f"f{i}.c", data, fsync)
    return len(contents), sum(map(len, contents))


def measure(
    target: Target,
    folder: Path,
    settled: Callable[[Blocks | None], Blocks],
    complete: Callable[[], None],
    fixed: int,
) -> JsonObject:
    """The space of both data sets and the change granularity, measured in `folder`
    (the caller removes it). A data set that does not fit is left out, with the reason.
    `settled(before)` digests the backing once it differs from `before` (None: once
    complete); `complete()` waits until every write so far is in the backing."""

    def count() -> int:
        complete()
        return used(target)

    out: JsonObject = {"fixed": fixed}
    out["counted"] = "filesystem" if is_image(target) else "du"
    # A FUSE daemon that keeps blocks in its own memory (CryFS) writes them out on fsync,
    # which sync() does not reach; a target without a daemon needs only the sync.
    fsync = bool(target.helpers)
    if not _fits(target, TREE_BYTES * 3):
        out["tree"] = {"skipped": "not enough free space on the target for the small-file tree"}
    else:
        before = count()
        files, data = write_tree(folder / "tree", fsync)
        out["tree"] = {"files": files, "data": data, "used": count() - before}
        shutil.rmtree(folder / "tree")
        durable()
    if not _fits(target, LARGE_BYTES * 2):
        out["large"] = {"skipped": "not enough free space on the target for the large file"}
        return out
    before = count()
    large = folder / "large"
    _write(large, large_contents(), fsync)
    out["large"] = {"files": 1, "data": LARGE_BYTES, "used": count() - before}
    if target.writes_from_start:
        out["granularity"] = {"skipped": "it writes a file only from its start: no byte changes alone"}
    else:  # after a count(): complete
        out["granularity"] = granularity(target.backing, large, settled, complete)
    return out


def granularity(
    backing: tuple[Path, ...],
    large: Path,
    settled: Callable[[Blocks | None], Blocks],
    complete: Callable[[], None],
) -> JsonObject:
    """The backing's 4 KiB blocks (and files) that changed when one byte in the middle of
    the large file did. The backing is complete when it is called (a count() just waited)."""
    before = blocks.digest(backing)
    blocks.flip_byte(large, LARGE_BYTES // 2)
    settled(before)  # the change has begun to reach the backing
    complete()  # and all of it has
    runs = blocks.changed(before, blocks.digest(backing))
    changed = sum(r.count for r in runs)
    files = len({r.path for r in runs})
    return {
        "bytes": changed * blocks.BLOCK,
        "blocks": changed,
        "files": files,
        "of": sum(len(c) for c in before.crcs.values()),
    }
