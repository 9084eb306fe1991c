"""The probes of names, sizes, tree and tampering (tamper.py), and the space measure
(space.py): each writes through a target's decrypted view,
makes it durable, and looks at the backing (sight.py) as someone who reads it at rest.

They run at provisioning, outside every clock, in a directory of their own on the
target, which they remove. What a probe decides:

- names: a random name, given to a file and to a directory, is searched among the
  backing's names and, for an image, in its bytes;
- sizes: files of SIZES bytes are written one at a time, and the backing files each
  one added are found by difference: one new backing file per plaintext file whose
  sizes tell 4095, 4096 and 4097 bytes apart shows sizes exactly; equal sizes for some
  show them to a block; several new files, or files all of one size, hide them;
- tree: a directory holding a directory holding three files is written; the backing
  shows the tree when it gained two directories, one inside the other, the inner one
  holding three new files.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from cryptbench.backends.base import Target
from cryptbench.engines.apps.base import durable
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import FITHAW
from cryptbench.machine.session import Session
from cryptbench.model.vocabulary import Property, Verdict
from cryptbench.protection import blocks
from cryptbench.protection.blocks import Blocks
from cryptbench.protection.findings import PropertyFinding, Protection
from cryptbench.protection.sight import (
    LUKS_MAGIC,
    QCOW_MAGIC,
    Entry,
    Sight,
    contains,
    look,
    wait_write_behind,
)
from cryptbench.protection.space import allocated, measure
from cryptbench.protection.tamper import probe_tamper

SIZES = (1, 4095, 4096, 4097, 100_000)  # bytes of the sizes probe's files
PROBE_PREFIX = ".cryptbench-protection-"
TREE_FILES = 3  # files in the tree probe's inner directory
FLUSH_WAIT = 5.0  # seconds a look waits for the backing to show a write (a daemon's cache)
T = TypeVar("T")


def _write(path: Path, data: bytes) -> None:
    """A file written and fsynced, and its directory too: a FUSE daemon that caches in its
    own memory (CryFS) writes to its backing on fsync, which sync() does not reach."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    _fsync_dir(path.parent)


