"""cryptsetup command lines (the code path that runs wherever device-mapper exists)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.backends.luks import (
    NO_WORKQUEUE,
    VARIANTS,
    device_mapper_missing,
    format_command,
    open_command,
)

KEY = Path("/dev/shm/cryptbench-secrets-x/luks-1")


@pytest.mark.parametrize("bits", [256, 512])
def test_format_uses_a_key_file_luks2_and_xts(bits: int) -> None:
    argv = format_command("/dev/loop7", KEY, bits)
    assert argv[:2] == ["cryptsetup", "luksFormat"] and argv[-1] == "/dev/loop7"
    assert argv[argv.index("--key-file") + 1] == str(KEY)
    assert argv[argv.index("--type") + 1] == "luks2"
    assert argv[argv.index("--cipher") + 1] == "aes-xts-plain64"
    assert argv[argv.index("--key-size") + 1] == str(bits)
    assert "--batch-mode" in argv  # no "Are you sure?" on a terminal


def test_open_adds_the_workqueue_flags_only_when_asked() -> None:
    plain = open_command("/dev/loop7", KEY, "cryptbench-run-1-luks-aes256-1", no_workqueue=False)
    fast = open_command("/dev/loop7", KEY, "cryptbench-run-1-luks-aes256-1", no_workqueue=True)
    assert not set(NO_WORKQUEUE) & set(plain)
    assert set(NO_WORKQUEUE) <= set(fast)
    assert fast[-2:] == ["/dev/loop7", "cryptbench-run-1-luks-aes256-1"]
    assert plain[plain.index("--key-file") + 1] == str(KEY)


def test_variants_are_registered_with_ext4_loop_as_baseline() -> None:
    for name in VARIANTS:
        assert REGISTRY[name].baseline == "ext4-loop" and REGISTRY[name].encrypted


@pytest.mark.skipif(os.path.exists("/dev/mapper/control"), reason="this kernel has device-mapper")
def test_without_device_mapper_backends_says_so_in_those_words() -> None:
    assert device_mapper_missing() is not None
    for name in VARIANTS:
        avail = REGISTRY[name].probe()
        assert not avail.ok and "the kernel has no device-mapper" in avail.reason
