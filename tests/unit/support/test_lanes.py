"""make test's lane 2 runs the unit tests under SCHED_IDLE (scripts/test_lanes.sh); a test
marked `timed` runs at the normal policy for its length (tests/unit/conftest.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

INNER = Path(__file__).resolve().parent / "lanes_inner.py"
LANES = REPO / "scripts" / "test_lanes.sh"


def test_a_timed_test_leaves_sched_idle_for_its_length(tmp_path: Path) -> None:
    args = ["-p", "no:cacheprovider", "-o", "addopts=", "-q", "--basetemp", str(tmp_path / "inner")]
    # the timed one first: the untimed one after it finds SCHED_IDLE given back
    ids = [f"{INNER}::test_inner_timed", f"{INNER}::test_inner_untimed"]
    done = subprocess.run(
        ["chrt", "--idle", "0", sys.executable, "-m", "pytest", *args, *ids],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_a_test_marked_beside_gets_no_target(pytester: pytest.Pytester) -> None:
    """Lane 2 runs the integration tests marked `beside` next to lane 1's targets: one that
    asks for a target directory (and its machine-wide leak check) fails at once, whether
    by target_dir, a shared run's session fixture, or leak_checked_dir in its body. (No
    test here asks for one unmarked: its leak check would see lane 1's.)"""
    pytester.makeconftest(
        """
        import pytest
        from tests.conftest import pytest_runtest_protocol, target_dir  # noqa: F401
        from tests.support.leaks import leak_checked_dir

        @pytest.fixture(scope="session")
        def shared_run():
            with leak_checked_dir() as d:
                yield d
        """
    )
    pytester.makepyfile(
        test_inner="""
        import pytest
        from tests.support.leaks import leak_checked_dir

        @pytest.mark.beside
        def test_own(target_dir):
            pass

        @pytest.mark.beside
        def test_shared(shared_run):
            pass

        @pytest.mark.beside
        def test_body():
            with leak_checked_dir():
                pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(errors=2, failed=1)
    for name in ("test_own", "test_shared", "test_body"):
        result.stdout.fnmatch_lines([f"*{name} is marked beside: it needs nothing of the machine to itself*"])


def _lanes() -> list[list[str]]:
    """Each lane's pytest arguments, read from scripts/test_lanes.sh as it passes them."""
    text = LANES.read_text().replace("\\\n", " ")
    return [shlex.split(args) for args in re.findall(r'"\$pytest" ([^\n]*)', text)]


def _collected(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_two_lanes_run_every_test_once() -> None:
    """make test runs the suite as two pytests side by side, each with its own paths and
    marker expression: together they must collect exactly the tests a plain `pytest` does,
    none twice (a test in neither would pass unseen, one in both would run beside itself)."""
    lanes = _lanes()
    assert len(lanes) == 2, lanes
    one, two = (_collected(*args) for args in lanes)
    assert one and two
    assert one & two == set()
    assert one | two == _collected()