def _mkdir(path: Path) -> None:
    path.mkdir()
    _fsync_dir(path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:
        pass  # a FUSE filesystem may not implement fsyncdir: the sync() after still runs
    finally:
        os.close(fd)


def _settled(target: Target, complete: bool = False) -> None:
    """Everything written so far on the backing, where someone reading it at rest would
    see it: synced, then the layer's own end of a write (Target.end_write: ZFS's zpool
    sync, since zdb reads the last transaction group on disk), and for an ext4 filesystem
    on an image, its journal written back in place (a freeze and thaw checkpoints it),
    since debugfs reads without replaying it. `complete`: also every block a daemon still
    held (Target.write_behind, and a margin)."""
    durable()
    if target.end_write is not None:  # the layer's own commit (ZFS: its transaction group)
        target.end_write()
    if complete and target.write_behind:
        wait_write_behind(target)
        durable()
    if any(p.is_file() and _readable_image(p) for p in target.backing):
        mount = _mountpoint(target.path)
        if mount is not None:
            checkpoint(mount)


def _readable_image(image: Path) -> bool:
    """Not a container whose inside no reader here sees (LUKS, qcow2): no checkpoint needed."""
    with open(image, "rb") as f:
        head = f.read(8)
    return not (head.startswith(LUKS_MAGIC) or head.startswith(QCOW_MAGIC))


def _mountpoint(path: Path) -> Path | None:
    p = path
    while not os.path.ismount(p):
        if p.parent == p:
            return None
        p = p.parent
    return p


FIFREEZE = 0xC0045877  # _IOWR('X', 119, int); its thaw is resources.FITHAW


def checkpoint(mount: Path) -> None:
    """Freeze and thaw a filesystem we mounted (ext4 writes its journal back in place on
    freeze). Signals are held between the two; a SIGSTOP or SIGKILL between them, which
    nothing can hold, leaves it frozen until its Mount's release thaws it (resources.thaw)."""
    fd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with signals_blocked():
            try:
                fcntl.ioctl(fd, FIFREEZE, 0)
            except OSError:
                return  # the filesystem cannot freeze: the sight is as sync() left it
            fcntl.ioctl(fd, FITHAW, 0)
    finally:
        os.close(fd)


def until_changed(target: Target, look: Callable[[], T], before: T | None, wait: bool = True) -> T:
    """`look` at the backing once it is settled and differs from `before`: a daemon that
    keeps blocks in its own memory (CryFS) is given FLUSH_WAIT to write some out (none
    when not `wait`). With `before` None, the backing once every write has reached it
    (Target.write_behind). When nothing changes in time, the last look."""
    if before is None:
        _settled(target, complete=True)
        return look()
    deadline = time.monotonic() + (FLUSH_WAIT if wait else 0.0)
    _settled(target)
    now = look()
    while now == before and time.monotonic() < deadline:
        time.sleep(0.25)
        _settled(target)
        now = look()
    return now


def settled_sight(target: Target, before: Sight | None) -> Sight:
    """The backing's structure once a write has reached it. A backing whose structure
    cannot be read (a LUKS or qcow2 container) looks the same after any write, so it is
    looked at once, settled, instead of being given FLUSH_WAIT to change."""
    return until_changed(target, lambda: look(target.backing), before, wait=before is None or before.readable)


def probe(session: Session, target: Target, seen: Callable[[], Sight] | None = None) -> Protection:
    """Names, sizes, tree and tampering of one target, probed, and its space measured;
    `seen` looks at its backing (tests give their own)."""

    last: list[Sight] = []

    def look_settled() -> Sight:
        sight = settled_sight(target, last[-1] if last else None)
        last.append(sight)
        return sight

    def digest_settled(before: Blocks | None) -> Blocks:
        return until_changed(target, lambda: blocks.digest(target.backing), before)

    see = seen or look_settled
    folder = session.check_inside(target.path / f"{PROBE_PREFIX}{secrets.token_hex(6)}")
    before = see()
    fixed = allocated(target.backing)  # before any probe writes: a header, an empty filesystem
    try:
        _mkdir(folder)
        names, sight = _names(folder, target, see)
        sizes, sight = _sizes(folder, see, sight)
        findings = {Property.NAMES: names, Property.SIZES: sizes, Property.TREE: _tree(folder, see, sight)}
        findings[Property.TAMPER] = probe_tamper(session, folder, target, _write, digest_settled)
        measured = measure(target, folder, digest_settled, lambda: _settled(target, complete=True), fixed)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        durable()
    return Protection(findings, before.how, space=measured)


def _new(before: Sight, after: Sight) -> dict[str, Entry]:
    """Entries the backing gained, or whose size changed (a file rewritten in place)."""
    assert before.entries is not None and after.entries is not None
    return {p: e for p, e in after.entries.items() if before.entries.get(p) != e}


def _unread(sight: Sight) -> PropertyFinding:
    verdict = Verdict.HIDDEN if sight.how == "LUKS container" else Verdict.UNKNOWN
    return PropertyFinding(verdict, f"{sight.how}: {sight.reason}")


def _names(folder: Path, target: Target, see: Callable[[], Sight]) -> tuple[PropertyFinding, Sight]:
    token = f"cbname{secrets.token_hex(10)}"
    _write(folder / token, b"x")
    _mkdir(folder / f"{token}d")
    sight = see()
    return _named(sight, target, token), sight


def _named(sight: Sight, target: Target, token: str) -> PropertyFinding:
    if sight.how == "LUKS container":
        # Its names lie in its ciphertext with the contents, which the proof of encryption
        # has already searched for plaintext; a second pass over the image finds nothing new.
        return PropertyFinding(
            Verdict.HIDDEN, f"{sight.how}: the names are in its ciphertext, with the contents"
        )
    if sight.entries is not None:
        named = sorted(p for p in sight.entries if token in p)
        if named:
            return PropertyFinding(Verdict.SHOWN, f"the name appears in the backing's names: {named[0]}")
    images = [p for p in target.backing if p.is_file()]
    found = [p for p in images if contains(p, token.encode())]
    if found:
        return PropertyFinding(Verdict.SHOWN, f"the name appears in the bytes of {found[0].name}")
    if sight.entries is None:
        return PropertyFinding(
            Verdict.HIDDEN, f"{sight.how}: the name is nowhere in its bytes ({sight.reason})"
        )
    where = "names or bytes" if images else "names"
    return PropertyFinding(
        Verdict.HIDDEN, f"the name is in none of the backing's {where} ({len(sight.entries)} entries)"
    )


def _sizes(folder: Path, see: Callable[[], Sight], sight: Sight) -> tuple[PropertyFinding, Sight]:
    mapping: dict[int, list[int]] = {}  # plaintext bytes -> sizes of the backing files it added
    if sight.entries is None:
        return _unread(sight), sight
    for i, size in enumerate(SIZES):
        _write(folder / f"s{i}", secrets.token_bytes(size))
        after = see()
        mapping[size] = sorted(e.size for e in _new(sight, after).values() if not e.is_dir)
        sight = after
    return decide_sizes(mapping), sight


def _exact_offset(mapping: dict[int, list[int]]) -> int | None:
    """The fixed number of bytes c (0 or more) such that every file added a backing file
    of exactly its own size plus c; None if there is none."""
    if not mapping or not all(mapping.values()):
        return None
    first, candidates = next(iter(mapping.items()))
    for c in sorted({b - first for b in candidates if b >= first}):
        if all(p + c in v for p, v in mapping.items()):
            return c
    return None


def decide_sizes(mapping: dict[int, list[int]]) -> PropertyFinding:
    """From the backing files each plaintext size added (or changed), what an observer
    learns of the sizes: exactly, to a block, or nothing."""
    one_each = all(len(v) == 1 for v in mapping.values())
    shown = ", ".join(f"{p}→{'+'.join(str(b) for b in v) or 'none'}" for p, v in mapping.items())
    detail = {"mapping": {str(p): v for p, v in mapping.items()}}
    if not one_each and (offset := _exact_offset(mapping)) is not None:
        # e.g. securefs's full format: a data file as long as the file (or longer by a fixed
        # header), beside a meta file of its own; the data file gives the size away.
        return PropertyFinding(
            Verdict.SHOWN,
            f"one of each file's backing files is its size plus {offset} bytes: {shown}",
            {**detail, "offset": offset},
        )
    if not one_each:
        sizes = {b for v in mapping.values() for b in v}
        why = f"all {sizes.pop()} bytes (fixed-size blocks)" if len(sizes) == 1 else "no one file per file"
        return PropertyFinding(Verdict.HIDDEN, f"no backing file of each file's own: {why}; {shown}", detail)
    backing = [v[0] for v in mapping.values()]
    plain = list(mapping)
    if len(set(backing)) == len(backing) and backing == sorted(backing):
        return PropertyFinding(
            Verdict.SHOWN, f"a backing file per file, its size a function of it: {shown}", detail
        )
    if len(set(backing)) == 1:
        return PropertyFinding(
            Verdict.HIDDEN, f"every file's backing file has {backing[0]} bytes: {shown}", detail
        )
    steps = sorted({b - a for a, b in zip(sorted(set(backing)), sorted(set(backing))[1:], strict=False)})
    block = steps[0] if steps else 0
    order_kept = all(
        backing[i] <= backing[j] for i in range(len(plain)) for j in range(len(plain)) if plain[i] < plain[j]
    )
    if not order_kept:
        return PropertyFinding(
            Verdict.HIDDEN, f"backing sizes do not follow the files' sizes: {shown}", detail
        )
    return PropertyFinding(
        Verdict.BLOCK,
        f"a backing file per file, its size rounded to {block}-byte blocks: {shown}",
        {**detail, "block": block},
    )


def _tree(folder: Path, see: Callable[[], Sight], sight: Sight) -> PropertyFinding:
    if sight.entries is None:
        return _unread(sight)
    inner = folder / "t" / "u"
    _mkdir(inner.parent)
    _mkdir(inner)
    for i in range(TREE_FILES):
        _write(inner / f"f{i}", b"tree")
    new = _new(sight, see())
    dirs = [p for p, e in new.items() if e.is_dir]
    files = [p for p, e in new.items() if not e.is_dir]
    for d in dirs:
        held = [f for f in files if f.rpartition("/")[0] == d]
        outer = d.rpartition("/")[0]
        if len(held) >= TREE_FILES and outer in dirs:
            return PropertyFinding(
                Verdict.SHOWN,
                f"a new directory inside a new directory holds the {TREE_FILES} new files, as written",
            )
    return PropertyFinding(
        Verdict.HIDDEN,
        f"the backing gained {len(files)} file(s) and {len(dirs)} directory(ies), "
        f"not a directory of {TREE_FILES} files inside another",
    )
