"""A user's own FUSE-encrypted directory (gocryptfs, securefs, CryFS, EncFS), as
`run --existing` reads it: files through the mount (the plaintext) and the same files'
ciphertext in the overlay's cipher directory, so that one read of each is the layer's
cost on the user's own data. Found from any path on the mount through the stack
(measure/stack.py); nothing here opens a file for writing.

Which ciphertext is which file: gocryptfs shows each file with its ciphertext's inode
number, so a directory on the mount and its files are paired with theirs by inode.
Overlays that do not (securefs, CryFS's blocks, EncFS) are read as whole trees: the mount
against its whole cipher directory, which is then the only directory that can be asked."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from cryptbench.backends.base import Helper
from cryptbench.model.errors import UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack

# entries a tree walk visits before it stops: a home directory of millions of files is
# sampled from its first this many, not walked for minutes before the first trial
WALK_LIMIT = 200_000
PAIR_WALK = 2_000  # entries walked to find the files whose inodes show the overlay pairs them


@dataclass(frozen=True)
class FilePair:
    """One of the user's files: where it is read through the mount and where its
    ciphertext is (None where the overlay pairs no file with its ciphertext)."""

    plain: Path
    cipher: Path | None
    plain_bytes: int  # bytes: its size through the mount
    cipher_bytes: int  # bytes: its ciphertext's size (0 where not paired)


@dataclass(frozen=True)
class Tree:
    """The regular files under a directory: a list of (path, bytes), and whether the walk
    stopped at WALK_LIMIT before it saw them all."""

    files: tuple[tuple[Path, int], ...]
    cut: bool
    inodes: tuple[int, ...] = ()  # each file's inode number, as the walk read it, in order

    @property
    def bytes(self) -> int:
        return sum(n for _, n in self.files)


@dataclass(frozen=True)
class FuseVolume:
    """A FUSE overlay's mount and its cipher directory, and the directory on it read."""

    overlay: str  # the overlay's name as its mount shows it: "gocryptfs", "securefs"
    mountpoint: Path
    cipher_dir: Path  # the overlay's backing directory: its ciphertext
    root: Path  # the directory on the mount whose files are read (the path asked, or its directory)
    cipher_root: Path  # where `root`'s files' ciphertext is: its paired directory, or cipher_dir
    paired: bool  # True: files paired with their ciphertext by inode; False: whole trees
    layer: Layer  # the FUSE layer as the stack reads it
    stack: Stack  # every layer under the path asked, the overlay first
    helpers: tuple[Helper, ...] = ()  # the overlay's daemon: its CPU is the layer's

    def to_json(self) -> dict[str, object]:
        """What a run stores of it: the overlay, its mount and cipher directory, never a file."""
        return {
            "kind": "fuse",
            "overlay": self.overlay,
            "mountpoint": str(self.mountpoint),
            "cipher_dir": str(self.cipher_dir),
            "paired": self.paired,
            "stack": self.stack.to_json(),
        }


def fuse_layer(stack: Stack) -> Layer | None:
    """The topmost FUSE overlay under a path that encrypts; None where there is none."""
    return next((x for x in stack.layers if x.kind == LayerKind.FUSE and x.encrypted), None)


def fuse_volume(where: Path, stack: Stack) -> FuseVolume:
    """The FUSE-encrypted directory `where` is in (stack: the stack under it), its cipher
    directory and how its files are paired with their ciphertext. Refused in one line:
    an overlay whose backing directory the stack did not find, a subdirectory of an
    overlay that pairs no file by inode, a cipher directory this user may not read."""
    layer = fuse_layer(stack)
    assert layer is not None
    mountpoint = Path(layer.detail("mountpoint") or "/")
    cipher = layer.detail("cipher directory")
    if cipher is None:
        raise UsageError(
            f"--existing {where}: {layer.name}'s cipher directory was not found (neither its mount's "
            "source nor its daemon's arguments name one), so its ciphertext cannot be read beside it"
        )
    cipher_dir = Path(cipher)
    root = where.resolve()
    if not root.is_dir():
        root = root.parent
    for d in (root, cipher_dir):
        if not os.access(d, os.R_OK | os.X_OK):
            raise UsageError(f"--existing {where}: {d} cannot be read by this user (permission denied)")
    paired_root = _paired_dir(mountpoint, root, cipher_dir)
    if paired_root is None and root != mountpoint:
        raise UsageError(
            f"--existing {where}: {layer.name} does not show which ciphertext is which file, so only "
            f"its whole mount is read against its whole cipher directory: give {mountpoint}"
        )
    return FuseVolume(
        overlay=layer.name,
        mountpoint=mountpoint,
        cipher_dir=cipher_dir,
        root=root,
        cipher_root=paired_root or cipher_dir,
        paired=paired_root is not None,
        layer=layer,
        stack=stack,
        helpers=daemons(mountpoint, layer.name),
    )


