"""What someone who reads a target's backing at rest can see of its structure: the
paths and sizes of a ciphertext directory's files, the files an unencrypted ext4
image holds (through debugfs, read-only), a ZFS pool's datasets and what each shows
of its files (through zdb, read-only: zdb.py), or nothing, for an image no reader
here can open (a LUKS container, a qcow2 file).

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
from cryptbench.machine.system import which
from cryptbench.protection import extents, zdb

LUKS_MAGIC = b"LUKS\xba\xbe"  # a LUKS1 or LUKS2 header's first bytes
QCOW_MAGIC = b"QFI\xfb"  # a qcow2 file's first bytes
DEBUGFS_TIMEOUT = 120.0  # seconds for one debugfs: the listings of one level of the tree
S_IFMT, S_IFDIR = 0o170000, 0o040000  # an inode mode's type bits, and a directory's
CHUNK = 8 << 20  # bytes read at a time while searching a file
WRITE_BEHIND_MARGIN = 0.5  # seconds waited beyond a daemon's write-behind time
ECHO = re.compile(r"^debugfs: ls -l -r <(\d+)>$")  # the echo of a request, with its inode
# One entry of `ls -l -r`: [<]inode[>] mode (type) uid gid size day-Mon-year hh:mm name
ENTRY = re.compile(
    r"^[ <]\s*(\d+)[ >]\s+([0-7]+) \(\d+\)\s+\d+\s+\d+\s+(\d+) +\d+-\w+-\s*\d+ \d\d:\d\d (.*)$"
)


@dataclass(frozen=True)
class Entry:
    is_dir: bool
    size: int  # bytes, the apparent size an observer reads (0 for a directory)


@dataclass(frozen=True)
class Sight:
    """One look at a backing."""

    how: str  # "directory", "ext4 image", "ZFS pool", "LUKS container", "qcow2 image", "unreadable image"
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
    if zdb.is_pool(image):
        pool = zdb.read(image)
        if isinstance(pool, str):
            return Sight("ZFS pool", None, pool)
        return Sight("ZFS pool", {path: Entry(*seen) for path, seen in pool.items()})
    if which("debugfs") is None:
        return Sight("unreadable image", None, "debugfs (e2fsprogs) is not installed")
    entries = _debugfs_tree(image)
    if isinstance(entries, str):
        return Sight("unreadable image", None, entries)
    return Sight("ext4 image", entries)


def _debugfs_tree(image: Path) -> dict[str, Entry] | str:
    """Every entry of the image's filesystem, by `debugfs -c` (catastrophic mode: read-only,
    no journal replay, safe on a mounted filesystem), one debugfs a level of the tree: its
    directories listed by inode ("<N>"), so a ciphertext name needs no quoting. Where it
    cannot be read, why not."""
    entries: dict[str, Entry] = {}
    level = {"2": ""}  # directory inode -> its path prefix; inode 2 is the root
    while level:
        listings = _debugfs_ls(image, list(level))
        if isinstance(listings, str):
            return listings
        below: dict[str, str] = {}
        for inode, prefix in level.items():
            for child, is_dir, name, size in listings.get(inode, []):
                path = prefix + name
                entries[path] = Entry(is_dir, size)
                if is_dir:
                    below[child] = path + "/"
        level = below
    return entries


def _debugfs_ls(image: Path, inodes: list[str]) -> dict[str, list[tuple[str, bool, str, int]]] | str:
    """Each directory inode's entries: (inode, is a directory, name, size); where debugfs
    cannot list them, why not.

    `ls -l -r`, not the parseable `ls -p`: -p prints a name with printf's "%.*s", so a
    raw ciphertext name (fscrypt's, on disk) that holds a NUL byte is cut there, and two
    cut names can collide or vanish as "" (a probe's file then goes missing;
    test_protection's raw-names test shows it). The long listing escapes every byte below
    32, above 126 and the backslash as \\xNN, and -r prints an encrypted directory's
    names so instead of "<encrypted (N)>": one entry a line, its name whole."""
    script = "".join(f"ls -l -r <{i}>\n" for i in inodes).encode()
    proc = subprocess.run(
        ["debugfs", "-c", "-f", "-", str(image)],
        input=script,
        capture_output=True,
        timeout=DEBUGFS_TIMEOUT,
        check=False,
    )
    if b"Filesystem not open" in proc.stderr or b"while trying to open" in proc.stderr:
        return "no ext2/3/4 filesystem debugfs can open in it"
    if b"Usage: ls" in proc.stderr:
        # an older debugfs without `ls -r`: an empty listing would pass for hidden names
        return "this debugfs has no `ls -l -r` to list raw names (a newer e2fsprogs has)"
    out: dict[str, list[tuple[str, bool, str, int]]] = {}
    entries: list[tuple[str, bool, str, int]] = []
    for line in proc.stdout.decode("ascii", errors="backslashreplace").splitlines():
        if echo := ECHO.match(line):
            entries = out.setdefault(echo.group(1), [])
        elif m := ENTRY.match(line):
            child, mode, size, name = m.groups()
            if child == "0" or name in (".", ".."):  # 0: an empty slot
                continue
            is_dir = int(mode, 8) & S_IFMT == S_IFDIR
            # '/' is printed as itself: escaped here, so that a path's separators are the tree's
            entries.append((child, is_dir, name.replace("/", "\\x2f"), 0 if is_dir else int(size)))
    return out


def contains(path: Path, token: bytes) -> bool:
    """Whether the file holds `token` anywhere (across read boundaries too; never in a hole,
    which reads as zeros, so `token` must hold a byte other than zero)."""
    assert token.strip(b"\0")
    overlap = len(token) - 1
    # The previous chunk's last `overlap` bytes go just before the next chunk's.
    buf = bytearray(overlap + CHUNK)
    end = -1  # where the previous chunk ended in the file
    with open(path, "rb", buffering=0) as f:
        for offset, got in extents.chunks(f, memoryview(buf)[overlap:]):
            if buf.find(token, 0 if offset == end else overlap, overlap + got) >= 0:
                return True
            if got >= overlap:
                buf[:overlap] = buf[got : got + overlap]
                end = offset + got
            else:  # a chunk shorter than the token (the file's end): no boundary to carry
                end = -1
    return False
