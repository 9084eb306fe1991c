"""mkfs command lines: no lazy init, no discard (which would punch holes in a preallocated image)."""

from __future__ import annotations

import pytest

from cryptbench.backends.base import FILESYSTEMS
from cryptbench.backends.filesystem import MIN_FS_BYTES, fs_image_size, mkfs_command


def test_every_filesystem_is_made_without_discard() -> None:
    assert "nodiscard" in " ".join(mkfs_command("ext4", "/dev/loop0"))
    assert "lazy_itable_init=0" in " ".join(mkfs_command("ext4", "/dev/loop0"))
    assert "-K" in mkfs_command("xfs", "/dev/loop0")
    assert "-K" in mkfs_command("btrfs", "/dev/loop0")


@pytest.mark.parametrize("fs", FILESYSTEMS)
def test_image_size_is_at_least_what_mkfs_accepts(fs: str) -> None:
    size = fs_image_size(fs, 1 << 20)
    assert size >= MIN_FS_BYTES[fs] and size % (1 << 20) == 0
    assert fs_image_size(fs, 1 << 30) >= int(1.1 * (1 << 30))


def test_ext4_features_are_passed() -> None:
    assert mkfs_command("ext4", "/dev/loop0", ("encrypt",))[-3:] == ["-O", "encrypt", "/dev/loop0"]
