"""make test's lane 2 runs the unit tests under SCHED_IDLE (scripts/test_lanes.sh); a test
marked `timed` runs at the normal policy for its length (tests/unit/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

INNER = Path(__file__).resolve().parent / "lanes_inner.py"


def test_a_timed_test_leaves_sched_idle_for_its_length(tmp_path: Path) -> None:
    args = ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "--basetemp", str(tmp_path / "inner")]
    # the timed one first: the untimed one after it finds SCHED_IDLE given back
    ids = [f"{INNER}::test_inner_timed", f"{INNER}::test_inner_untimed"]
    done = subprocess.run(
        ["chrt", "--idle", "0", sys.executable, "-m", "pytest", *args, *ids],
        cwd=INNER.parent.parent.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
