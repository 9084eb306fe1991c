"""Throttling through cgroup v2's io.max, on a kernel that mounts only v2 (as
Debian 12, Ubuntu and Fedora do): the throttles binding, the throttle's own cgroup
given back after a normal run and after a SIGKILL, and the durability proof.
The same tests run on this host through v1's blkio (tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.commands import selftest
from cryptbench.machine import throttle
from tests.integration import test_cache, test_selftest
from tests.support.cli import cli
from tests.support.leaks import loop_throttles

pytestmark = [pytest.mark.lab, pytest.mark.integration]


@pytest.fixture(autouse=True)
def _cgroup_v2_only() -> None:
    how = throttle.mode()
    assert how.version == 2, f"the lab should offer cgroup v2 only: {how.label} {how.reason}"


def test_selftest_throttles_through_io_max(target_dir: Path, tmp_path: Path) -> None:
    """selftest's throttles bind through io.max: evidence of behaviour, not of speed.

    Under TCG a throttle's exact rate is no known answer: the guest's vCPUs stall
    while the host's tests run, and io.max dispatches late. In the CI run of
    6dbe85b, throttle-40 read 31.8 MB/s [29.4, 36.1] while the same stack moved
    132 MB/s unthrottled; the known answer itself is checked on the host (cgroup
    v1, tests/integration/test_selftest.py). Here: the run completes with every
    check, no throttle is left, no throttled interval lies above its known range
    (the limit binds), the faster throttle measures faster than the slower one, and on
    at least one workload the unthrottled twin (throttle-none) moved more than
    HEADROOM times the faster throttle, so that the throttle, not the stack, set
    the pace. The rates io.max was given are checked below, exactly."""
    # Behaviour needs no ±5 % interval: the least rounds the stopping rule allows.
    db = tmp_path / "r.sqlite"
    asked = selftest.SelftestRequest(target=str(target_dir), db=db, seed=3, precision="50%")
    result = selftest.run(asked)
    assert not loop_throttles()
    assert result.run.exit_code == 0 and len(result.checks) == 6
    twin = selftest.unthrottled(result.document)
    print(f"selftest in the lab: {[(c.what, c.measured, c.ci_low, c.ci_high) for c in result.checks]}")
    print(f"its stack unthrottled (bytes/s): {twin}")
    for c in result.checks:
        assert c.ci_low is not None and c.ci_low <= c.high, c
    fast = [w for w, v in twin.items() if v >= selftest.HEADROOM * selftest.RATES[selftest.FAST]]
    assert fast, f"the stack is too slow here to show either throttle binding: {twin}"
    # The slower throttle is slower on every such workload; its whole interval below 1 on
    # one at least. Not on every one: in the CI run of d3d3d5c (6.1), seq1m-q8-write read
    # 0.60 [0.35, 1.04] at the least rounds allowed, its fsync dispatched late, while the
    # read beside it held.
    ratios = [c for c in result.checks if c.unit == "ratio" and c.what.endswith(tuple(fast))]
    assert ratios, [c.what for c in result.checks]
    for c in ratios:
        assert c.measured < 1.0, c
    assert any(c.ci_high is not None and c.ci_high < 1.0 for c in ratios), ratios


@pytest.mark.lab("6.1", "6.12")  # cgroup v2 on both kernels: cheap, read only
def test_the_io_max_cgroup_is_there_while_provisioned_and_gone_after(target_dir: Path) -> None:
    test_selftest.test_the_throttle_is_on_while_provisioned_and_lifted_after(target_dir)


def test_cleanup_removes_the_io_max_cgroup_after_a_sigkill(target_dir: Path, tmp_path: Path) -> None:
    test_selftest.test_cleanup_lifts_the_throttle_after_a_sigkill(target_dir, tmp_path)


def test_write_throughput_includes_the_final_fsync_under_io_max(target_dir: Path) -> None:
    test_cache.test_write_throughput_includes_the_final_fsync(target_dir)


@pytest.mark.lab("6.1", "6.12")  # cgroup v2 on both kernels: cheap, read only
def test_backends_says_io_max_is_used() -> None:
    proc = cli("backends", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    for name in ("throttle-40", "throttle-20"):
        assert rows[name]["available"], rows[name]["reason"]
        assert "cgroup v2 io.max" in rows[name]["summary"]
