"""make test's lane 2 runs the unit tests under SCHED_IDLE (scripts/test_lanes.sh); a test
marked `timed` runs at the normal policy for its length (tests/unit/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_test_marked_beside_gets_no_target(pytester: pytest.Pytester) -> None:
    """Lane 2 runs the integration tests marked `beside` next to lane 1's targets: one that
    asks for a target directory (and its machine-wide leak check) fails at once. (No test
    here asks for one unmarked: its leak check would see lane 1's.)"""
    pytester.makeconftest("from tests.conftest import target_dir  # noqa: F401")
    pytester.makepyfile(
        test_inner="""
        import pytest

        @pytest.mark.beside
        def test_beside(target_dir):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*a test marked beside needs nothing of the machine to itself*"])