def _paired_dir(mountpoint: Path, root: Path, cipher_dir: Path) -> Path | None:
    """The directory in `cipher_dir` that holds `root`'s ciphertext, found by inode one
    level at a time from the mount down; None where the overlay does not pass inodes
    through (a directory, or a sample of files, with no ciphertext of the same inode)."""
    here, cipher = mountpoint, cipher_dir
    for part in root.relative_to(mountpoint).parts:
        here = here / part
        ino = os.stat(here).st_ino
        found = next(
            (e for e in _entries(cipher) if e.is_dir(follow_symlinks=False) and e.inode() == ino), None
        )
        if found is None:
            return None
        cipher = Path(found.path)
    # the files themselves: the first few under `root` must each have a ciphertext of
    # theirs under the directory found (a directory's inode alone could be chance)
    sample = walk(root, PAIR_WALK).inodes[:16]
    if not sample:
        return None
    inodes = set(walk(cipher, 2 * PAIR_WALK).inodes)
    return cipher if all(i in inodes for i in sample) else None


def _entries(d: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(d) as it:
            return list(it)
    except OSError:
        return []


def walk(top: Path, limit: int = WALK_LIMIT) -> Tree:
    """The regular files under `top`, not following symbolic links nor leaving its
    filesystem, in a fixed order (sorted names), at most `limit` entries visited."""
    files: list[tuple[Path, int]] = []
    inodes: list[int] = []
    seen = 0
    device = os.stat(top).st_dev
    for entry in _walk(top, device):
        seen += 1
        if seen > limit:
            return Tree(tuple(files), True, tuple(inodes))
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            files.append((Path(entry.path), st.st_size))
            inodes.append(st.st_ino)
    return Tree(tuple(files), False, tuple(inodes))


def _walk(top: Path, device: int) -> Iterator[os.DirEntry[str]]:
    for e in sorted(_entries(top), key=lambda e: e.name):
        if e.is_dir(follow_symlinks=False):
            try:
                if e.stat(follow_symlinks=False).st_dev != device:
                    continue  # another filesystem mounted inside: not this overlay's
            except OSError:
                continue
            yield from _walk(Path(e.path), device)
        else:
            yield e


def pairs(volume: FuseVolume, plain: Tree, cipher: Tree) -> list[FilePair]:
    """Every non-empty file under `volume.root`, with its ciphertext where paired by inode."""
    by_inode = dict(zip(cipher.inodes, cipher.files, strict=True)) if volume.paired else {}
    out = []
    for (path, size), ino in zip(plain.files, plain.inodes, strict=True):
        if size <= 0:
            continue
        match = by_inode.get(ino) if volume.paired else None
        if volume.paired and match is None:
            continue  # made since the walk, or not a file of this overlay's
        out.append(FilePair(path, match[0] if match else None, size, match[1] if match else 0))
    return out


def daemons(mountpoint: Path, overlay: str) -> tuple[Helper, ...]:
    """The overlay's daemon (the process whose arguments name the mountpoint and whose name
    is the overlay's): its CPU time is the layer's. Empty where none is found."""
    found = []
    for proc in psutil.process_iter(["cmdline", "name", "create_time"]):
        args = proc.info.get("cmdline") or []
        if str(mountpoint) in args and overlay in (proc.info.get("name") or ""):
            found.append(Helper(overlay, proc.pid, proc.info["create_time"]))
    return tuple(found)
