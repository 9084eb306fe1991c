"""The session owns a run's scratch directory, its lock and its journal.

Layout under the user's target directory:

    <target>/cryptbench/                 scratch root, marked by .cryptbench-scratch
        .lock                            flock held by the one run using this scratch
    <target>/cryptbench/run-<stamp>-<pid>/
        lock                             flock held while the run lives
        journal.jsonl                    resources acquired/released, fsynced per line

Secrets (passwords, key files) never go there: they live in a private 0700
directory on a RAM filesystem (see machine/keys.py), made by `secret_file()`.

Every resource is journaled *before* it is created, so teardown after a normal
end, an error, a signal, or a SIGKILL (via `cryptbench cleanup`) walks the same
list backwards. `path()`, `check_inside()` and `secret_file()` are the only
places writers get their paths from, and they refuse anything outside the run's
directories.

The scratch root must be ours in every sense: made by cryptbench (marker), owned
by this user, writable by nobody else and not a symbolic link. A root-owned run
writing into a directory that another user can rename things in could be
tricked into writing through a link planted there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from cryptbench.machine import keys, recovery, resources
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import Mount, Resource, SecretDir, SecretFile
from cryptbench.machine.system import mounts_under, run_cmd
from cryptbench.model.errors import BusyError, CryptbenchError, SafetyError, UsageError

SCRATCH_NAME = "cryptbench"
MARKER = ".cryptbench-scratch"
ROOT_LOCK = ".lock"
FORBIDDEN_ROOTS = (Path("/dev"), Path("/proc"), Path("/sys"), Path("/run"))


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "cryptbench"


def check_target_dir(target: Path) -> Path:
    """Validate the directory the user pointed us at; return it resolved."""
    if not target.exists():
        raise UsageError(f"target {str(target)!r} does not exist")
    resolved = target.resolve()
    for root in FORBIDDEN_ROOTS:
        if resolved == root or resolved.is_relative_to(root):
            raise SafetyError(f"target {str(target)!r} lies under {root}; choose a directory on a disk")
    mode = resolved.stat().st_mode
    if stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        kind = "block" if stat.S_ISBLK(mode) else "character"
        raise SafetyError(
            f"target {str(target)!r} is a {kind} device; cryptbench never writes to devices: "
            "give a directory on the filesystem to measure (where the device is mounted)"
        )
    if not resolved.is_dir():
        raise UsageError(f"target {str(target)!r} is not a directory; give the directory to put scratch in")
    st = os.statvfs(resolved)
    if st.f_flag & os.ST_RDONLY:
        raise UsageError(
            f"target {str(target)!r} is on a read-only filesystem; remount it read-write or pick another"
        )
    if not os.access(resolved, os.W_OK | os.X_OK):
        raise UsageError(f"target {str(target)!r} is not writable by this user; pick a directory you own")
    check_scratch_root(scratch_root(resolved))
    return resolved


def check_scratch_root(root: Path) -> None:
    """Refuse a scratch root that is not ours; a missing one is fine (we make it)."""
    try:
        st = root.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise SafetyError(f"{root} is a symbolic link; cryptbench will not write through it: remove it")
    if not stat.S_ISDIR(st.st_mode):
        raise SafetyError(f"{root} exists and is not a directory; move it away or pick another --target")
    try:
        marker = (root / MARKER).lstat()
    except FileNotFoundError:
        marker = None
    # An empty directory holds nothing to lose: a run killed between making the
    # root and its marker left it, and the next run adopts it.
    if (marker is None and any(root.iterdir())) or (marker is not None and not stat.S_ISREG(marker.st_mode)):
        raise SafetyError(
            f"{root} exists and was not made by cryptbench; move it away or pick another --target"
        )
    if st.st_uid != os.geteuid():
        raise SafetyError(
            f"{root} belongs to uid {st.st_uid}, not to this user ({os.geteuid()}); "
            "remove it or pick another --target"
        )
    if st.st_mode & 0o022:
        raise SafetyError(
            f"{root} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}); "
            "remove it or pick another --target"
        )


def scratch_root(target: Path) -> Path:
    return target / SCRATCH_NAME


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@dataclass
class _Entry:
    id: int
    resource: Resource
    released: bool = False


@dataclass
class Session:
    run_dir: Path
    _lock_fd: int
    _journal: TextIO  # append mode, fsynced per record
    _root_lock_fd: int = -1
    _entries: list[_Entry] = field(default_factory=list)
    _registry_file: Path | None = None
    _secret_dir: Path | None = None
    _closed: bool = False
    # The user's own passphrase (--passphrase-file); None: generate keys per run.
    passphrase: bytes | None = field(default=None, repr=False)
    # Size of the tmpfs the run's RAM twins live on (bytes; --ram); 0: none planned.
    ram_bytes: int = 0
    _ram_dir: Path | None = None
    # Passwords a backend reuses within the run (an image copied from its first), by the
    # file they open; in memory only, never written, gone with the session.
    passwords: dict[Path, bytes] = field(default_factory=dict, repr=False)

    # -- creation -----------------------------------------------------------------

    @classmethod
    def create(cls, target: Path, registry: Path | None = None) -> Session:
        root = scratch_root(target)
        check_scratch_root(root)
        root.mkdir(mode=0o700, exist_ok=True)
        if not (root / MARKER).exists():
            with contextlib.suppress(FileExistsError):  # another run raced us to it
                os.close(os.open(root / MARKER, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
            check_scratch_root(root)
        root_fd = _lock_root(root)
        try:
            stamp = time.strftime("%Y%m%dT%H%M%S")
            run_dir = root / f"run-{stamp}-{os.getpid()}"
            run_dir.mkdir(mode=0o700)
            lock_fd = os.open(run_dir / "lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            journal = open(run_dir / "journal.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        except BaseException:
            os.close(root_fd)
            raise
        session = cls(run_dir, lock_fd, journal, root_fd)
        reg = registry if registry is not None else state_dir() / "sessions"
        with contextlib.suppress(OSError):  # the registry only speeds up cleanup
            reg.mkdir(parents=True, exist_ok=True)
            session._registry_file = reg / f"{run_dir.name}.path"
            session._registry_file.write_text(str(run_dir))
        return session

    # -- the write guard ----------------------------------------------------------

    def path(self, *parts: str) -> Path:
        """A path inside the run directory; refuses anything that escapes it."""
        for part in parts:
            if os.path.isabs(part) or ".." in Path(part).parts:
                raise SafetyError(f"refusing path {part!r}: it would leave the scratch directory")
        p = self.run_dir.joinpath(*parts)
        if not p.resolve().is_relative_to(self.run_dir.resolve()):
            raise SafetyError(f"refusing path {p}: it resolves outside the scratch directory")
        return p

    def check_inside(self, p: Path) -> Path:
        if not p.resolve().is_relative_to(self.run_dir.resolve()):
            raise SafetyError(f"refusing to write {p}: outside the scratch directory {self.run_dir}")
        return p

    def secret_file(self, name: str, data: bytes) -> SecretFile:
        """Write a secret to a new 0600 file in the run's private RAM directory.

        The file is journaled, so it is wiped and removed at teardown (or by
        `cryptbench cleanup` after a SIGKILL); release it sooner when the
        helper that reads it no longer needs it.
        """
        if not keys.SECRET_NAME_RE.match(name):
            raise SafetyError(f"refusing secret file name {name!r}")
        if self._secret_dir is None:
            base = keys.ram_dir()
            directory = base / f"{keys.SECRET_DIR_PREFIX}{self.run_dir.name}-{os.urandom(4).hex()}"
            self.acquire(SecretDir(directory))
            directory.mkdir(mode=0o700)  # fails if it exists: never reuse a directory
            self._secret_dir = directory
        path = self._secret_dir / name
        secret = SecretFile(path)
        self.acquire(secret)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return secret

    def ram_dir(self) -> Path:
        """The run's tmpfs (mounted at <run>/ram on first use, journaled like every mount)."""
        if self._ram_dir is None:
            if self.ram_bytes <= 0:
                raise SafetyError("refusing to mount a RAM filesystem this run did not plan (--ram)")
            mountpoint = self.path("ram")
            mountpoint.mkdir(mode=0o700)
            self.acquire(Mount(mountpoint))
            # Held, as for every mount: otherwise it could appear after its release.
            with signals_blocked():
                options = f"size={self.ram_bytes},mode=0700"
                run_cmd(["mount", "-t", "tmpfs", "-o", options, "cryptbench-ram", str(mountpoint)])
            self._ram_dir = mountpoint
        return self._ram_dir

    # -- the journal ----------------------------------------------------------------

    def _write(self, record: dict) -> None:
        self._journal.write(json.dumps(record) + "\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())

    def _write_release(self, entry_id: int) -> None:
        # Best effort: on a full disk the record may not fit, and a release
        # that is not journaled is only released again (idempotently) later.
        with contextlib.suppress(OSError):
            self._write({"op": "release", "id": entry_id})

    def acquire(self, resource: Resource) -> Resource:
        """Journal `resource`; call before creating it."""
        entry = _Entry(len(self._entries), resource)
        self._write({"op": "acquire", "id": entry.id, **resource.to_json()})
        self._entries.append(entry)
        return resource

    def release(self, resource: Resource) -> str | None:
        for entry in reversed(self._entries):
            if entry.resource is resource and not entry.released:
                msg = resource.release()
                entry.released = True
                self._write_release(entry.id)
                return msg
        return None

    def release_all(self) -> list[str]:
        """Release everything still held, newest first. Signals wait until done."""
        messages: list[str] = []
        errors: list[str] = []
        with signals_blocked():
            for entry in reversed(self._entries):
                if entry.released:
                    continue
                try:
                    msg = entry.resource.release()
                except Exception as e:  # keep tearing down the rest
                    errors.append(str(e))
                    continue
                entry.released = True
                self._write_release(entry.id)
                if msg:
                    messages.append(msg)
        if errors:
            raise CryptbenchError("teardown incomplete: " + "; ".join(errors) + " (run `cryptbench cleanup`)")
        return messages

    def close(self) -> list[str]:
        """Tear everything down and remove the run directory."""
        if self._closed:
            return []
        messages = self.release_all()
        with signals_blocked():
            _remove_run_dir(self.run_dir)
            with contextlib.suppress(OSError):  # a full disk: the file is gone anyway
                self._journal.close()
            os.close(self._lock_fd)
            os.close(self._root_lock_fd)
            if self._registry_file is not None:
                with contextlib.suppress(OSError):
                    self._registry_file.unlink()
            self._closed = True
        return messages


def _lock_root(root: Path) -> int:
    """Hold the scratch root's lock for the run, or say who holds it.

    One run per scratch: two runs on one device disturb each other's
    measurements, so the second one refuses rather than report noise.
    """
    path = root / ROOT_LOCK
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise BusyError(
                f"another cryptbench run (pid {holder}) is using {root}; runs at the same time would "
                "disturb each other's measurements: wait for it to finish or pick another --target"
            ) from None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _remove_run_dir(run_dir: Path) -> None:
    left = mounts_under(run_dir)
    if left:
        # Never rmtree through a mount: leave it for `cryptbench cleanup`.
        raise CryptbenchError(f"still mounted under {run_dir}: {', '.join(map(str, left))}")
    shutil.rmtree(run_dir, ignore_errors=False)


# -- recovery after a crash -------------------------------------------------------


@contextlib.contextmanager
def _run_lock(run_dir: Path) -> Iterator[bool]:
    """Hold a run directory's lock while recovering it; False if a live run holds it.

    Holding it (not just testing it) keeps a `cleanup` and a new `run` from
    recovering the same dead run at once.
    """
    try:
        fd = os.open(run_dir / "lock", os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                yield False
                return
            raise
        yield True
    finally:
        os.close(fd)


def candidate_run_dirs(targets: list[Path], registry: Path | None = None) -> list[Path]:
    """Run directories that may be stale: from the registry and from known scratch roots."""
    found: dict[Path, None] = {}
    reg = registry if registry is not None else state_dir() / "sessions"
    if reg.is_dir():
        for entry in sorted(reg.glob("run-*.path")):
            p = Path(entry.read_text().strip())
            if p.is_dir():
                found[p] = None
            else:
                entry.unlink(missing_ok=True)
    for target in targets:
        root = scratch_root(target)
        if (root / MARKER).is_file():
            for p in sorted(root.glob("run-*")):
                if p.is_dir():
                    found[p] = None
    # Only directories inside a cryptbench scratch root are ever touched.
    return [p for p in found if (p.parent / MARKER).is_file() and p.parent.name == SCRATCH_NAME]


def recover(
    run_dir: Path, registry: Path | None = None, programs: frozenset[str] = recovery.CORE_HELPERS
) -> list[str] | None:
    """Tear down what a dead run left: first the helpers among `programs` still at work in
    it, then what its journal names, then what lies where a run's resources lie. None if
    the run is still alive."""
    with _run_lock(run_dir) as free:
        if not free:
            return None
        messages: list[str] = []
        journal = run_dir / "journal.jsonl"
        acquired: dict[int, Resource] = {}
        if journal.exists():
            for line in journal.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line from the kill
                if rec.get("op") == "acquire":
                    data = {k: v for k, v in rec.items() if k not in ("op", "id")}
                    with contextlib.suppress(KeyError, TypeError):
                        acquired[rec["id"]] = resources.from_json(data)
                elif rec.get("op") == "release":
                    acquired.pop(rec.get("id"), None)
        with signals_blocked():
            # Helpers first: a mount or losetup a dead run had started may
            # still complete, and fio or a daemon keep mounts busy.
            messages.extend(recovery.stop_processes_using(run_dir, programs))
            for rid in sorted(acquired, reverse=True):
                msg = acquired[rid].release()
                if msg:
                    messages.append(msg)
            # Whatever the journal could not name (a kill between a helper
            # starting and its journal line) is found by where it lives.
            messages.extend(recovery.sweep(run_dir, keys.secret_dirs_of(run_dir.name)))
            _remove_run_dir(run_dir)
            reg = registry if registry is not None else state_dir() / "sessions"
            (reg / f"{run_dir.name}.path").unlink(missing_ok=True)
        messages.append(f"removed {run_dir}")
        return messages
