"""Tests that hold something up and wait, for tests/integration/test_suite_signals.py
to stop their pytest with SIGTERM, as a CI job's time limit or a session's end does:
what they had up must go, as on Ctrl-C.

Not named test_*.py, so pytest collects it only when named on its command line.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cryptbench.cli import main
from tests.support.targets import provisioned

SAYS = "CRYPTBENCH_HELD_UP_SAYS"  # a file where a victim writes its target directory once up


def test_holds_a_fuse_target_up(target_dir: Path) -> None:
    with provisioned(target_dir, "gocryptfs", 16 << 20):
        Path(os.environ[SAYS]).write_text(str(target_dir))
        time.sleep(300)


def test_runs_cryptbench_in_this_process(target_dir: Path, tmp_path: Path) -> None:
    """A run long enough to be stopped in its trials; its exit status is written down."""
    says = Path(os.environ[SAYS])
    says.write_text(str(target_dir))
    db = tmp_path / "r.sqlite"
    argv = ["run", "--backends", "plain", "--size", "16M", "--repeats", "200"]
    code = main([*argv, "--target", str(target_dir), "--db", str(db)])
    says.with_suffix(".code").write_text(str(code))


def test_comes_after_the_run() -> None:
    """Must not run: the suite stops after the test its signal came in."""
    Path(os.environ[SAYS]).with_suffix(".after").write_text("ran")


@pytest.mark.lab
def test_holds_the_kernel_lab_up() -> None:
    time.sleep(600)  # inside the guest; the host's pytest is stopped long before
