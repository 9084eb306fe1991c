"""Things a run acquires that must be given back: mounts, loop devices,
daemons, keys and secret files.

Each resource is journaled before it is created (see machine/session.py) and knows how
to release itself idempotently, so the same code tears down after a normal run,
an error, a signal, or (through `cryptbench cleanup`) a SIGKILL. Releases
identify what they remove by path or by pid plus start time, never by name, so
they cannot touch something cryptbench did not create.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import stat
import struct
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

import psutil

from cryptbench.machine.system import is_mountpoint, which
from cryptbench.machine.throttle import BLKIO, THROTTLE_FILES, v1_rules
from cryptbench.model.errors import ProvisionError
from cryptbench.model.json_types import JsonObject


@dataclass
class Resource:
    kind: ClassVar[str] = ""

    def release(self) -> str | None:
        """Give the resource back; return a short description if anything was done."""
        raise NotImplementedError

    def to_json(self) -> JsonObject:
        return {
            "kind": self.kind,
            **{k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()},
        }


@dataclass
class Mount(Resource):
    """A filesystem mounted at `mountpoint` (inside the run's scratch)."""

    kind: ClassVar[str] = "mount"
    mountpoint: Path
    fuse: bool = False

    def release(self) -> str | None:
        if not is_mountpoint(self.mountpoint):
            return None
        if not self.fuse:
            thaw(self.mountpoint)
        last = ""
        # A mount can be briefly busy while a just-killed fio or daemon exits.
        for attempt in range(20):
            if self.fuse and which("fusermount3"):
                cmd = ["fusermount3", "-u", str(self.mountpoint)]
            else:
                cmd = ["umount", str(self.mountpoint)]
            proc = subprocess.run(cmd, capture_output=True, check=False)
            if proc.returncode == 0 or not is_mountpoint(self.mountpoint):
                return f"unmounted {self.mountpoint}"
            last = proc.stderr.decode(errors="replace").strip()
            time.sleep(0.05 * (attempt + 1))
        raise ProvisionError(f"could not unmount {self.mountpoint}: {last}")


FITHAW = 0xC0045878  # _IOWR('X', 120, int)


def thaw(mountpoint: Path) -> None:
    """Thaw a filesystem a run froze (the protection probes' checkpoint) and was stopped or
    killed before it could thaw: unmounting a frozen filesystem succeeds, but leaves its
    superblock alive and its loop device attached for good. Not frozen: EINVAL, ignored."""
    try:
        fd = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        fcntl.ioctl(fd, FITHAW, 0)
    except OSError:
        pass
    finally:
        os.close(fd)


DELETED = " (deleted)"  # what the kernel appends to a backing file's path once it is unlinked


def loop_backings() -> list[tuple[str, Path]]:
    """Every attached loop device and the path of its backing file, from sysfs
    rather than `losetup --associated`, which stats the backing file (a FUSE
    export whose daemon died cannot be stat'ed). A backing file removed while
    attached (its directory deleted under a run) keeps its path, without the
    kernel's " (deleted)", so it is still found by where it was."""
    found = []
    for dev in sorted(Path("/sys/block").glob("loop*")):
        with contextlib.suppress(OSError):
            text = (dev / "loop" / "backing_file").read_text().strip()
            if text.endswith(DELETED) and not os.path.lexists(text):
                text = text.removesuffix(DELETED)
            found.append((f"/dev/{dev.name}", Path(text)))
    return found


@dataclass
class LoopDevice(Resource):
    """Every loop device whose backing file is `image` (an image cryptbench made)."""

    kind: ClassVar[str] = "loop"
    image: Path

    def devices(self) -> list[str]:
        names = {self.image, Path(os.path.realpath(self.image))}  # losetup records the real path
        return [dev for dev, backing in loop_backings() if backing in names]

    def release(self) -> str | None:
        done, removed = [], []
        for dev in self.devices():
            removed.extend(remove_dm_holders(Path("/sys/block", Path(dev).name)))
            for attempt in range(20):
                proc = subprocess.run(["losetup", "--detach", dev], capture_output=True, check=False)
                if proc.returncode == 0:
                    done.append(dev)
                    break
                time.sleep(0.05 * (attempt + 1))
            else:
                raise ProvisionError(f"could not detach {dev}: {proc.stderr.decode().strip()}")
        self._wait_released(done)
        said = f"detached {', '.join(done)} ({self.image.name})" if done else None
        return f"removed {', '.join(removed)} stacked on it; {said}" if removed and said else said

    def _wait_released(self, devices: list[str]) -> None:
        """Until the kernel has closed the image behind each of `devices`. `losetup --detach`
        on a device still open (a filesystem on it being torn down, udev probing it) only
        marks it to clear on its last close, and returns. What serves the image must not
        stop before: a qemu export whose daemon exits under an attached loop device is
        lazily unmounted (libfuse does so as root), and the device is left on a file with
        no path ("/"), which nothing can tell was ours (set_autoclear)."""
        deadline = time.monotonic() + LOOP_RELEASE_WAIT
        while held := [dev for dev in self.devices() if dev in devices]:
            if time.monotonic() > deadline:
                raise ProvisionError(
                    f"{', '.join(held)} still attached to {self.image} {LOOP_RELEASE_WAIT:.0f} s after "
                    "losetup --detach: something still holds it open"
                )
            time.sleep(0.02)


LOOP_RELEASE_WAIT = 10.0  # seconds a detached loop device may take to close its image


def remove_dm_holders(block: Path) -> list[str]:
    """Remove the device-mapper devices stacked on `block` (a /sys/block entry of ours),
    the topmost first; what was removed. Only a run killed mid-way leaves any: cryptsetup's
    temporary device while luksFormat wipes for --integrity, or a NAME_dif whose crypt
    mapping never opened. They hold the loop device, which could not be detached under them."""
    removed = []
    for holder in sorted((block / "holders").glob("dm-*")):
        removed.extend(remove_dm_holders(Path("/sys/block", holder.name)))
        try:
            name = (Path("/sys/block", holder.name) / "dm" / "name").read_text().strip()
        except OSError:
            continue  # gone meanwhile
        proc = subprocess.run(["dmsetup", "remove", "--retry", name], capture_output=True, check=False)
        if proc.returncode != 0 and (Path("/sys/block", holder.name)).exists():
            raise ProvisionError(f"could not remove {name} from {block.name}: {proc.stderr.decode().strip()}")
        removed.append(name)
    return removed


@dataclass
class Process(Resource):
    """A helper daemon. pid plus create time, so a reused pid is never killed."""

    kind: ClassVar[str] = "process"
    pid: int
    create_time: float  # seconds since the epoch, as psutil reports it
    name: str = ""

    def death(self) -> str | None:
        """None while the process runs; otherwise how it ended, in words."""
        try:
            p = psutil.Process(self.pid)
            if abs(p.create_time() - self.create_time) >= 0.01:
                return "exited"  # and its pid now belongs to someone else's process
            if p.status() != psutil.STATUS_ZOMBIE:
                return None
            # Exited, or exiting: a multi-threaded daemon (gocryptfs is Go)
            # shows its leader as a zombie while other threads still exit, and
            # a non-blocking waitpid then reaps nothing. Wait until it is gone
            # (psutil reaps our own children and returns their exit status).
            code = p.wait(timeout=5)
        except psutil.NoSuchProcess:
            return "exited"
        except psutil.TimeoutExpired:
            return "is exiting"
        except psutil.Error:
            return None  # cannot tell; treat as running
        if code is not None and code < 0:
            return f"was killed by signal {-code} ({signal.Signals(-code).name})"
        return f"exited with status {code}" if code is not None else "exited"

    def _live(self) -> psutil.Process | None:
        if self.death() is not None:
            return None
        try:
            return psutil.Process(self.pid)
        except psutil.Error:
            return None

    def release(self) -> str | None:
        p = self._live()
        if p is None:
            return None
        p.terminate()
        try:
            p.wait(timeout=5)
        except psutil.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
        return f"stopped {self.name or 'process'} (pid {self.pid})"


@dataclass
class ProcessTree(Process):
    """A server that forks workers (fio --server): stopped with every process under it.

    A SIGTERM to fio's server leaves the workers it forked running their job
    to its end, and a kill of its process group misses the worker that sits in
    a group of its own. So the tree is listed while its root still lives, and
    every process in it is stopped.
    """

    kind: ClassVar[str] = "process-tree"

    def release(self) -> str | None:
        root = self._live()
        if root is None:
            return None
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = [root]
        terminate_all(tree, grace=5)
        return f"stopped {self.name or 'process'} (pid {self.pid}) and its {len(tree) - 1} worker(s)"


@dataclass
class ProcessGroup(Resource):
    """The process group (its own session) a user's command runs in: every process
    still in it is stopped, its leader alive or not. Only processes started since the
    group was made are touched: a group's id can be reused once all of it has gone."""

    kind: ClassVar[str] = "process-group"
    pgid: int
    create_time: float  # seconds since the epoch: the leader's start, as psutil reports it
    name: str = ""

    def members(self) -> list[psutil.Process]:
        found = []
        for p in psutil.process_iter(["create_time"]):
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(p.pid) == self.pgid and p.info["create_time"] >= self.create_time - 0.01:
                    found.append(p)
        return found

    def release(self) -> str | None:
        return stop_processes(self.members(), f"{self.name or 'command'}'s process group {self.pgid}")


def stop_processes(procs: list[psutil.Process], what: str) -> str | None:
    """What a user's command left running, ended (a grace of two seconds: it is not ours
    to let finish); a description, None if nothing was left."""
    if not procs:
        return None
    terminate_all(procs, grace=2)
    return f"stopped {len(procs)} process(es) left in {what}"


def terminate_all(procs: list[psutil.Process], grace: float) -> None:
    """SIGTERM to each, `grace` seconds to exit, then SIGKILL to what is left."""
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _gone, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=5)


