"""Bytes the storage device under the scratch space read and wrote, from its own
counters (/sys/block/DEV/stat, "sectors read" and "sectors written", always 512-byte units):
what wears an SSD, including what the layers added (journals, metadata,
ciphertext padding) and anything else the machine wrote meanwhile.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cryptbench.machine import system

SYS = Path("/sys")
SECTOR = 512  # bytes: the unit of /sys/block/*/stat, whatever the device's own sector size
READ_SECTORS = 2  # field of /sys/block/DEV/stat: sectors read
WRITE_SECTORS = 6  # field of /sys/block/DEV/stat: sectors written


def device_of(path: Path, sys: Path = SYS) -> str | None:
    """The whole block device (vda, nvme0n1, not a partition) holding `path`,
    or None when the filesystem has none (tmpfs, overlay, NFS)."""
    st = os.stat(path)
    node = sys / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if os.major(st.st_dev) == 0 or not node.exists():
        return None
    real = node.resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name if (sys / "block" / real.name / "stat").exists() else None


def bytes_written(device: str | None, sys: Path = SYS) -> int | None:
    """The device's bytes written since boot; None without a device or counter."""
    return _counter(device, WRITE_SECTORS, sys)


def bytes_read(device: str | None, sys: Path = SYS) -> int | None:
    """The device's bytes read since boot; None without a device or counter."""
    return _counter(device, READ_SECTORS, sys)


def _counter(device: str | None, field: int, sys: Path) -> int | None:
    if device is None:
        return None
    try:
        fields = (sys / "block" / device / "stat").read_text().split()
        return int(fields[field]) * SECTOR
    except (OSError, IndexError, ValueError):
        return None


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
