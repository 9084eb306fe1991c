"""Throttling through cgroup v2's io.max, on a kernel that mounts only v2 (as
Debian 12, Ubuntu and Fedora do): the known answer, the throttle's own cgroup
given back after a normal run and after a SIGKILL, and the durability proof.
The same tests run on this host through v1's blkio (tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench import throttle
from tests.integration import test_cache, test_selftest
from tests.support.cli import cli

pytestmark = [pytest.mark.lab, pytest.mark.integration]


@pytest.fixture(autouse=True)
def _cgroup_v2_only() -> None:
    how = throttle.mode()
    assert how.version == 2, f"the lab should offer cgroup v2 only: {how.label} {how.reason}"


def test_selftest_finds_the_known_answer_through_io_max(target_dir: Path, tmp_path: Path) -> None:
    """On the guest's xfs disk. The known answer needs a target faster than the 40 MB/s
    throttle without it, which under TCG on a slow host it may not be: in the fresh-clone
    run of 0f8147c, on a host half as fast as before, a check failed here; on the guest's
    tmpfs (a buffered loop device) it was slower still (throttle-40 wrote 18.8 MB/s, with a
    fio experiment running beside the lab)."""
    test_selftest.test_selftest_finds_the_known_answer(target_dir, tmp_path)


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
