"""Filesystems on block devices: mkfs, loop devices and mounts, for every stack
that puts a filesystem in an image (ext4-loop, fscrypt, the disk images, LUKS).

Two traps are avoided here, for every filesystem:
- mkfs must not leave work for later: ext4's lazy inode-table init would write
  in the background during the trials and show up as noise;
- mkfs must not discard: on a loop device a discard punches holes in the image
  file, so a "preallocated" image would silently become a sparse one.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.base import Availability
from cryptbench.machine.interrupts import signals_blocked
from cryptbench.machine.resources import LoopDevice, Mount
from cryptbench.machine.session import Session
from cryptbench.machine.system import is_root, kernel_module, mount_entry, mounts, run_cmd, which
from cryptbench.model.errors import ProvisionError

MIB = 1 << 20

MKFS: dict[str, list[str]] = {
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard", "-m", "0"],
    "xfs": ["mkfs.xfs", "-q", "-f", "-K"],
    "btrfs": ["mkfs.btrfs", "-q", "-f", "-K"],
}
# The smallest filesystem each mkfs accepts (bytes); xfsprogs 5.19+ refuses
# anything under 300 MiB.
MIN_FS_BYTES = {"ext4": 0, "xfs": 300 * MIB, "btrfs": 128 * MIB}
PACKAGE = {"ext4": "e2fsprogs", "xfs": "xfsprogs", "btrfs": "btrfs-progs"}


def mkfs_command(fs: str, device: str, features: tuple[str, ...] = ()) -> list[str]:
    """The mkfs command line for `fs` on `device` (`features`: ext4 -O features)."""
    if fs not in MKFS:
        raise ValueError(f"unknown filesystem {fs!r}")
    extra = ["-O", ",".join(features)] if features else []
    return [*MKFS[fs], *extra, device]


def fs_image_size(fs: str, data_bytes: int) -> int:
    """Room for the data file plus the filesystem's metadata and journal (bytes, MiB-aligned)."""
    raw = max(int(data_bytes * 1.10) + 64 * MIB, MIN_FS_BYTES[fs])
    return (raw + MIB - 1) // MIB * MIB


def kernel_filesystems() -> set[str]:
    with open("/proc/filesystems") as f:
        return {line.split()[-1] for line in f if line.strip()}


def probe_loop(*tools: str) -> Availability:
    """Root, the loop driver and the tools a loop-device stack needs."""
    if not is_root():
        return Availability(False, "needs root (to attach a loop device and mount a filesystem)")
    for tool in ("losetup", "mount", "umount", *tools):
        if which(tool) is None:
            return Availability(False, f"{tool} is not installed (apt-get install util-linux)")
    if not os.path.exists("/dev/loop-control"):
        if kernel_module("loop") == "module":
            return Availability(
                False, "the loop driver is not loaded (no /dev/loop-control): run `modprobe loop`"
            )
        return Availability(False, "kernel has no loop device support (/dev/loop-control missing)")
    return Availability(True)


def probe_fs(fs: str) -> Availability:
    tool = MKFS[fs][0]
    if which(tool) is None:
        return Availability(False, f"{tool} is not installed (apt-get install {PACKAGE[fs]})")
    # A filesystem built as a module is loaded by mount itself (the kernel asks
    # modprobe), as on Debian, Ubuntu and Fedora kernels.
    if fs not in kernel_filesystems() and kernel_module(fs) is None:
        return Availability(
            False,
            f"kernel has no {fs}: not in /proc/filesystems and no {fs} module for {os.uname().release} "
            f"under /lib/modules (install the kernel's modules package, or use a kernel with {fs})",
        )
    return Availability(True)


@dataclass(frozen=True)
class Loop:
    """A loop device attached over an image, and what became of direct I/O to it."""

    dev: str  # /dev/loopN
    direct_io: str  # sysfs's loop/dio: "1" or "0"; "0 (why)" where it was asked for and refused


