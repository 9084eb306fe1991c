"""The interface every backend implements, and the Target it provisions."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from cryptbench.machine.resources import Process
from cryptbench.machine.session import Session
from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Medium, Property, Verdict


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""  # why not, in words a user can act on; empty when ok


class DirectIO(StrEnum):
    """What O_DIRECT on this target really does (probed at provisioning)."""

    HONOURED = "honoured"  # data bypasses every page cache on its way to the device
    BUFFERED = "buffered"  # accepted, but the data passes through a page cache anyway
    REFUSED = "refused"  # open or I/O with O_DIRECT fails


@dataclass(frozen=True)
class Helper:
    """A process that does a target's work outside fio (e.g. a FUSE daemon)."""

    name: str
    pid: int
    create_time: float  # seconds since the epoch (psutil); tells a reused pid apart

    def death(self) -> str | None:
        """None while the helper runs; otherwise how it ended, in words."""
        return Process(self.pid, self.create_time, self.name).death()


@dataclass(frozen=True)
class CipherUse:
    """Which cipher a layer runs, where, and how widely, so that its throughput
    can be set against what that cipher can do here (cipher/ceilings.py)."""

    where: str  # kernel (the crypto API) or userspace (the layer's own code)
    algorithm: str  # kernel: a crypto API name (xts(aes)); userspace: a cipher case (aes-256-gcm)
    unit: int  # bytes per data unit the layer encrypts at a time
    # True: the layer spreads one stream's units over all cores (a workqueue,
    # Go routines); False: one core does a stream's cipher work.
    parallel: bool


STATES = ("fresh", "rewrite")
RAM_PREFIX = "ram:"
FILESYSTEMS = ("ext4", "xfs", "btrfs")


@dataclass(frozen=True)
class TargetSpec:
    """What to provision: a backend, and for image backends the state and filesystem."""

    backend: str
    state: str | None = None  # fresh or rewrite, for backends whose state is controlled
    fs: str = "ext4"  # filesystem inside images; others ignore it
    # device: in the scratch space on the target filesystem; ram: the same
    # stack on a tmpfs of the run's (--ram), to tell device cost from layer cost
    medium: Medium = Medium.DEVICE

    @property
    def name(self) -> str:
        name = self.backend if self.state is None else f"{self.backend}@{self.state}"
        return RAM_PREFIX + name if self.medium == Medium.RAM else name

    @property
    def slug(self) -> str:
        """The name, safe for file names that allow no '@' or ':'."""
        return self.name.replace("@", "-").replace(":", "-")


@dataclass
class Target:
    name: str
    backend: str
    encrypted: bool
    baseline: str | None  # the same stack without the cipher; None for plain
    path: Path  # directory the workloads read and write
    backing: tuple[Path, ...]  # where the bytes land (image file, ciphertext dir)
    helpers: tuple[Helper, ...] = ()
    details: dict[str, str] = field(default_factory=dict)
    direct_io: DirectIO = DirectIO.HONOURED
    direct_io_reason: str = ""
    # Proof of encryption: a marker written through `path` is absent from
    # `backing` (encrypted) or present in it (unencrypted: the positive control).
    marker_in_backing: bool | None = None
    encryption_verified: bool | None = None
    state: str | None = None  # fresh or rewrite; None where state is not controlled
    # Files outside `backing` whose page cache the data also passes through
    # (e.g. the file a FUSE export presents to a loop device).
    cached: tuple[Path, ...] = ()
    medium: Medium = Medium.DEVICE  # as the spec asked
    # A cgroup (v2) that fio must run in for this target: a known-answer
    # target's throttle lives there (machine/throttle.py). None elsewhere.
    cgroup: Path | None = None
    # Seconds its daemon may keep written blocks in its own memory before they reach the
    # backing, whatever fsync and sync do (CryFS's block cache); the protection probes wait
    # this long where they need every write in the backing. 0: none.
    write_behind: float = 0.0
    # Ends each write trial inside its clock (runner.run_trial) where fsync through `path`
    # is not the end of a write: rclone's VFS without a cache, whose fsync returns before the
    # data reaches the backing (os.sync, the backing's filesystem synced); ZFS, whose fsync
    # commits its intent log and `zpool sync POOL` the transaction group that puts the data
    # in place. So each figure is durable like every other target's; the seconds it takes
    # are the trial's backing_sync_seconds. The protection probes call it too before they
    # read the backing. None: fsync is the end.
    end_write: Callable[[], None] | None = None
    # True where the target writes a file only from its start (Backend.writes_from_start):
    # a probe that rewrites a file truncates it first.
    writes_from_start: bool = False
    # Empties a cache of the layer's own that dropping the page cache does not reach, before
    # every cold read (ZFS's ARC: its pool exported and imported again: backends/zfs.py);
    # returns what it did, in words, for the trial's record. None: the layer keeps none.
    empty_cache: Callable[[], str] | None = None
    # What its backing hides, as the protection probes found it (protection/findings.py's
    # Protection.to_json()); None until probed.
    protection: JsonObject | None = None


