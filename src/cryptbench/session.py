"""The session owns a run's scratch directory, its lock and its journal.

Layout under the user's target directory:

    <target>/cryptbench/                 scratch root, marked by .cryptbench-scratch
    <target>/cryptbench/run-<stamp>-<pid>/
        lock                             flock held while the run lives
        journal.jsonl                    resources acquired/released, fsynced per line

Every resource is journaled *before* it is created, so teardown after a normal
end, an error, a signal, or a SIGKILL (via `cryptbench cleanup`) walks the same
list backwards. `path()` is the one place every writer gets its paths from, and
it refuses anything outside the run directory.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from cryptbench import resources
from cryptbench.errors import CryptbenchError, SafetyError, UsageError
from cryptbench.resources import Resource
from cryptbench.system import mounts_under

SCRATCH_NAME = "cryptbench"
MARKER = ".cryptbench-scratch"
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
    if not resolved.is_dir():
        raise UsageError(f"target {str(target)!r} is not a directory (cryptbench never writes to devices)")
    st = os.statvfs(resolved)
    if st.f_flag & os.ST_RDONLY:
        raise UsageError(f"target {str(target)!r} is on a read-only filesystem")
    if not os.access(resolved, os.W_OK | os.X_OK):
        raise UsageError(f"target {str(target)!r} is not writable by this user")
    return resolved


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
    _entries: list[_Entry] = field(default_factory=list)
    _registry_file: Path | None = None
    _closed: bool = False

    # -- creation -----------------------------------------------------------------

    @classmethod
    def create(cls, target: Path, registry: Path | None = None) -> Session:
        root = scratch_root(target)
        if root.exists() and not (root / MARKER).is_file():
            raise SafetyError(
                f"{root} exists and was not made by cryptbench; move it away or pick another --target"
            )
        if root.is_symlink():
            raise SafetyError(f"{root} is a symbolic link; cryptbench will not write through it")
        root.mkdir(mode=0o700, exist_ok=True)
        (root / MARKER).touch()
        stamp = time.strftime("%Y%m%dT%H%M%S")
        run_dir = root / f"run-{stamp}-{os.getpid()}"
        run_dir.mkdir(mode=0o700)
        lock_fd = os.open(run_dir / "lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        journal = open(run_dir / "journal.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        session = cls(run_dir, lock_fd, journal)
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

    # -- the journal ----------------------------------------------------------------

    def _write(self, record: dict) -> None:
        self._journal.write(json.dumps(record) + "\n")
        self._journal.flush()
        os.fsync(self._journal.fileno())

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
                self._write({"op": "release", "id": entry.id})
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
                self._write({"op": "release", "id": entry.id})
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
            self._journal.close()
            os.close(self._lock_fd)
            if self._registry_file is not None:
                with contextlib.suppress(OSError):
                    self._registry_file.unlink()
            self._closed = True
        return messages


def _remove_run_dir(run_dir: Path) -> None:
    left = mounts_under(run_dir)
    if left:
        # Never rmtree through a mount: leave it for `cryptbench cleanup`.
        raise CryptbenchError(f"still mounted under {run_dir}: {', '.join(map(str, left))}")
    shutil.rmtree(run_dir, ignore_errors=False)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, so a second Ctrl-C cannot cut teardown short."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# -- recovery after a crash -------------------------------------------------------


def _lock_is_free(run_dir: Path) -> bool:
    try:
        fd = os.open(run_dir / "lock", os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
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


def recover(run_dir: Path, registry: Path | None = None) -> list[str] | None:
    """Tear down what a dead run left. None if the run is still alive."""
    if not _lock_is_free(run_dir):
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
        for rid in sorted(acquired, reverse=True):
            msg = acquired[rid].release()
            if msg:
                messages.append(msg)
        _remove_run_dir(run_dir)
        reg = registry if registry is not None else state_dir() / "sessions"
        (reg / f"{run_dir.name}.path").unlink(missing_ok=True)
    messages.append(f"removed {run_dir}")
    return messages
