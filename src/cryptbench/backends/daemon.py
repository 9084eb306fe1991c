"""Starting the helper daemons of FUSE stacks (gocryptfs, securefs, CryFS, EncFS,
qemu-storage-daemon) the same way: in the foreground of a session of their own,
journaled by pid and start time, their output in a log in the scratch space,
a password (if any) written to their standard input and never to argv or the
environment.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import psutil

from cryptbench.backends.base import Helper
from cryptbench.machine.interrupts import mask_lifted, signals_blocked
from cryptbench.machine.resources import Process
from cryptbench.machine.session import Session
from cryptbench.machine.system import is_mountpoint, which
from cryptbench.model.errors import ProvisionError

MOUNT_TIMEOUT = 60.0  # seconds: CryFS and securefs derive keys with scrypt/argon2 first


def fuse_available() -> str | None:
    """Why FUSE stacks cannot run here, or None."""
    if which("fusermount3") is None and which("fusermount") is None:
        return "fusermount3 is not installed (apt-get install fuse3)"
    if not os.path.exists("/dev/fuse"):
        return "kernel has no FUSE support (/dev/fuse missing)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "this user cannot open /dev/fuse"
    return None


def log_tail(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def spawn(
    session: Session, argv: list[str], log: Path, name: str, kind: type[Process] = Process, **popen: Any
) -> tuple[subprocess.Popen[bytes], Process]:
    """Start `argv` in a session of its own (Ctrl-C at the terminal is ours to
    handle, not its), its output in `log`, journaled as `kind`; `popen` adds
    Popen's own options (stdin, env, cwd, umask)."""
    # Held from start to journal: an interrupt between them would leave a
    # process nobody knows to stop. The child itself starts unmasked.
    with signals_blocked():
        with open(session.check_inside(log), "wb") as logf, mask_lifted():
            proc = subprocess.Popen(
                argv, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True, **popen
            )
        try:
            created = psutil.Process(proc.pid).create_time()
        except psutil.Error:
            created = 0.0
        journaled = session.acquire(kind(proc.pid, created, name))
    assert isinstance(journaled, kind)
    return proc, journaled


def start(
    session: Session,
    name: str,
    argv: Sequence[str],
    mountpoint: Path,
    log: Path,
    *,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float = MOUNT_TIMEOUT,
) -> Process:
    """Start `argv` and wait until `mountpoint` is mounted; return the journaled daemon.

    `stdin` (a password) is written to a pipe and the pipe closed. The daemon
    is stopped again if it exits or does not mount in time.
    """
    exe = which(argv[0])
    if exe is None:
        raise ProvisionError(f"{argv[0]} is not installed")
    proc, daemon = spawn(
        session,
        [exe, *argv[1:]],
        log,
        name,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        env={**os.environ, **env} if env is not None else None,
    )
    if stdin is not None and proc.stdin is not None:
        with suppress(BrokenPipeError):
            proc.stdin.write(stdin)
        with suppress(BrokenPipeError):
            proc.stdin.close()
    deadline = time.monotonic() + timeout
    while not is_mountpoint(mountpoint):
        if proc.poll() is not None:
            session.release(daemon)
            raise ProvisionError(
                f"{name} failed to mount: {log_tail(log) or f'exit status {proc.returncode}'}"
            )
        if time.monotonic() > deadline:
            session.release(daemon)
            raise ProvisionError(f"{name} did not mount within {timeout:.0f} s: {log_tail(log)}")
        time.sleep(0.02)
    return daemon


def helper(daemon: Process) -> Helper:
    return Helper(daemon.name, daemon.pid, daemon.create_time)
