"""mkfs command lines: no lazy init, no discard (which would punch holes in a preallocated image)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cryptbench.backends.base import FILESYSTEMS
from cryptbench.backends.filesystem import MIN_FS_BYTES, fs_image_size, mkfs_command
from cryptbench.machine import system
from cryptbench.machine.system import crypto_missing, kernel_config, kernel_module


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


def _modules(tmp_path: Path, builtin: str, dep: str) -> Path:
    d = tmp_path / "6.1.0-test"
    d.mkdir()
    (d / "modules.builtin").write_text(builtin)
    (d / "modules.dep").write_text(dep)
    return tmp_path


def test_a_filesystem_module_counts_as_support(tmp_path: Path) -> None:
    """Debian's kernel has ext4 as a module that mount loads: not in /proc/filesystems yet, but there."""
    root = _modules(
        tmp_path,
        "kernel/fs/btrfs/btrfs.ko\n",
        "kernel/fs/ext4/ext4.ko.xz: kernel/lib/crc16.ko.xz kernel/fs/mbcache.ko.xz\n"
        "kernel/drivers/md/dm-crypt.ko.xz: kernel/drivers/md/dm-mod.ko.xz\n",
    )
    assert kernel_module("ext4", root, "6.1.0-test") == "module"
    assert kernel_module("btrfs", root, "6.1.0-test") == "built in"
    assert kernel_module("dm-crypt", root, "6.1.0-test") == "module"
    assert kernel_module("dm_mod", root, "6.1.0-test") is None  # only named as a dependency
    assert kernel_module("crc16", root, "6.1.0-test") is None
    assert kernel_module("xfs", root, "6.1.0-test") is None
    assert kernel_module("ext4", root, "another-release") is None  # no index for it: not there


def test_the_kernel_config_is_read_from_boot_when_proc_has_none(tmp_path: Path) -> None:
    release = os.uname().release
    (tmp_path / f"config-{release}").write_text(
        "CONFIG_FS_ENCRYPTION=y\nCONFIG_EXT4_FS=m\n# CONFIG_X is not set\n"
    )
    missing = tmp_path / "no-config.gz"
    assert kernel_config("CONFIG_FS_ENCRYPTION", tmp_path, missing) == "y"
    assert kernel_config("CONFIG_EXT4_FS", tmp_path, missing) == "m"
    assert kernel_config("CONFIG_X", tmp_path, missing) == "n"
    assert kernel_config("CONFIG_X", tmp_path / "nowhere", missing) is None


def test_a_crypto_algorithm_is_missing_only_where_the_kernel_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registered in /proc/crypto, or a module, or built in: there. Configured out: missing,
    with the option named. Nothing readable: not known, so provisioning is left to tell."""
    proc = tmp_path / "crypto"
    proc.write_text("name         : xts(aes)\ndriver       : xts(ecb(aes-generic))\n\n")
    config: dict[str, str | None] = {"CONFIG_CRYPTO_ADIANTUM": "n"}
    module: dict[str, str | None] = {}
    monkeypatch.setattr(system, "kernel_config", lambda option: config.get(option))
    monkeypatch.setattr(system, "kernel_module", lambda name: module.get(name))
    missing = crypto_missing("adiantum(xchacha12,aes)", "CONFIG_CRYPTO_ADIANTUM", "adiantum", proc)
    assert missing == "the kernel has no adiantum(xchacha12,aes) (CONFIG_CRYPTO_ADIANTUM is not set)"
    assert crypto_missing("xts(aes)", "CONFIG_CRYPTO_XTS", "xts", proc) is None  # registered
    module["adiantum"] = "module"  # Debian 12: loaded on first use
    assert crypto_missing("adiantum(xchacha12,aes)", "CONFIG_CRYPTO_ADIANTUM", "adiantum", proc) is None
    module.clear()
    config["CONFIG_CRYPTO_ADIANTUM"] = None  # no configuration to read: not known
    assert crypto_missing("adiantum(xchacha12,aes)", "CONFIG_CRYPTO_ADIANTUM", "adiantum", proc) is None
