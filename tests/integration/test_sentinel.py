"""A whole run writes nothing outside its scratch directory.

A sentinel tree (files, a directory, symbolic links, one pointing into where
the scratch space will be) is laid next to the scratch root and in the parent
of the target; after a full suite on every available backend each entry must
be byte-for-byte, mode-for-mode and mtime-for-mtime what it was.
"""

# Over 60 s of make test (114 s in the fresh-clone run of fee2b51, 2026-11-27): one run
# of every backend available here, every phase included, with a sentinel tree checked
# byte for byte before and after.
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.suites import READ_AND_WRITE
from tests.support.targets import available, includes

pytestmark = pytest.mark.integration

ALL = ",".join(available(list(REGISTRY)))
test_includes = includes(list(REGISTRY))


def _lay_sentinels(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "thesis.tex").write_bytes(os.urandom(100_000))
    (root / "notes.txt").write_text("precious\n")
    (root / "empty").write_bytes(b"")
    (root / "ro.bin").write_bytes(os.urandom(4096))
    (root / "ro.bin").chmod(0o400)
    (root / "link-to-notes").symlink_to("notes.txt")
    (root / "link-into-scratch").symlink_to("cryptbench/run")  # dangling until a run exists


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under root except `skip`: type, mode, size, mtime and content hash."""
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != skip]
        for name in [*dirnames, *filenames]:
            p = here / name
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                digest: object = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                digest = None
            out[str(p.relative_to(root))] = (
                stat.S_IFMT(st.st_mode),
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                digest,
            )
    return out


# READ_AND_WRITE: the quick suite's other four workloads write nowhere else, and cost
# make test over a minute here.
def test_a_whole_run_changes_nothing_outside_scratch(target_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "sentinel.toml"
    suite.write_text(READ_AND_WRITE)
    _lay_sentinels(target_dir)
    scratch = target_dir / "cryptbench"
    before = _snapshot(target_dir, scratch)
    sizes = sum(v[2] for v in before.values() if v[0] == stat.S_IFREG)  # type: ignore[misc]
    proc = cli(
        "run",
        "--backends",
        ALL,
        "--suite",
        str(suite),
        "--size",
        "4M",
        "--repeats",
        "1",
        "--target",
        str(target_dir),
        "--db",
        str(tmp_path / "r.sqlite"),
    )
    assert proc.returncode == 0, proc.stderr
    after = _snapshot(target_dir, scratch)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    # Bytes of every entry that differs in any way (content, mode, time, presence).
    changed_bytes = sum(
        max(int(before.get(k, (0, 0, 0))[2]), int(after.get(k, (0, 0, 0))[2])) for k in changed
    )  # type: ignore[call-overload]
    count("sentinel bytes checked outside scratch", int(sizes))
    count("bytes outside scratch changed", changed_bytes)
    assert changed == []
    assert leftovers(target_dir) == []
