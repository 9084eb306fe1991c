"""Throttling through cgroup v2's io.max, on a kernel that mounts only v2 (as
Debian 12, Ubuntu and Fedora do): the known answer, the throttle's own cgroup
given back after a normal run and after a SIGKILL, and the durability proof.
The same tests run on this host through v1's blkio (tests/integration)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from cryptbench import throttle
from tests.integration import test_cache, test_selftest
from tests.support.cli import cli
from tests.support.leaks import leftovers

pytestmark = [pytest.mark.lab, pytest.mark.integration]


@pytest.fixture(autouse=True)
def _cgroup_v2_only() -> None:
    how = throttle.mode()
    assert how.version == 2, f"the lab should offer cgroup v2 only: {how.label} {how.reason}"


def test_selftest_finds_the_known_answer_through_io_max(tmp_path: Path) -> None:
    """On a tmpfs (/var/tmp in the lab): the known answer needs a device faster than the
    40 MB/s throttle, which the guest's disk under TCG may not be. On the xfs disk a check
    failed in the fresh-clone run of 0f8147c, on a host half as fast as before (which check
    the message did not say; it now lists each). Loop devices over a tmpfs are buffered
    (test_tmpfs.py), and io.max throttles the loop device itself."""
    on_tmpfs = Path(tempfile.mkdtemp(prefix="cryptbench-lab-", dir="/var/tmp"))
    try:
        test_selftest.test_selftest_finds_the_known_answer(on_tmpfs, tmp_path)
        assert leftovers(on_tmpfs) == []
    finally:
        shutil.rmtree(on_tmpfs, ignore_errors=True)


def test_the_io_max_cgroup_is_there_while_provisioned_and_gone_after(target_dir: Path) -> None:
    test_selftest.test_the_throttle_is_on_while_provisioned_and_lifted_after(target_dir)


def test_cleanup_removes_the_io_max_cgroup_after_a_sigkill(target_dir: Path, tmp_path: Path) -> None:
    test_selftest.test_cleanup_lifts_the_throttle_after_a_sigkill(target_dir, tmp_path)


def test_write_throughput_includes_the_final_fsync_under_io_max(target_dir: Path) -> None:
    test_cache.test_write_throughput_includes_the_final_fsync(target_dir)


def test_backends_says_io_max_is_used() -> None:
    proc = cli("backends", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    for name in ("throttle-40", "throttle-20"):
        assert rows[name]["available"], rows[name]["reason"]
        assert "cgroup v2 io.max" in rows[name]["summary"]
