"""Bytes the storage device under the scratch space read and wrote, from its own
counters (/sys/block/DEV/stat, "sectors read" and "sectors written", always 512-byte units):
what wears an SSD, including what the layers added (journals, metadata,
ciphertext padding) and anything else the machine wrote meanwhile. The device is the
physical disk (or disks) at the bottom of the scratch space's stack (measure/stack.py),
never a mapping above it: a dm-crypt mapping's counters count plaintext.
"""

from __future__ import annotations

import re
from pathlib import Path

from cryptbench.machine import system
from cryptbench.measure.stack import Reader
from cryptbench.model.stack import Stack

SYS = Path("/sys")
SECTOR = 512  # bytes: the unit of /sys/block/*/stat, whatever the device's own sector size
READ_SECTORS = 2  # field of /sys/block/DEV/stat: sectors read
WRITE_SECTORS = 6  # field of /sys/block/DEV/stat: sectors written
DISKS_JOINED = "+"  # between the names of several disks counted as one ("sda+sdb")


def device_of(path: Path, sys: Path = SYS) -> str | None:
    """The whole block device (vda, nvme0n1: not a partition, not a mapping or a loop
    device over it) holding `path`, "sda+sdb" where several do, or None when the
    filesystem has none (tmpfs, NFS)."""
    return disks_of(Reader(sys=sys).stack(path))


def disks_of(stack: Stack) -> str | None:
    """The name the counters read for a stack's disks: "vda", "sda+sdb"; None: no disk."""
    return DISKS_JOINED.join(stack.disks) or None


def bytes_written(device: str | None, sys: Path = SYS) -> int | None:
    """The device's bytes written since boot; None without a device or counter."""
    return _counter(device, WRITE_SECTORS, sys)


def bytes_read(device: str | None, sys: Path = SYS) -> int | None:
    """The device's bytes read since boot; None without a device or counter."""
    return _counter(device, READ_SECTORS, sys)


def _counter(device: str | None, field: int, sys: Path) -> int | None:
    """One counter of `device`, or the sum of each of "sda+sdb" (the disks under one
    mapping, md or LVM, as measure/stack.py finds them)."""
    if device is None:
        return None
    total = 0
    for name in device.split(DISKS_JOINED):
        try:
            fields = (sys / "block" / name / "stat").read_text().split()
            total += int(fields[field]) * SECTOR
        except (OSError, IndexError, ValueError):
            return None
    return total


def describe_filesystem(path: Path, sys: Path = SYS) -> dict[str, str]:
    """The filesystem holding `path` as the environment records it: its mount, and the
    device under it (whether it rotates, its model) where /sys/block names one."""
    best = system.filesystem_of(path)
    if best is None:
        return {}
    info = {
        "mountpoint": str(best.mountpoint),
        "source": best.source,
        "fstype": best.fstype,
        "options": best.options,
    }
    dev = re.sub(r"^/dev/", "", best.source)
    for candidate in (dev, re.sub(r"p?\d+$", "", dev)):
        rot = sys / "block" / candidate / "queue" / "rotational"
        if candidate and rot.exists():
            info["device"] = candidate
            info["rotational"] = rot.read_text().strip()
            model = sys / "block" / candidate / "device" / "model"
            if model.exists():
                info["model"] = model.read_text().strip()
            break
    return info
