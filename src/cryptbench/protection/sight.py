"""What someone who reads a target's backing at rest can see of its structure: the
paths and sizes of a ciphertext directory's files, the files an unencrypted ext4
image holds (through debugfs, read-only), or nothing, for an image no reader here
can open (a LUKS container, a qcow2 file).

The probes compare two sights, before and after they write through the target, so
only the difference matters: what was there before (data files, lost+found) is
never attributed to a probe.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.base import Target
from cryptbench.system import which

LUKS_MAGIC = b"LUKS\xba\xbe"  # a LUKS1 or LUKS2 header's first bytes
QCOW_MAGIC = b"QFI\xfb"  # a qcow2 file's first bytes
DEBUGFS_TIMEOUT = 120.0  # seconds for one debugfs: the listings of one level of the tree
DIR_MODE = "04"  # debugfs prints modes in octal: a directory's starts 040
CHUNK = 8 << 20  # bytes read at a time while searching a file
WRITE_BEHIND_MARGIN = 0.5  # seconds waited beyond a daemon's write-behind time
ECHO = re.compile(rb"(?:^|\n)debugfs: ls -p <")  # the echo of a request, up to its inode
ENTRY = re.compile(rb"\n/(\d+)/([0-7]{5,6})/\d+/\d+/(.*?)/(\d*)/(?=\n|$)", re.DOTALL)


@dataclass(frozen=True)
class Entry:
    is_dir: bool
    size: int  # bytes, the apparent size an observer reads (0 for a directory)


@dataclass(frozen=True)
class Sight:
    """One look at a backing."""

    how: str  # "directory", "ext4 image", "LUKS container", "qcow2 image", "unreadable image"
    entries: dict[str, Entry] | None  # by '/'-separated path; None: no structure can be read
    reason: str = ""  # why there is none, in words

    @property
    def readable(self) -> bool:
        return self.entries is not None


def is_image(target: Target) -> bool:
    """Its backing is one image file (a loop image, a LUKS container, a qcow2 file), not a
    ciphertext directory."""
    return len(target.backing) == 1 and target.backing[0].is_file()


def wait_write_behind(target: Target) -> None:
    """Until every block its daemon still holds in its own memory has reached the backing
    (Target.write_behind, and a margin); at once for a target without such a daemon."""
    if target.write_behind:
        time.sleep(target.write_behind + WRITE_BEHIND_MARGIN)


def look(backing: tuple[Path, ...]) -> Sight:
    """The structure visible in a target's backing (one directory or one image file)."""
    if len(backing) == 1 and backing[0].is_dir():
        return Sight("directory", _walk(backing[0]))
    if len(backing) == 1 and backing[0].is_file():
        return _image(backing[0])
    return Sight("unreadable image", None, f"a backing of {len(backing)} paths")


def _walk(root: Path) -> dict[str, Entry]:
    entries = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel + "/"
        for d in dirs:
            entries[prefix + d] = Entry(True, 0)
        for f in files:
            try:
                st = os.lstat(os.path.join(folder, f))
            except FileNotFoundError:
                continue  # removed meanwhile (a daemon's temporary file)
            entries[prefix + f] = Entry(False, st.st_size)
    return entries


def _image(image: Path) -> Sight:
    with open(image, "rb") as f:
        head = f.read(8)
    if head.startswith(LUKS_MAGIC):
        return Sight("LUKS container", None, "a LUKS header, then ciphertext: no filesystem to read")
    if head.startswith(QCOW_MAGIC):
        return Sight("qcow2 image", None, "a qcow2 file: no reader for its clusters here")
    if which("debugfs") is None:
        return Sight("unreadable image", None, "debugfs (e2fsprogs) is not installed")
    entries = _debugfs_tree(image)
    if entries is None:
        return Sight("unreadable image", None, "no ext2/3/4 filesystem debugfs can open in it")
    return Sight("ext4 image", entries)


def _debugfs_tree(image: Path) -> dict[str, Entry] | None:
    """Every entry of the image's filesystem, by `debugfs -c` (catastrophic mode: read-only,
    no journal replay, safe on a mounted filesystem), one debugfs a level of the tree: its
    directories listed by inode ("<N>"), so a ciphertext name needs no quoting. None if it
    cannot open the image."""
    entries: dict[str, Entry] = {}
    level = {"2": ""}  # directory inode -> its path prefix; inode 2 is the root
    while level:
        listings = _debugfs_ls(image, list(level))
        if listings is None:
            return None
        below: dict[str, str] = {}
        for inode, prefix in level.items():
            for child, is_dir, name, size in listings.get(inode, []):
                path = prefix + name
                entries[path] = Entry(is_dir, size)
                if is_dir:
                    below[child] = path + "/"
        level = below
    return entries


def _debugfs_ls(image: Path, inodes: list[str]) -> dict[str, list[tuple[str, bool, str, int]]] | None:
    """Each directory inode's entries: (inode, is a directory, name, size)."""
    script = "".join(f"ls -p <{i}>\n" for i in inodes).encode()
    proc = subprocess.run(
        ["debugfs", "-c", "-f", "-", str(image)],
        input=script,
        capture_output=True,
        timeout=DEBUGFS_TIMEOUT,
        check=False,
    )
    if b"Filesystem not open" in proc.stderr or b"while trying to open" in proc.stderr:
        return None
    out: dict[str, list[tuple[str, bool, str, int]]] = {}
    # debugfs echoes each request before its answer; an answer's entries are
    # /inode/mode/uid/gid/name/size/ on a line, but a ciphertext name may hold '/' and
    # newline bytes, so each is matched whole, the name as little as ends at /size/
    for block in ECHO.split(proc.stdout)[1:]:
        inode, _, body = block.partition(b">")
        entries = out.setdefault(inode.decode(), [])
        for m in ENTRY.finditer(body):
            child, mode, raw_name, size = m.group(1), m.group(2), m.group(3), m.group(4)
            # a raw ciphertext name (fscrypt's, on disk) may hold '/': escaped, so that a
            # path's separators are the tree's
            name = raw_name.decode(errors="backslashreplace").replace("/", "\\x2f")
            if name in ("", ".", "..") or child in (b"", b"0"):  # "": a deleted entry's slot
                continue
            is_dir = mode.decode().startswith(DIR_MODE)
            entries.append((child.decode(), is_dir, name, int(size) if size else 0))
    return out


def contains(path: Path, token: bytes) -> bool:
    """Whether the file holds `token` anywhere (across read boundaries too)."""
    overlap = len(token) - 1
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            if token in tail + chunk:
                return True
            tail = chunk[-overlap:]
    return False
