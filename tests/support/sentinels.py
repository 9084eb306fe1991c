"""A sentinel tree laid beside a run's scratch space, and its snapshot: what a whole run
must leave byte-for-byte, mode-for-mode and mtime-for-mtime as it was."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

# per entry: type, mode, size (bytes), mtime (ns), and a content hash or a link's target
Snapshot = dict[str, tuple[int, int, int, int, str | None]]


def lay(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "thesis.tex").write_bytes(os.urandom(100_000))
    (root / "notes.txt").write_text("precious\n")
    (root / "empty").write_bytes(b"")
    (root / "ro.bin").write_bytes(os.urandom(4096))
    (root / "ro.bin").chmod(0o400)
    (root / "link-to-notes").symlink_to("notes.txt")
    (root / "link-into-scratch").symlink_to("cryptbench/run")  # dangling until a run exists


def snapshot(root: Path, skip: Path) -> Snapshot:
    """Every entry under root except `skip`: type, mode, size, mtime and content hash."""
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != skip]
        for name in [*dirnames, *filenames]:
            p = here / name
            st = p.lstat()
            digest: str | None
            if stat.S_ISLNK(st.st_mode):
                digest = os.readlink(p)
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
