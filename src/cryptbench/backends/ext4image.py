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

from cryptbench.backends.base import Availability, TargetSpec, target_dir
from cryptbench.backends.filesystem import (
    describe_mount,
    fs_image_size,
    loop_device,
    mkfs_command,
    mounted,
    probe_fs,
    probe_loop,
)
from cryptbench.machine.session import Session
from cryptbench.machine.system import run_cmd


def image_size(data_bytes: int) -> int:
    return fs_image_size("ext4", data_bytes)


def probe_ext4_loop() -> Availability:
    base = probe_loop()
    return base if not base.ok else probe_fs("ext4")


@dataclass(frozen=True)
class LoopFs:
    image: Path
    mountpoint: Path
    details: dict[str, str]


def preallocate(image: Path, size: int) -> str:
    """Create `image` with `size` bytes allocated; say how it was allocated."""
    with open(image, "xb") as f:
        try:
            os.posix_fallocate(f.fileno(), 0, size)
            return "preallocated"
        except OSError:
            f.truncate(size)  # a host filesystem without fallocate: sparse
            return "sparse (the host filesystem cannot preallocate)"


@contextmanager
def ext4_on_loop(
    session: Session,
    spec: TargetSpec,
    data_bytes: int,
    extra_features: tuple[str, ...] = (),
    mount_options: tuple[str, ...] = (),
) -> Iterator[LoopFs]:
    base = target_dir(session, spec)
    image = base / "ext4.img"
    mountpoint = base / "mnt"
    mountpoint.mkdir()
    size = image_size(data_bytes)
    allocation = preallocate(session.check_inside(image), size)
    mkfs = mkfs_command("ext4", str(image), extra_features)
    run_cmd(mkfs)
    with (
        loop_device(session, image, direct_io=True) as loop,
        mounted(session, "ext4", loop.dev, mountpoint, mount_options),
    ):
        yield LoopFs(
            image,
            mountpoint,
            {
                "image": f"{size} bytes, {allocation}",
                "loop_device": loop.dev,
                "loop_direct_io": loop.direct_io,
                "mount": describe_mount(mountpoint),
                "mkfs": " ".join(mkfs[:-1]),
            },
        )
