"""An ext4 filesystem in a preallocated image file on a loop device.

Shared by the `ext4-loop` baseline and `fscrypt`, so that the only difference
between the two stacks is the cipher. The loop device uses direct I/O to its
backing file, so data is not cached twice (once above, once in the image's
page cache) and durability means the host disk, not the host page cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends.base import Availability
from cryptbench.resources import LoopDevice, Mount
from cryptbench.session import Session
from cryptbench.system import is_root, mount_entry, run_cmd, which

MIB = 1 << 20
# mkfs must not leave work for later: lazy init would write in the background
# during the trials and show up as noise in the measurements.
MKFS_OPTIONS = ["-E", "lazy_itable_init=0,lazy_journal_init=0", "-m", "0"]


def image_size(data_bytes: int) -> int:
    """Room for the data file plus ext4's metadata and journal (bytes, MiB-aligned)."""
    raw = int(data_bytes * 1.10) + 64 * MIB
    return (raw + MIB - 1) // MIB * MIB


def probe_ext4_loop() -> Availability:
    if not is_root():
        return Availability(False, "needs root (to attach a loop device and mount a filesystem)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if which(tool) is None:
            return Availability(False, f"{tool} is not installed (apt-get install util-linux e2fsprogs)")
    if not os.path.exists("/dev/loop-control"):
        return Availability(False, "kernel has no loop device support (/dev/loop-control missing)")
    with open("/proc/filesystems") as f:
        if "ext4" not in f.read().split():
            return Availability(False, "kernel has no ext4 support loaded")
    return Availability(True)


@dataclass(frozen=True)
class LoopFs:
    image: Path
    mountpoint: Path
    details: dict[str, str]


@contextmanager
def ext4_on_loop(
    session: Session, name: str, data_bytes: int, extra_features: tuple[str, ...] = ()
) -> Iterator[LoopFs]:
    base = session.path("targets", name)
    base.mkdir(parents=True)
    image = session.path("targets", name, "ext4.img")
    mountpoint = session.path("targets", name, "mnt")
    mountpoint.mkdir()
    size = image_size(data_bytes)
    with open(image, "wb") as f:
        try:
            os.posix_fallocate(f.fileno(), 0, size)
            allocation = "preallocated"
        except OSError:
            f.truncate(size)  # a host filesystem without fallocate: sparse
            allocation = "sparse"
    features = ["-O", ",".join(extra_features)] if extra_features else []
    run_cmd(["mkfs.ext4", "-q", "-F", *MKFS_OPTIONS, *features, str(image)])
    loop = session.acquire(LoopDevice(image))
    try:
        dev = run_cmd(["losetup", "--find", "--show", "--direct-io=on", str(image)]).stdout.decode().strip()
        mount = session.acquire(Mount(mountpoint))
        try:
            run_cmd(["mount", "-t", "ext4", "-o", "noatime", dev, str(mountpoint)])
            dio = Path(f"/sys/block/{Path(dev).name}/loop/dio")
            details = {
                "image": f"{size} bytes, {allocation}",
                "loop_device": dev,
                "loop_direct_io": dio.read_text().strip() if dio.exists() else "unknown",
                "mount": _describe_mount(mountpoint),
                "mkfs": " ".join(["mkfs.ext4", *MKFS_OPTIONS, *features]),
            }
            yield LoopFs(image, mountpoint, details)
        finally:
            session.release(mount)
    finally:
        session.release(loop)


def _describe_mount(mountpoint: Path) -> str:
    entry = mount_entry(mountpoint)
    return f"{entry.fstype} {entry.options}" if entry else ""
