"""Running a measured command (fio, tar, dd) as a child that cannot outlive its trial.

The child runs in its own session, so a Ctrl-C at the terminal reaches
cryptbench first, which then stops the child and tears down in order; it is
journaled (pid and start time), so that after a SIGKILL of cryptbench
`cleanup` stops it before unmounting the target under it.
"""

from __future__ import annotations

import contextlib
import subprocess

import psutil

from cryptbench.errors import TrialError
from cryptbench.resources import Process
from cryptbench.session import Session


def run_child(
    argv: list[str],
    session: Session | None,
    timeout: float,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv to its end and return its exit status and output.

    Stopped (SIGTERM, then SIGKILL) on an interrupt, a timeout or any other
    error; a timeout is a TrialError ("did not finish within …").
    """
    name = argv[0].rsplit("/", 1)[-1]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    journaled = None
    try:
        if session is not None:
            with contextlib.suppress(psutil.Error):  # already gone: nothing to journal
                journaled = session.acquire(Process(proc.pid, psutil.Process(proc.pid).create_time(), name))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TrialError(f"{name} did not finish within {timeout:.0f} s") from None
    except BaseException:
        # Interrupted, timed out, or anything else: the child must not outlive the trial.
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    finally:
        if journaled is not None and session is not None:
            session.release(journaled)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
