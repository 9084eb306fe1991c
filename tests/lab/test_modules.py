"""A distribution kernel builds ext4 as a module that mount loads on demand:
ext4-loop and fscrypt must run there without anyone loading it first."""

from __future__ import annotations

import pytest

from cryptbench.backends.filesystem import kernel_filesystems
from tests.lab import RamRun

pytestmark = [pytest.mark.lab, pytest.mark.integration]


def test_ext4_loop_and_fscrypt_with_ext4_not_yet_loaded(ram_run: RamRun) -> None:
    """The `--ram` run of fscrypt (tests/lab/conftest.py) began with ext4 unloaded."""
    assert not ram_run.ext4_loaded_before
    for name in ("ext4-loop", "fscrypt"):
        assert ram_run.rows[name]["available"], ram_run.rows[name]["reason"]
    targets = {t["name"]: t for t in ram_run.doc["targets"]}
    assert {"plain", "ext4-loop", "fscrypt"} <= set(targets)
    assert targets["fscrypt"]["encryption_verified"] is True
    assert ram_run.doc["trials"]["failed"] == 0
    assert "ext4" in kernel_filesystems()  # mount loaded it
