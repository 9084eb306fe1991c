"""The tests' own target directories (tests/support/leaks.py, leak_checked_dir): removed
when nothing is left in them, however the body ended, and kept, with the leak named,
when something is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.leaks import leak_checked_dir

# What these tests check is their directory: what is up machine-wide (a throttle, a loop
# device whose mount went) may be the integration tests' beside them (make test's lane 1,
# scripts/test_lanes.sh), so machine=False, as for every unit test (tests/unit/conftest.py).


def test_a_body_that_fails_leaves_no_directory_behind() -> None:
    made: list[Path] = []
    with pytest.raises(AssertionError, match="the shared run failed"), leak_checked_dir(machine=False) as d:
        made.append(d)
        raise AssertionError("the shared run failed")
    assert not made[0].exists()


def test_a_clean_body_leaves_no_directory_and_a_leak_is_named_and_kept() -> None:
    with leak_checked_dir(machine=False) as d:
        pass
    assert not d.exists()
    held: list[tuple[Path, subprocess.Popen[bytes]]] = []
    try:
        left = pytest.raises(AssertionError, match=r"left behind: \['process")
        with left, leak_checked_dir(machine=False) as d:
            held.append((d, subprocess.Popen(["sleep", "60"], cwd=d)))  # a command still working in it
        assert held[0][0].exists()  # kept for whoever recovers it
    finally:
        for d, proc in held:
            proc.kill()
            proc.wait()
            shutil.rmtree(d, ignore_errors=True)
