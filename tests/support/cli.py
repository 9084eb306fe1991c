"""The cryptbench command line, run as a user runs it."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import kernel_lab

# In the kernel lab's guest, starting a Python that imports cryptbench takes tens of seconds
# of emulated CPU: test_backends_says_io_max_is_used, one `cryptbench backends`, took 30 s
# in make test's time table at c2486be. So the commands a guest test runs to completion
# (`run` among them: its trials are fio's and the helpers' processes either way) run there
# through the same main() in the test's own process; their start as a process of their
# own, and every command a test signals (a Popen of argv(), never cli()), is tested on the
# host. main() restores the signal handlers it installs and reads the environment when
# called, which in_process sets.
IN_PROCESS_IN_GUEST = frozenset({"backends", "cleanup", "run", "show", "stack"})


def argv(*args: str) -> list[str]:
    """The command line that runs cryptbench with `args`, as this interpreter."""
    return [sys.executable, "-m", "cryptbench", *args]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the cryptbench command line as a user would, capturing both streams."""
    if kernel_lab.in_guest() and args and args[0] in IN_PROCESS_IN_GUEST:
        return in_process(*args, env=env)
    return subprocess.run(
        argv(*args),
        capture_output=True,
        text=True,
        check=False,
        env=env if env is not None else os.environ.copy(),
    )


def in_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command line's main() in this process, with `env` as its environment, both
    streams captured and its exit status (argparse's SystemExit included) returned as a
    process's would be."""
    from cryptbench import cli as entry

    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.copy()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = entry.main(list(args))
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else int(e.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    # A handler left behind would take the next test's Ctrl-C, or the guest's SIGTERM.
    left = [s.name for s, h in handlers.items() if signal.getsignal(s) is not h]
    assert not left, f"cryptbench {' '.join(args)} left its own handler for {', '.join(left)}"
    return subprocess.CompletedProcess(argv(*args), status, out.getvalue(), err.getvalue())


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