# What an unencrypted backing shows: everything (the positive controls' declaration).
NOTHING_HIDDEN = {
    **{
        p: (Verdict.SHOWN, "no encryption: the backing holds the files as they are")
        for p in (Property.CONTENTS, Property.NAMES, Property.SIZES, Property.TREE)
    },
    Property.TAMPER: (
        Verdict.SILENT,
        "no encryption and no checksum of the data: a changed byte reads back changed",
    ),
}


class Backend(ABC):
    # Set on the class where one class is one backend, on the instance where one
    # class serves several (luks-aes128/-aes256, image-KIND-CIPHER, throttle-N).
    name: str
    encrypted: bool
    baseline: str | None
    summary: str
    # True: every write trial gets a newly provisioned target in the asked
    # state (fresh, or rewrite), as study 003's state control requires.
    stateful: ClassVar[bool] = False
    # False where a RAM twin means nothing (a throttle needs a block device).
    ram: ClassVar[bool] = True
    # The cipher it runs; None for a layer without one.
    cipher_use: CipherUse | None = None
    # The programs it starts with paths in its run directory as arguments, beyond the
    # ones every target's stack uses (recovery.CORE_HELPERS): after a SIGKILL, recovery
    # stops them before it unmounts (backends.helper_programs()).
    programs: ClassVar[tuple[str, ...]] = ()
    # Why it writes a file only from its start to its end (no write at another offset, no
    # rewrite in place), or "" where it writes anywhere. A run's workloads that write at an
    # offset cannot run on it (planning/targets.py), and its write trials make a new file each.
    writes_from_start: ClassVar[str] = ""

    def same_format_as(self) -> str | None:
        """The backend whose backing this one's is, byte for byte but for its keys and
        salts (an option that changes only how the work is scheduled), or None. Where a
        run holds both on one medium, the protection probes read that one's backing once
        and its findings are this one's too (pipeline/verify.py)."""
        return None

    def declared(self) -> dict[Property, tuple[Verdict, str]]:
        """What its documentation promises it hides from someone who reads its backing at
        rest, per property (contents, names, sizes, tree: hidden, shown or block; tamper:
        detected or silent), with the source. The protection probes' findings are
        held to it; {}: nothing declared."""
        return {}

    def version(self) -> str | None:
        """The version of the program it runs (its FUSE daemon, qemu's tools), recorded in
        the run's environment; None where its code is the kernel's (whose version is there)."""
        return None

    @abstractmethod
    def probe(self) -> Availability:
        """Can this backend run here, for this user? Cheap; no side effects."""

    @abstractmethod
    def space_needed(self, spec: TargetSpec, data_bytes: int) -> int:
        """Bytes of free space on the target filesystem the provisioned target needs."""

    @abstractmethod
    def provision(
        self, session: Session, spec: TargetSpec, data_bytes: int
    ) -> AbstractContextManager[Target]:
        """Set the target up inside the session's scratch; tear it down on exit.

        Called again for every reset of a stateful target: each call must work
        in a directory of its own (see `target_dir`).
        """


def iter_files(paths: tuple[Path, ...]) -> Iterator[Path]:
    for p in paths:
        if p.is_file():
            yield p
        elif p.is_dir():
            yield from (q for q in sorted(p.rglob("*")) if q.is_file() and not q.is_symlink())


def cache_files(target: Target, *extra: Path) -> list[Path]:
    """The files whose page cache a measurement depends on: `extra` plus the backing, each once.

    For plain the backing is the target directory itself, so a data file named
    in `extra` is also among the backing files; counting it twice would double
    its resident bytes.
    """
    return list(dict.fromkeys([*extra, *target.cached, *iter_files(target.backing)]))


def target_root(session: Session, spec: TargetSpec) -> Path:
    """Where `spec`'s provisionings live: the run's directory, or its tmpfs for a RAM
    twin (mounted on first use)."""
    return session.ram_dir() if spec.medium == Medium.RAM else session.run_dir


def target_dir(session: Session, spec: TargetSpec) -> Path:
    """A new directory for one provisioning of `spec`: targets/<name>/<n>, or
    ram/targets/<name>/<n> on the run's tmpfs for a RAM twin."""
    parent = session.check_inside(target_root(session, spec) / "targets" / spec.slug)
    parent.mkdir(parents=True, exist_ok=True)
    n = sum(1 for _ in parent.iterdir()) + 1
    d = parent / str(n)
    d.mkdir()
    return d
