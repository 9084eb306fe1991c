"""Running a measured command (fio, tar, dd) as a child that cannot outlive its trial.

The child runs in its own session, so a Ctrl-C at the terminal reaches
cryptbench first, which then stops the child and tears down in order; it is
journaled (pid and start time), so that after a SIGKILL of cryptbench
`cleanup` stops it before unmounting the target under it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable

import psutil

from cryptbench.machine.resources import Process
from cryptbench.machine.session import Session
from cryptbench.model.errors import TrialError


class Stalled(TrialError):
    """The child was stopped because a patience check said waiting was pointless."""


def _signal_group(proc: subprocess.Popen[str], sig: int) -> None:
    """Signal the child's whole process group (its session: start_new_session). The group
    outlives a leader that has exited, so its processes are reached all the same; a
    group already empty is no error."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def run_child(
    argv: list[str],
    session: Session | None,
    timeout: float,
    env: dict[str, str] | None = None,
    patience: tuple[float, Callable[[], str | None]] | None = None,
    name: str | None = None,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run argv to its end and return its exit status and output.

    Stopped (SIGTERM, then SIGKILL) on an interrupt, a timeout or any other
    error; a timeout is a TrialError ("did not finish within …"). With
    `patience` (seconds, check), every that many seconds the check is asked
    whether to go on waiting: a reason not to is raised as `Stalled`.
    `name`: what to call it, where argv[0] only starts it (a shell that execs it).
    `pass_fds`: descriptors it inherits (fio reading a user's files as /dev/fd/N).
    """
    name = name or argv[0].rsplit("/", 1)[-1]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
        pass_fds=pass_fds,
    )
    journaled = None
    try:
        if session is not None:
            with contextlib.suppress(psutil.Error):  # already gone: nothing to journal
                journaled = session.acquire(Process(proc.pid, psutil.Process(proc.pid).create_time(), name))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                # Retrying communicate() after its timeout loses no output.
                out, err = proc.communicate(timeout=max(0.0, min(left, patience[0]) if patience else left))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    raise TrialError(f"{name} did not finish within {timeout:.0f} s") from None
                why = patience[1]() if patience else None
                if why is not None:
                    raise Stalled(f"{name} stopped: {why}") from None
    except BaseException:
        # Interrupted, timed out, or anything else: the child must not outlive the trial,
        # nor what it started. Its session is its process group: fio's forked job
        # processes, a shell's background command. SIGTERM to all of it first (fio stops
        # its jobs cleanly), then SIGKILL to whatever is left.
        _signal_group(proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        if journaled is not None and session is not None:
            session.release(journaled)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
