"""make test's lane 2 runs the unit tests under SCHED_IDLE (scripts/test_lanes.sh); a test
marked `timed` runs at the normal policy for its length (tests/unit/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

INNER = "CRYPTBENCH_LANE_INNER"  # set only in the pytest this test starts under SCHED_IDLE
HERE = Path(__file__).resolve()


@pytest.mark.skipif(INNER not in os.environ, reason="the inner half of the test below")
@pytest.mark.timed
def test_inner_timed() -> None:
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


@pytest.mark.skipif(INNER not in os.environ, reason="the inner half of the test below")
def test_inner_untimed() -> None:
    assert os.sched_getscheduler(0) == os.SCHED_IDLE


def test_a_timed_test_leaves_sched_idle_for_its_length(tmp_path: Path) -> None:
    inner = ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "--basetemp", str(tmp_path / "inner")]
    # the timed one first: the untimed one after it finds SCHED_IDLE given back
    ids = [f"{HERE}::test_inner_timed", f"{HERE}::test_inner_untimed"]
    done = subprocess.run(
        ["chrt", "--idle", "0", sys.executable, "-m", "pytest", *inner, *ids],
        cwd=HERE.parent.parent.parent,
        env={**os.environ, INNER: "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
