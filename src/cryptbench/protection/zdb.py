"""What someone who reads a ZFS pool's image at rest sees of its files, through zdb
(zfsutils-linux): read-only, in user space, from the image's own blocks (`zdb -e -p
IMAGE`), with no key, as anyone holding the disk and OpenZFS's tools would; never through
the kernel's imported pool.

Every dataset of the pool is read (`zdb -P -dddd POOL`, numbers unscaled):

- its name is a directory of the sight: ZFS keeps dataset names and their hierarchy in
  the clear, encrypted or not (OpenZFS documentation, Native Encryption);
- in a dataset without encryption, each file's and directory's path (the directories'
  entries, down from the master node's ROOT) and each file's exact size (its znode's
  `size`);
- in an encrypted dataset, directory entries and each znode's attributes (its parent, its
  size) are encrypted ("(object encrypted)", "(bonus encrypted)"), but each object's dnode
  is not: every file and directory is an entry of its own, named by its object number
  ("#N") beside the dataset, with its type, and for a file the size its blocks give away
  (the dnode's logical size: one block rounded up to 512 bytes, a larger file to its
  record size), 0 where it holds no block.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from cryptbench.machine.system import which

UBERBLOCK_MAGIC = 0x00BAB10C  # the first field of every uberblock
RING = (128 << 10, 256 << 10)  # bytes: the first vdev label's uberblock ring
SLOT = 1 << 10  # bytes: the smallest uberblock slot (ashift 9); larger ones are multiples
ZDB_TIMEOUT = 120.0  # seconds for one zdb: a label, or every dataset's objects
FILE, DIRECTORY = "ZFS plain file", "ZFS directory"  # the object types a sight lists

LABEL_NAME = re.compile(r"^\s+name: '([^']+)'$", re.M)  # the pool's name, in a label
DATASET = re.compile(r"^Dataset (\S+) \[(\w+)\], ID ")
# One object under the header "Object lvl iblk dblk dsize dnsize lsize %full type", -P's
# unscaled numbers: its id, its logical size (bytes), how full its blocks are, its type.
OBJECT = re.compile(r"^\s+(-?\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)\s+([\d.]+)\s+(\S.*?)\s*$")
ZNODE_SIZE = re.compile(r"^\tsize\t(\d+)$")
DIR_ENTRY = re.compile(r"^\t\t(.+) = (\d+) \(type: [^)]*\)$")  # a directory's entry: name = object
ROOT = re.compile(r"^\t\tROOT = (\d+)\s*$")  # the master node's entry for the root directory


@dataclass
class Dnode:
    kind: str  # FILE, DIRECTORY or another object type
    logical: int  # bytes its blocks span (lsize), 0 where it holds no block
    size: int | None = None  # bytes, the znode's size where its bonus is readable
    children: dict[str, int] = field(default_factory=dict)  # a directory's: name -> object


@dataclass
class Dataset:
    name: str  # pool/dataset
    objects: dict[int, Dnode] = field(default_factory=dict)
    root: int | None = None  # the root directory's object, from the master node


def is_pool(image: Path) -> bool:
    """Whether the image holds a ZFS vdev label: an uberblock's magic in the first label's
    ring, written in either byte order."""
    with open(image, "rb") as f:
        f.seek(RING[0])
        ring = f.read(RING[1] - RING[0])
    magic = (UBERBLOCK_MAGIC.to_bytes(8, "little"), UBERBLOCK_MAGIC.to_bytes(8, "big"))
    return any(ring[o : o + 8] in magic for o in range(0, len(ring) - 7, SLOT))


def read(image: Path) -> dict[str, tuple[bool, int]] | str:
    """Every dataset's entries by path (pool/dataset/path, or pool/dataset/#N for an object
    whose place cannot be read): (is a directory, bytes); where zdb cannot read them, why
    not."""
    if which("zdb") is None:
        return "zdb (zfsutils-linux) is not installed"
    try:
        named = LABEL_NAME.search(_zdb(["-l", str(image)]))
        if named is None:
            return "zdb found no pool's name in its labels"
        dump = _zdb(["-e", "-p", str(image), "-P", "-dddd", named.group(1)])
    except Unreadable as e:
        return str(e)
    return entries(parse(dump))


class Unreadable(Exception):
    """zdb could not read the image: why, in words."""


def _zdb(args: list[str]) -> str:
    """zdb's output; Unreadable where it failed."""
    try:
        proc = subprocess.run(["zdb", *args], capture_output=True, timeout=ZDB_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise Unreadable(f"zdb took over {ZDB_TIMEOUT:.0f} s") from None
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
        raise Unreadable(f"zdb could not read it: {said[-1] if said else f'exit {proc.returncode}'}")
    return proc.stdout.decode(errors="backslashreplace")


def parse(dump: str) -> list[Dataset]:
    """The filesystem datasets of `zdb -P -dddd POOL`'s output, with their objects."""
    datasets: list[Dataset] = []
    current: Dataset | None = None  # None inside the MOS or a volume
    dnode: Dnode | None = None
    header = False  # the line before was an object table's header
    for line in dump.splitlines():
        if m := DATASET.match(line):
            current = Dataset(m.group(1)) if m.group(2) == "ZPL" else None
            if current is not None:
                datasets.append(current)
            dnode = None
        elif current is None:
            continue
        elif line.lstrip().startswith("Object  lvl"):
            header = True
            continue
        elif header and (m := OBJECT.match(line)):
            logical = int(m.group(2)) if float(m.group(3)) > 0 else 0
            dnode = current.objects[int(m.group(1))] = Dnode(m.group(4), logical)
        elif dnode is None:
            pass
        elif m := ZNODE_SIZE.match(line):
            dnode.size = int(m.group(1))
        elif dnode.kind == DIRECTORY and (m := DIR_ENTRY.match(line)):
            dnode.children[m.group(1)] = int(m.group(2))
        elif m := ROOT.match(line):
            current.root = int(m.group(1))
        header = False
    return datasets


def entries(datasets: list[Dataset]) -> dict[str, tuple[bool, int]]:
    """Paths as someone at rest reads them: each dataset a directory; below it each file
    and directory reached from its root by name (a directory has one; each of a file's
    hard links is a name), the others by object number."""
    out: dict[str, tuple[bool, int]] = {}
    for ds in datasets:
        out[ds.name] = (True, 0)
        placed = {ds.root} if ds.root is not None else set()
        level = [(ds.root, ds.name)] if ds.root in ds.objects else []
        while level:
            below = []
            for obj, prefix in level:
                for name, child in ds.objects[obj].children.items():
                    dnode = ds.objects.get(child)
                    if dnode is None or dnode.kind not in (FILE, DIRECTORY):
                        continue  # an object of another kind, or not in the dump
                    path = f"{prefix}/{name}"
                    out[path] = _entry(dnode)  # every name a file has (hard links too)
                    if dnode.kind == DIRECTORY and child not in placed:
                        below.append((child, path))
                    placed.add(child)
            level = below
        for obj, dnode in ds.objects.items():
            if dnode.kind in (FILE, DIRECTORY) and obj not in placed:
                out[f"{ds.name}/#{obj}"] = _entry(dnode)
    return out


def _entry(dnode: Dnode) -> tuple[bool, int]:
    if dnode.kind == DIRECTORY:
        return True, 0
    return False, dnode.size if dnode.size is not None else dnode.logical
