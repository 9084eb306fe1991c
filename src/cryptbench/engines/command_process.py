"""Running a user's shell command in a trial: timed, its CPU counted, and every
process it started ended when the trial ends.

Each command runs through `/bin/sh -c` in a session (so a process group) of its
own, and, where the kernel offers cgroup v2 (a distribution's unified hierarchy,
or the `unified` mount of a hybrid one), in the trial's own cgroup: a daemon that
leaves the process group with setsid() is still in it, and the cgroup counts the
CPU of every process the command ever started, background ones included. Without
cgroup v2 the CPU figure is the shell's and that of every descendant it waited for
(wait4's rusage); a background process it never waited for is not counted.

Both are journaled in the run's session, so `cryptbench cleanup` ends what a
SIGKILLed run's command left running; and both are released when the trial ends,
which is before any unmount, so a `sleep 600 &` never holds a mount.

A command's output goes to files, not pipes: a background process inherits its
standard output, and a pipe would keep the trial waiting for it to exit.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psutil

from cryptbench.machine.resources import CommandCgroup, ProcessGroup
from cryptbench.machine.session import Session
from cryptbench.model.errors import TrialError

CGROUP_ROOTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
STDERR_LINES = 5  # lines of a failed command's standard error its trial's error keeps
_serial = itertools.count(1)


def cgroup_root(roots: tuple[Path, ...] = CGROUP_ROOTS) -> Path | None:
    """The root of a cgroup v2 hierarchy this process may make cgroups in; None without."""
    for root in roots:
        if (root / "cgroup.controllers").is_file() and os.access(root, os.W_OK):
            return root
    return None


def cgroup_mode() -> str:
    """How a command's processes are held and counted here, in words (a note of each run)."""
    root = cgroup_root()
    if root is not None:
        return (
            f"all of a trial's in a cgroup v2 of its own under {root}: its CPU is counted there, "
            "and everything in it is ended when the trial ends"
        )
    return (
        "with no writable cgroup v2 here: its CPU is its shell's and that of the descendants it "
        "waited for, and the process group is ended when the trial ends"
    )


@dataclass(frozen=True)
class Outcome:
    """One command's run."""

    status: int  # exit status; negative: killed by that signal
    seconds: float  # wall seconds from its start to its shell's exit
    cpu_seconds: float  # CPU seconds, user and system, of its processes (see the module's text)
    stderr_tail: str  # the last STDERR_LINES lines of its standard error


class Sandbox:
    """The commands of one trial (prepare, phases, cleanup): each in its own process
    group, all in one cgroup where there is one. `close()` (or leaving the `with`)
    ends everything still running, and must come before the target is unmounted."""

    def __init__(self, session: Session, logs: Path, root: Path | None = None) -> None:
        self.session, self.logs = session, logs
        self.groups: list[ProcessGroup] = []
        self.cgroup: CommandCgroup | None = None
        if root is not None:
            cgroup = CommandCgroup(root / f"cryptbench-{os.getpid()}-{next(_serial)}")
            session.acquire(cgroup)
            cgroup.path.mkdir()
            self.cgroup = cgroup

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        for group in self.groups:
            self.session.release(group)
        self.groups = []
        if self.cgroup is not None:
            self.session.release(self.cgroup)
            self.cgroup = None

    def _cpu(self) -> float:
        """The cgroup's CPU seconds so far."""
        assert self.cgroup is not None
        for line in (self.cgroup.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return 0.0

    def run(self, script: str, cwd: Path, env: dict[str, str], timeout: float, label: str) -> Outcome:
        """Run `script` to its shell's exit; TrialError if it outlasts `timeout` seconds.
        An interrupt or an error stops its process group first."""
        self.logs.mkdir(parents=True, exist_ok=True)
        out_path, err_path = self.logs / f"{label}.out", self.logs / f"{label}.err"
        argv = ["/bin/sh", "-c", script]
        if self.cgroup is not None:
            # The shell joins the cgroup before it runs a line of the user's, so nothing
            # it starts can be outside it.
            procs = str(self.cgroup.path / "cgroup.procs")
            argv = ["/bin/sh", "-c", 'echo $$ > "$0" && exec /bin/sh -c "$1"', procs, script]
            cpu_before = self._cpu()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.perf_counter()
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        try:
            with contextlib.suppress(psutil.Error):
                group = ProcessGroup(proc.pid, psutil.Process(proc.pid).create_time(), label)
                self.session.acquire(group)
                self.groups.append(group)
            status, rusage = _wait(proc, timeout, label)
            seconds = time.perf_counter() - start
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                proc.wait()
            raise
        cpu = self._cpu() - cpu_before if self.cgroup is not None else rusage.ru_utime + rusage.ru_stime
        return Outcome(status, seconds, cpu, _tail(err_path))


def _wait(proc: subprocess.Popen[bytes], timeout: float, label: str) -> tuple[int, resource.struct_rusage]:
    """Wait for the shell (a pidfd: woken at its exit, not by polling) and reap it with
    its rusage; a signal's exception (Interrupted) comes through."""
    deadline = time.monotonic() + timeout
    fd = os.pidfd_open(proc.pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while not poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            if time.monotonic() >= deadline:
                raise TrialError(f"{label} did not finish within {timeout:g} s")
    finally:
        os.close(fd)
    _pid, wait_status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(wait_status)
    return proc.returncode, rusage


def _tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = path.read_bytes()[-8192:].decode(errors="replace").strip().splitlines()
        return "\n".join(lines[-STDERR_LINES:])
    return ""
