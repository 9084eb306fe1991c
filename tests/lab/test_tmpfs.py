"""tmpfs before Linux 6.6 refuses O_DIRECT, so a loop device over an image on
it cannot use direct I/O. A target directory on a tmpfs, and `--ram`'s twins
(whose images live on one), must fall back to a buffered loop device and say
so, not fail."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.lab import RamRun, run_json
from tests.support.leaks import leftovers

pytestmark = [pytest.mark.lab, pytest.mark.integration]
REFUSED = "0 (the backing filesystem (tmpfs) refused direct I/O"


def test_a_target_on_tmpfs_gets_a_buffered_loop_device(tmp_path: Path) -> None:
    on_tmpfs = Path(tempfile.mkdtemp(prefix="cryptbench-lab-", dir="/var/tmp"))  # a tmpfs in the lab
    try:
        doc = run_json(on_tmpfs, tmp_path, ["ext4-loop"], "--skip-protection")
        assert leftovers(on_tmpfs) == []
    finally:
        shutil.rmtree(on_tmpfs, ignore_errors=True)
    details = {t["name"]: t["details"] for t in doc["targets"]}["ext4-loop"]
    assert details["loop_direct_io"].startswith(REFUSED), details
    assert doc["trials"]["failed"] == 0


def test_a_ram_run(ram_run: RamRun) -> None:
    """The `--ram` run of fscrypt (tests/lab/conftest.py): its twins on a tmpfs."""
    doc = ram_run.doc
    targets = {t["name"]: t for t in doc["targets"]}
    assert {"ram:plain", "ram:ext4-loop", "ram:fscrypt"} <= set(targets)
    assert targets["ram:fscrypt"]["encryption_verified"] is True
    assert targets["ram:ext4-loop"]["details"]["loop_direct_io"].startswith(REFUSED)
    assert targets["ext4-loop"]["details"]["loop_direct_io"] == "1"  # the device twin, on xfs
    assert doc["trials"]["failed"] == 0
    kinds = {c["kind"] for c in doc["comparisons"] if c["target"] == "fscrypt"}
    assert "ram" in kinds  # the device target set against its RAM twin