@dataclass
class CommandCgroup(Resource):
    """A cgroup (v2) a user's command and everything it starts run in: what escapes its
    process group (a daemon that calls setsid) is still in it, and its CPU is counted
    there. Released by killing every process in it and removing it."""

    kind: ClassVar[str] = "command-cgroup"
    path: Path

    def release(self) -> str | None:
        if not self.path.is_dir():
            return None
        procs = _cgroup_pids(self.path)
        stopped = stop_processes([p for pid in procs for p in _process(pid)], f"cgroup {self.path.name}")
        last: OSError | None = None
        for attempt in range(40):
            for pid in _cgroup_pids(self.path):  # what a SIGTERM did not end, or a fork meanwhile
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return f"{stopped}; removed cgroup {self.path}" if stopped else f"removed cgroup {self.path}"
            except OSError as e:  # EBUSY while a killed process is still leaving
                last = e
                time.sleep(0.05 * (attempt + 1))
        raise ProvisionError(f"could not remove cgroup {self.path}: {last}")


def _cgroup_pids(cgroup: Path) -> list[int]:
    try:
        return [int(pid) for pid in (cgroup / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _process(pid: int) -> list[psutil.Process]:
    try:
        return [psutil.Process(pid)]
    except psutil.Error:
        return []


@dataclass
class SocketFile(Resource):
    """A unix socket a server of ours listens on; removed when the server has gone."""

    kind: ClassVar[str] = "socket"
    path: Path

    def release(self) -> str | None:
        try:
            if not stat.S_ISSOCK(os.lstat(self.path).st_mode):
                return None  # not ours any more: leave it
        except FileNotFoundError:
            return None
        self.path.unlink(missing_ok=True)
        return f"removed socket {self.path}"


def _wipe(path: Path) -> bool:
    """Overwrite a small secret file with zeros, then unlink it. False if it was gone."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        size = os.fstat(fd).st_size
        os.pwrite(fd, b"\0" * size, 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    path.unlink(missing_ok=True)
    return True


@dataclass
class SecretFile(Resource):
    """A 0600 file holding a password or key; removed as soon as it is not needed."""

    kind: ClassVar[str] = "secret"
    path: Path

    def release(self) -> str | None:
        return f"removed key file {self.path.name}" if _wipe(self.path) else None


@dataclass
class SecretDir(Resource):
    """The run's private 0700 directory for secrets, on a RAM filesystem."""

    kind: ClassVar[str] = "secret-dir"
    path: Path

    def release(self) -> str | None:
        if not self.path.is_dir() or self.path.is_symlink():
            return None
        wiped = [p.name for p in self.path.iterdir() if _wipe(p)]
        self.path.rmdir()
        extra = f" and key file(s) {', '.join(wiped)}" if wiped else ""
        return f"removed secret directory {self.path}{extra}"


# What cryptsetup says of a crypt mapping whose table holds an option it does not know.
UNREADABLE_TABLE = "Failed to query dm-crypt segment"


@dataclass
class DmCrypt(Resource):
    """A dm-crypt mapping /dev/mapper/<name> opened by cryptsetup."""

    kind: ClassVar[str] = "dm-crypt"
    name: str

    def release(self) -> str | None:
        if not Path("/dev/mapper", self.name).exists():
            return None
        last = ""
        close = ["cryptsetup", "close", self.name]
        for attempt in range(20):  # briefly busy while a just-unmounted fs lets go
            proc = subprocess.run(close, capture_output=True, check=False)
            if proc.returncode == 0 or not Path("/dev/mapper", self.name).exists():
                return f"closed dm-crypt mapping {self.name}"
            last = proc.stderr.decode(errors="replace").strip()
            if UNREADABLE_TABLE in last:
                # A flag this cryptsetup does not know (high_priority, set by a table reload
                # where cryptsetup is older than 2.7) makes it refuse the mapping it cannot
                # parse; the device-mapper removes it all the same.
                close = ["dmsetup", "remove", self.name]
            time.sleep(0.05 * (attempt + 1))
        raise ProvisionError(f"could not close dm-crypt mapping {self.name}: {last}")


@dataclass
class DmShadow(Resource):
    """A read-only crypt mapping made by `dmsetup create` over a user's own volume's device
    (run --existing --try-flags: pipeline/shadow.py): only ever removed, never closed by
    cryptsetup, whose header it never had."""

    kind: ClassVar[str] = "dm-shadow"
    name: str

    def release(self) -> str | None:
        if not Path("/dev/mapper", self.name).exists():
            return None
        last = ""
        for attempt in range(20):  # briefly busy while a killed fio's reads drain
            proc = subprocess.run(["dmsetup", "remove", self.name], capture_output=True, check=False)
            if proc.returncode == 0 or not Path("/dev/mapper", self.name).exists():
                return f"removed read-only mapping {self.name}"
            last = proc.stderr.decode(errors="replace").strip()
            time.sleep(0.05 * (attempt + 1))
        raise ProvisionError(f"could not remove read-only mapping {self.name}: {last}")


SHADOW_INFIX = "-shadow-"  # in a shadow mapping's name, after the run directory's


@dataclass
class ZfsPool(Resource):
    """A ZFS pool the run created, imported under a name of its own (backends/zfs.pool_name).

    Released by exporting it, never destroying: export unmounts its datasets, empties its
    part of the ARC and lets go of its device, which is all teardown needs, and it never
    takes -f, so a pool that is busy is reported rather than forced."""

    kind: ClassVar[str] = "zfs-pool"
    name: str

    def imported(self) -> bool:
        return self.name in zpool_names(self.name)

    def release(self) -> str | None:
        if not self.imported():
            return None
        last = ""
        for attempt in range(20):  # briefly busy while a process lets go of a file in it
            proc = subprocess.run(["zpool", "export", self.name], capture_output=True, check=False)
            if proc.returncode == 0 or not self.imported():
                return f"exported ZFS pool {self.name}"
            last = proc.stderr.decode(errors="replace").strip()
            time.sleep(0.05 * (attempt + 1))
        raise ProvisionError(f"could not export ZFS pool {self.name}: {last}")


def zpool_names(prefix: str) -> list[str]:
    """The imported pools whose names begin with `prefix` (none where zpool is absent)."""
    if which("zpool") is None:
        return []
    listed = subprocess.run(["zpool", "list", "-H", "-o", "name"], capture_output=True, check=False)
    names = listed.stdout.decode(errors="replace").split() if listed.returncode == 0 else []
    return sorted(n for n in names if n.startswith(prefix))


# fscrypt ioctls, from <linux/fscrypt.h> (stable UAPI since Linux 5.4).
FS_IOC_REMOVE_ENCRYPTION_KEY = 0xC0406618

FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER = 2


@dataclass
class FscryptKey(Resource):
    """An fscrypt v2 master key added to the filesystem mounted at `mountpoint`.

    Unmounting the filesystem also wipes it, so after a crash releasing the
    mount is enough; this removes it explicitly on a normal teardown.
    """

    kind: ClassVar[str] = "fscrypt-key"
    mountpoint: Path
    identifier: str = field(default="")  # hex; not secret, it is a hash of the key

    def release(self) -> str | None:
        if not self.identifier or not is_mountpoint(self.mountpoint):
            return None
        arg = bytearray(
            struct.pack(
                "=II16s16sI20s",
                FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER,
                0,
                bytes.fromhex(self.identifier),
                b"",
                0,
                b"",
            )
        )
        fd = os.open(self.mountpoint, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with contextlib.suppress(OSError):  # already gone (e.g. removed by the kernel)
                fcntl.ioctl(fd, FS_IOC_REMOVE_ENCRYPTION_KEY, arg, True)
        finally:
            os.close(fd)
        return f"removed fscrypt key {self.identifier[:8]}…"


KEYCTL_SEARCH, KEYCTL_INVALIDATE = 10, 21

KEY_SPEC_USER_KEYRING = -4

SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}  # the keyctl system call's number

SYS_REQUEST_KEY = {"x86_64": 249, "aarch64": 218}  # request_key's


def keyctl(*args: int | bytes) -> int:
    """keyctl(2) by its system call (no keyutils needed); OSError on failure."""
    return _syscall("keyctl", SYS_KEYCTL, *args)


def request_key(key_type: bytes, description: bytes) -> int:
    """request_key(2) with no callout: the key's serial where one of this process's
    keyrings holds it (as the kernel searches them for dm-crypt's table), else OSError
    (ENOKEY)."""
    return _syscall("request_key", SYS_REQUEST_KEY, key_type, description, 0, 0)


def _syscall(name: str, numbers: dict[str, int], *args: int | bytes) -> int:
    number = numbers.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"{name}'s system call number on {os.uname().machine} is not known here")
    libc = ctypes.CDLL(None, use_errno=True)
    values = [ctypes.c_long(a) if isinstance(a, int) else ctypes.c_char_p(a) for a in args]
    result = libc.syscall(ctypes.c_long(number), *values)
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(result)


@dataclass
class EcryptfsKeys(Resource):
    """eCryptfs authentication tokens ("user" keys named by their signature, hex) that
    ecryptfs-add-passphrase put in root's user keyring. They hold no data, only the key:
    each is invalidated, so none outlives the run."""

    kind: ClassVar[str] = "ecryptfs-keys"
    sigs: list[str] = field(default_factory=list)  # hex; not secret, a hash of the key

    def release(self) -> str | None:
        gone = []
        for sig in self.sigs:
            try:
                key = keyctl(KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", sig.encode(), 0)
            except OSError:
                continue  # not there (unlinked at unmount by ecryptfs_unlink_sigs, or never added)
            with contextlib.suppress(OSError):
                keyctl(KEYCTL_INVALIDATE, key)
                gone.append(sig)
        return f"invalidated eCryptfs key(s) {', '.join(gone)}" if gone else None


@dataclass
class Throttle(Resource):
    """A bytes/s limit, read and write, on a loop device cryptbench attached
    (machine/throttle.py). cgroup v1: set in the root blkio group; the device number
    outlives the attachment (a detached loopN keeps its rule and a later user
    would inherit it), so it is journaled with the rate, and only a rule still
    at that rate is lifted. cgroup v2: set in `cgroup`, a child cgroup
    cryptbench made for it, which is removed (with any fio still in it)."""

    kind: ClassVar[str] = "throttle"
    device: str  # major:minor
    rate: int  # bytes/s
    root: Path = BLKIO  # v1's blkio group
    cgroup: str = ""  # v2: the child cgroup's path; "" on v1

    def set(self) -> None:
        if self.cgroup:
            Path(self.cgroup).mkdir()
            (Path(self.cgroup) / "io.max").write_text(f"{self.device} rbps={self.rate} wbps={self.rate}\n")
            return
        for name in THROTTLE_FILES:
            (self.root / name).write_text(f"{self.device} {self.rate}\n")

    def release(self) -> str | None:
        if self.cgroup:
            return remove_cgroup(Path(self.cgroup))
        try:
            ours = [n for n, r in v1_rules(self.device, self.root).items() if r == self.rate]
        except FileNotFoundError:
            return None
        for name in ours:
            (self.root / name).write_text(f"{self.device} 0\n")
        return f"lifted the {self.rate} bytes/s throttle on block device {self.device}" if ours else None


def remove_cgroup(cgroup: Path) -> str | None:
    """Remove a cgroup cryptbench made, stopping what is still in it (only a
    fio it started there, after a SIGKILL of cryptbench) first."""
    if not cgroup.is_dir():
        return None
    last: OSError | None = None
    for attempt in range(40):
        procs = (cgroup / "cgroup.procs").read_text().split()
        if procs and (cgroup / "cgroup.kill").exists():
            (cgroup / "cgroup.kill").write_text("1")
        elif procs:
            for pid in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            cgroup.rmdir()
            return f"removed cgroup {cgroup} and its block I/O throttle"
        except OSError as e:  # EBUSY while a killed process is still leaving
            last = e
            time.sleep(0.05 * (attempt + 1))
    raise ProvisionError(f"could not remove cgroup {cgroup}: {last}")


KINDS: dict[str, type[Resource]] = {
    cls.kind: cls
    for cls in (
        Mount,
        LoopDevice,
        Process,
        ProcessTree,
        ProcessGroup,
        CommandCgroup,
        SocketFile,
        SecretFile,
        SecretDir,
        FscryptKey,
        EcryptfsKeys,
        DmCrypt,
        DmShadow,
        ZfsPool,
        Throttle,
    )
}


def from_json(data: JsonObject) -> Resource:
    data = dict(data)
    cls = KINDS[data.pop("kind")]
    for key in ("mountpoint", "image", "path", "root"):
        if key in data:
            data[key] = Path(data[key])
    return cls(**data)
