"""A distribution kernel builds ext4 as a module that mount loads on demand:
ext4-loop and fscrypt must run there without anyone loading it first."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cryptbench.backends.filesystem import kernel_filesystems
from cryptbench.commands import backends
from tests.lab import RamRun
from tests.support.targets import provisioned

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


@pytest.mark.lab("6.12")
def test_fscrypt_loads_ext4_on_demand_on_6_12(target_dir: Path) -> None:
    """The same on Debian 13's kernel, without a whole run: ext4 unloaded, both backends
    offered, and a fscrypt target provisioned in this process loads it."""
    if "ext4" in kernel_filesystems():  # an earlier lab test mounted ext4; nothing holds it now
        subprocess.run(["rmmod", "ext4"], check=True)
    assert "ext4" not in kernel_filesystems()
    rows = {str(r["name"]): r for r in backends.run()}
    for name in ("ext4-loop", "fscrypt"):
        assert rows[name]["available"], rows[name]["reason"]
    with provisioned(target_dir, "fscrypt", 4 << 20) as (_session, target):
        (target.path / "f").write_bytes(b"written through fscrypt")
        assert target.details["policy"].startswith("v2, contents AES-256-XTS")
    assert "ext4" in kernel_filesystems()  # mount loaded it
