"""Recovery after a SIGKILL: what a dead run left, found by where it is rather than by
the journal (which a kill may have cut short): helpers whose arguments point into the
run directory, mounts under it, dm-crypt mappings and ZFS pools named after it, loop
devices whose backing file is there, and scratch directories' orphaned loop devices.
The resources themselves, and their journal, are machine/resources.py's.
"""

from __future__ import annotations

from pathlib import Path

import psutil

from cryptbench.machine.resources import (
    SHADOW_INFIX,
    DmCrypt,
    DmShadow,
    LoopDevice,
    Mount,
    Process,
    SecretDir,
    ZfsPool,
    loop_backings,
    remove_cgroup,
    zpool_names,
)
from cryptbench.machine.system import mounts
from cryptbench.machine.throttle import CGROUP
from cryptbench.model.errors import ProvisionError

# Programs any run starts with paths in its run directory as arguments; each backend
# names its own beyond these (Backend.programs).
CORE_HELPERS = frozenset(
    {
        "fio",
        "mkfs.ext4",
        "mke2fs",
        "mkfs.xfs",
        "mkfs.btrfs",
        "mount",
        "umount",
        "losetup",
        "fusermount3",
        "fusermount",
    }
)


def stop_processes_using(run_dir: Path, programs: frozenset[str] = CORE_HELPERS) -> list[str]:
    """Stop helpers (by program name, one of `programs`) whose arguments point into `run_dir`.

    Only for recovery of a dead run: its helpers run in their own sessions and
    outlive it, and a `mount` or `losetup` it started may still complete.
    """
    prefix = str(run_dir.resolve())
    found = []
    for p in psutil.process_iter(["name", "cmdline", "create_time", "status"]):
        try:
            if p.info["name"] not in programs or p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            args = p.info["cmdline"] or []
            if any(a.startswith(prefix) or f"={prefix}" in a for a in args[1:]):
                found.append(Process(p.pid, p.info["create_time"], p.info["name"]))
        except psutil.Error:
            continue
    return [m for m in (proc.release() for proc in found) if m]


def _unmount_under(root: Path, *, tolerate: bool) -> list[str]:
    messages = []
    for entry in sorted(
        (m for m in mounts() if m.mountpoint.is_relative_to(root)),
        # The deepest first (a mount inside a mount); at one depth, FUSE mounts
        # last: a qemu export is busy until the filesystem on its loop is gone.
        key=lambda m: (len(m.mountpoint.parts), not m.fstype.startswith("fuse")),
        reverse=True,
    ):
        try:
            msg = Mount(entry.mountpoint, fuse=entry.fstype.startswith("fuse")).release()
        except ProvisionError:
            if not tolerate:
                raise
            continue
        if msg:
            messages.append(msg)
    return messages


def sweep(run_dir: Path, secret_dirs: list[Path]) -> list[str]:
    """Release what lives under `run_dir` but the journal does not name."""
    messages = _unmount_under(run_dir.resolve(), tolerate=True)
    root = run_dir.resolve()
    # ZFS pools, named after the run directory, sit on its loop devices and mappings.
    for pool in zpool_names(f"cryptbench-{root.name}-"):
        msg = ZfsPool(pool).release()
        if msg:
            messages.append(msg)
    # dm-crypt mappings, named after the run directory, sit between a
    # filesystem and its loop device.
    for dev in sorted(Path("/dev/mapper").glob(f"cryptbench-{root.name}-*")):
        shadow = dev.name.startswith(f"cryptbench-{root.name}{SHADOW_INFIX}")
        msg = (DmShadow if shadow else DmCrypt)(dev.name).release()
        if msg:
            messages.append(msg)
    # cgroup v2 throttles, named likewise (their fio was stopped above).
    for cgroup in sorted(CGROUP.glob(f"cryptbench-{root.name}-*")):
        msg = remove_cgroup(cgroup)
        if msg:
            messages.append(msg)
    for image in {backing for _dev, backing in loop_backings() if backing.is_relative_to(root)}:
        msg = LoopDevice(image).release()
        if msg:
            messages.append(msg)
    # A FUSE export (qemu-storage-daemon) under a loop device can only go
    # once the loop device has: the mounts that refused above, again.
    messages += _unmount_under(root, tolerate=False)
    for d in secret_dirs:
        msg = SecretDir(d).release()
        if msg:
            messages.append(msg)
    return messages


def detach_orphans(scratch: Path) -> list[str]:
    """Detach loop devices over files in `scratch`'s run directories that no
    longer exist: a run whose directory was removed under it (by hand, or while
    its provisioning was cut short) leaves no journal to replay and no directory
    to sweep, only loop devices over "…/ext4.img (deleted)"."""
    messages = []
    root = scratch.resolve()
    for image in sorted({b for _dev, b in loop_backings() if b.is_relative_to(root)}):
        run_dir = root / image.relative_to(root).parts[0]
        if run_dir.name.startswith("run-") and not run_dir.exists():
            msg = LoopDevice(image).release()
            if msg:
                messages.append(msg)
    return messages
