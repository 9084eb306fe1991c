"""The cryptbench command line, run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the cryptbench command line as a user would, capturing both streams."""
    return subprocess.run(
        [sys.executable, "-m", "cryptbench", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env if env is not None else os.environ.copy(),
    )


def own_state(home: Path) -> dict[str, str]:
    """This process's environment with state and data dirs of its own under `home`: a
    session fixture's run starts before the first test's isolated_state sets them."""
    return {**os.environ, "XDG_STATE_HOME": str(home / "state"), "XDG_DATA_HOME": str(home / "data")}


def wait_for(
    cond: Callable[[], object],
    proc: subprocess.Popen[str],
    what: str,
    timeout: float = 60,
    every: float = 0.02,
) -> None:
    """Until `cond()` holds, looked at every `every` seconds while `proc` runs (a phase may
    be short). If the process ends first or `timeout` seconds pass, the test fails with its
    output; a process still running is stopped as a user would (SIGTERM, so that it
    undoes what it made), and killed only if that takes over a minute."""
    deadline = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.terminate()
            try:
                out = proc.communicate(timeout=60)[0]
            except subprocess.TimeoutExpired:
                proc.kill()
                out = proc.communicate()[0]
            pytest.fail(f"{what} never came (exit {proc.returncode}):\n{(out or '')[-3000:]}")
        time.sleep(every)