@contextmanager
def loop_device(session: Session, backing: Path, *, direct_io: bool) -> Iterator[Loop]:
    """Attach `backing` (a file cryptbench made) to a new loop device; detach on exit.

    With `direct_io`, a backing filesystem that refuses O_DIRECT (tmpfs before
    Linux 6.6, some FUSE and network filesystems) gets a buffered loop device
    instead, and the reason is kept: the data then passes through the image's
    page cache as well as the filesystem's above it.
    """
    loop = session.acquire(LoopDevice(session.check_inside(backing)))
    try:
        refused = ""
        # Held: an interrupt while losetup runs would release the loop device
        # before losetup attached it (it runs on in its own session).
        with signals_blocked():
            try:
                dev = _attach(backing, direct_io)
            except ProvisionError as e:
                if not direct_io:
                    raise
                loop.release()  # an older losetup may have attached before it failed
                dev = _attach(backing, False)
                refused = f"0 ({describe_fs(backing.parent)} refused direct I/O: {e})"
        yield Loop(dev, refused or loop_direct_io(dev))
    finally:
        session.release(loop)


def _attach(backing: Path, direct_io: bool) -> str:
    args = ["losetup", "--find", "--show", *(["--direct-io=on"] if direct_io else []), str(backing)]
    return run_cmd(args).stdout.decode().strip()


def describe_fs(path: Path) -> str:
    """The filesystem `path` lives on, as mount names it ("tmpfs"), for reasons a user reads."""
    best = None
    for m in mounts():
        if path.resolve().is_relative_to(m.mountpoint) and (
            best is None or len(m.mountpoint.parts) > len(best.mountpoint.parts)
        ):
            best = m
    return f"the backing filesystem ({best.fstype})" if best else "the backing filesystem"


LOOP_SET_STATUS64 = 0x4C04
LOOP_GET_STATUS64 = 0x4C05
LOOP_INFO64_SIZE = 232  # bytes: struct loop_info64 (<linux/loop.h>)
LO_FLAGS_OFFSET = 52  # bytes into it
LO_FLAGS_AUTOCLEAR = 4


def set_autoclear(dev: str) -> None:
    """Let the kernel detach `dev` when its last user (the mounted filesystem) lets go.

    For loop devices over a FUSE export: if the export goes first (its daemon
    killed with the run), the loop's backing path reads "/" and nothing can
    tell it was ours any more; with autoclear, unmounting the filesystem is
    enough. Call only while the filesystem holds the device open.
    """
    fd = os.open(dev, os.O_RDONLY)
    try:
        info = bytearray(LOOP_INFO64_SIZE)
        fcntl.ioctl(fd, LOOP_GET_STATUS64, info, True)
        flags = int.from_bytes(info[LO_FLAGS_OFFSET : LO_FLAGS_OFFSET + 4], "little") | LO_FLAGS_AUTOCLEAR
        info[LO_FLAGS_OFFSET : LO_FLAGS_OFFSET + 4] = flags.to_bytes(4, "little")
        fcntl.ioctl(fd, LOOP_SET_STATUS64, bytes(info))
    finally:
        os.close(fd)


def loop_direct_io(dev: str) -> str:
    dio = Path(f"/sys/block/{Path(dev).name}/loop/dio")
    return dio.read_text().strip() if dio.exists() else "unknown"


@contextmanager
def mounted(
    session: Session, fs: str, device: str, mountpoint: Path, options: tuple[str, ...] = ()
) -> Iterator[Path]:
    """Mount `device` (holding `fs`) at `mountpoint`, with noatime and `options`; unmount on exit."""
    mount = session.acquire(Mount(session.check_inside(mountpoint)))
    try:
        # Held, as for losetup: otherwise the mount could appear after its release.
        with signals_blocked():
            run_cmd(["mount", "-t", fs, "-o", ",".join(("noatime", *options)), device, str(mountpoint)])
        yield mountpoint
    finally:
        session.release(mount)


def describe_mount(mountpoint: Path) -> str:
    entry = mount_entry(mountpoint)
    return f"{entry.fstype} {entry.options}" if entry else ""
