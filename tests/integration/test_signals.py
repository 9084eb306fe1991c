"""Ctrl-C, SIGTERM and SIGKILL during a run leave nothing behind and lose no finished trial."""

# Over 60 s of make test (209 s in the fresh-clone run of fee2b51, 2026-11-27): twenty
# real runs SIGKILLed at random moments (each moment drawn across a whole run's length,
# a run that finished first started again), and real processes interrupted in each
# phase: every one a whole start-up, and a cleanup.
from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import psutil
import pytest

from cryptbench.backends import REGISTRY
from tests.support.cli import cli, wait_for
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.targets import available, includes, need_backend

pytestmark = pytest.mark.integration

WANTED = ("plain", "ext4-loop", "fscrypt", "gocryptfs")
BACKENDS = ",".join(available(WANTED))
test_includes = includes(WANTED)


def _start(
    target: Path, db: Path, size: str = "16M", repeats: str = "3", extra: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cryptbench",
            "run",
            "--backends",
            BACKENDS,
            "--size",
            size,
            "--repeats",
            repeats,
            "--target",
            str(target),
            "--db",
            str(db),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def _trials(db: Path, condition: str = "") -> int:
    """Trials stored as ok (and meeting `condition`, an SQL AND clause)."""
    try:
        con = sqlite3.connect(db)
        try:
            return con.execute(f"SELECT count(*) FROM trials WHERE status='ok' {condition}").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def _journal_has(target: Path, text: str) -> bool:
    return any(text in j.read_text() for j in (target / "cryptbench").glob("run-*/journal.jsonl"))


PHASES = {
    "provisioning": lambda target, db: (
        _journal_has(target, '"kind": "loop"') or _journal_has(target, '"kind": "secret"')
    ),
    "trials": lambda target, db: _trials(db) >= 2,
}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("phase", list(PHASES))
def test_signal_tears_down_and_keeps_finished_trials(
    target_dir: Path, tmp_path: Path, sig: signal.Signals, phase: str
) -> None:
    db = tmp_path / "r.sqlite"
    proc = _start(target_dir, db)
    wait_for(lambda: PHASES[phase](target_dir, db), proc, f"the {phase} phase")
    _interrupt_and_check(proc, sig, target_dir, db)
    count(f"interrupts survived: {sig.name} to a real process during {phase}")


def _interrupt_and_check(proc: subprocess.Popen[str], sig: signal.Signals, target: Path, db: Path) -> None:
    """Send sig; the run must end with 128+sig, torn down, its finished trials kept."""
    finished_before = _trials(db)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert leftovers(target) == []
    assert not list((target / "cryptbench").glob("run-*"))
    con = sqlite3.connect(db)
    (status,) = con.execute("SELECT status FROM runs").fetchone()
    assert status == "interrupted"
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    assert _trials(db) >= finished_before


def test_sigkill_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    proc = _start(target_dir, db)
    wait_for(lambda: _trials(db) >= 1, proc, "a stored trial")
    proc.kill()
    proc.communicate()
    assert leftovers(target_dir) or list((target_dir / "cryptbench").glob("run-*"))  # a real mess
    clean = _cleanup(target_dir)
    assert "removed" in clean.stdout
    again = subprocess.run(
        [sys.executable, "-m", "cryptbench", "cleanup", "--target", str(target_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "nothing to clean up" in again.stdout


def _cleanup(target: Path) -> subprocess.CompletedProcess[str]:
    """`cryptbench cleanup`, which must succeed and leave nothing."""
    clean = subprocess.run(
        [sys.executable, "-m", "cryptbench", "cleanup", "--target", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert clean.returncode == 0, clean.stderr
    assert leftovers(target) == []
    assert not list((target / "cryptbench").glob("run-*"))
    return clean


def test_sigkill_of_a_ram_run_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    """Killed while its twins run: the tmpfs, the loop devices over files on it
    and the mounts over those are all found and undone, the tmpfs last."""
    db = tmp_path / "r.sqlite"
    proc = _start(target_dir, db, size="8M", extra=("--ram",))
    wait_for(lambda: _trials(db, "AND target LIKE 'ram:%'") >= 1, proc, "a RAM trial", timeout=120)
    proc.kill()
    proc.communicate()
    mess = leftovers(target_dir)
    assert any(m.startswith("mount") and m.endswith("/ram") for m in mess), mess  # the tmpfs was up
    assert any(m.startswith("loop") and "/ram/" in m for m in mess), mess  # with loop devices over it
    _cleanup(target_dir)


def _mess(target: Path) -> list[str]:
    return leftovers(target) + [str(p) for p in (target / "cryptbench").glob("run-*")]


def _has_scratch(target: Path, pid: int) -> bool:
    return any(p.name.endswith(f"-{pid}") for p in (target / "cryptbench").glob("run-*"))


def _stopped(p: psutil.Process) -> bool:
    try:
        return p.status() in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def _serves_fuse(p: psutil.Process) -> bool:
    """Whether `p` holds /dev/fuse open: it answers a mount's requests."""
    try:
        fds = os.listdir(f"/proc/{p.pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{p.pid}/fd/{fd}") == "/dev/fuse":
                return True
    return False


def _all_stopped(procs: list[psutil.Process]) -> bool:
    return all(_stopped(p) for p in procs)


def _wait_until(cond: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """`timeout` in seconds: a process in an uninterruptible wait (a sync) stops late."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.01)


def _freeze(pid: int) -> list[psutil.Process]:
    """SIGSTOP the run and every process under it, and wait until each has stopped.
    The commands a run starts (umount, cryptsetup, fio) are in sessions of their own,
    so a stop of the run alone leaves a command it started running; a process stops
    only once it leaves the system call it was in, hence the wait. A FUSE server
    (gocryptfs -fg) is left running: the killed run closes its files on the mount as
    it exits, and would wait for ever on a frozen server. Returns the processes it
    stopped under the run, for _thaw."""
    try:
        run = psutil.Process(pid)
        run.suspend()
    except psutil.Error:  # it has just ended on its own
        return []
    _wait_until(lambda: _stopped(run), "the run to stop")
    seen: set[int] = set()
    frozen: list[psutil.Process] = []
    while True:  # a child may have started a child of its own before it stopped
        try:
            fresh = [c for c in run.children(recursive=True) if c.pid not in seen]
        except psutil.NoSuchProcess:
            return frozen
        if not fresh:
            return frozen
        seen.update(c.pid for c in fresh)
        stopping = [c for c in fresh if not _serves_fuse(c)]
        for child in stopping:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.suspend()
        frozen += stopping
        _wait_until(partial(_all_stopped, stopping), "the run's commands to stop")


def _thaw(frozen: list[psutil.Process]) -> None:
    for child in frozen:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.resume()


def test_twenty_sigkills_at_random_moments_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    """Each run is frozen (SIGSTOP) at a random moment after it made its scratch, what
    it has up is read while it cannot change, and it is SIGKILLed: all of that must
    still be there for the next run (which must recover it) or for cleanup. Twenty
    kills must each catch a run with something up, whatever this machine's speed:
    a run past its teardown at its moment (its scratch removed, its process perhaps
    still storing the status or exiting) is started again, not counted. The runs are
    of the selftest suite (a read and a write), not the quick suite's six: every phase
    (provisioning, the probes, layout, trials, teardown) is still in each run, in 10 s
    rather than 16 here, so the twenty moments fall as densely on each phase in less time."""
    db = tmp_path / "r.sqlite"
    started = time.monotonic()
    whole = _start(target_dir, db, size="2M", repeats="1", extra=("--suite", "selftest"))
    _out, err = whole.communicate(timeout=300)
    assert whole.returncode == 0, err
    duration = time.monotonic() - started  # seconds, one uninterrupted run
    rng = random.Random(20261121)  # reproducible moments
    messy = tries = 0
    while messy < 20:
        tries += 1
        assert tries <= 40, f"only {messy} of {tries - 1} runs were caught with something up"
        proc = _start(target_dir, db, size="2M", repeats="1", extra=("--suite", "selftest"))
        wait_for(partial(_has_scratch, target_dir, proc.pid), proc, "the scratch space", timeout=120)
        time.sleep(rng.uniform(0, duration))
        frozen = _freeze(proc.pid) if proc.poll() is None else []
        try:
            up = _mess(target_dir)
            proc.kill()
            _out, err = proc.communicate()
            # Read while its children are still frozen: a umount the run had started would
            # otherwise finish after the kill, and its mount would seem undone by a dead run.
            left = _mess(target_dir)
        finally:
            _thaw(frozen)  # as after a real SIGKILL of the run alone, its children go on
        if proc.returncode == 0:  # finished before its moment: nothing was killed
            continue
        assert proc.returncode == -signal.SIGKILL, err
        if not up:  # frozen after its teardown (it removed the scratch it made): nothing to leave
            continue
        lasting = {m for m in up if not m.startswith("process ")}
        assert lasting <= set(left), f"a SIGKILLed run undid {lasting - set(left)}"
        messy += 1
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert _mess(target_dir) == []
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    again = cli("run", "--backends", "plain", "--size", "1M", "--repeats", "1", "--target", str(target_dir))
    assert again.returncode == 0, again.stderr  # the scratch is usable again
    count("SIGKILLs at random moments survived", messy)
    count("runs past their teardown at their random moment, started again", tries - messy)


APP_SUITE = """
name = "dd-signal"
[[workloads]]
name = "dd-zero"
app = "dd-write"
[[as_published]]
name = "dd-random-as-published"
app = "dd-write"
data = "random"
style = "as-published"
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_an_app_trial(target_dir: Path, tmp_path: Path, sig: signal.Signals) -> None:
    """An application trial (in-process writes, or the study's dd as a child
    process) stopped in the middle: torn down, no dd left, finished trials kept."""
    suite = tmp_path / "dd.toml"
    suite.write_text(APP_SUITE)
    db = tmp_path / "r.sqlite"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "cryptbench", "run", "--suite", str(suite), "--as-published"),
            *("--backends", BACKENDS, "--size", "64M", "--repeats", "3"),
            *("--target", str(target_dir), "--db", str(db)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def in_app_trial() -> bool:
        # a trial's file exists only while it runs (clean-up removes it)
        return _trials(db) >= 1 and any((target_dir / "cryptbench").glob("run-*/**/apps/*/test_*"))

    wait_for(in_app_trial, proc, "an application trial", timeout=120)
    _interrupt_and_check(proc, sig, target_dir, db)
    strays = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [""])[0] == "dd" and str(target_dir) in " ".join(p.info["cmdline"])
    ]
    assert strays == []
    count(f"interrupts survived: {sig.name} to a real process during an app trial")


def test_sigkill_during_the_tamper_probe_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    """Killed while a flipped ciphertext byte may be in place: `cleanup` takes every
    mount, loop device and daemon down, and the scratch space with them."""
    db = tmp_path / "r.sqlite"
    fuse = [b for b in ("gocryptfs", "cryfs") if REGISTRY[b].probe().ok]
    if not fuse:
        need_backend("gocryptfs")
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "cryptbench", "run", "--command", "true", "--repeats", "1"),
            *("--backends", ",".join(["plain", *fuse]), "--target", str(target_dir), "--db", str(db)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def tampering() -> bool:
        # the probe's own file, through a FUSE target's view (targets/<name>/<n>/mnt/…)
        return any(
            p.name == "tamper" and "plain" not in p.parts
            for p in (target_dir / "cryptbench").glob("run-*/targets/*/*/*/.cryptbench-protection-*/*")
        )

    wait_for(tampering, proc, "the tamper probe", timeout=120)
    proc.kill()
    proc.communicate()
    assert leftovers(target_dir)  # a FUSE mount and its daemon, left by the kill
    _cleanup(target_dir)
