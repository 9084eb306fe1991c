"""Faults during a run, on real targets: signals in every phase, a helper that
dies, a disk that fills up, two runs at once.

The runs here are in-process (`run.run`, as the command line calls it) with a
progress object that strikes at a chosen phase, so each phase is hit exactly,
not by luck of timing. test_signals.py does the same through real processes.
"""

# Over 60 s of make test (122 s in the fresh-clone run of fee2b51, 2026-11-27): a signal
# struck in every phase of a real run (in process, exactly), a helper killed, a disk
# filled, two runs at once: each a run with its targets.
from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from cryptbench.commands import run
from cryptbench.model.errors import DiskFull
from cryptbench.planning.request import RunRequest
from cryptbench.trial.context import NullProgress, TrialSpec
from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.self_signals import send_self
from tests.support.targets import available, includes, need_backend, requires_root

pytestmark = pytest.mark.integration

WANTED = ("plain", "ext4-loop", "fscrypt", "gocryptfs")
ALL = ",".join(available(WANTED))
test_includes = includes(WANTED)


class Strike(NullProgress):
    """Sends `sig` to this process when the run reaches `phase` (a phase text prefix,
    or "trial" for the end of the third trial); counts trials finished before it."""

    def __init__(self, phase: str, sig: int) -> None:
        self.phase_prefix, self.sig = phase, sig
        self.struck_at: str | None = None
        self.ok_before = 0

    def _strike(self, where: str) -> None:
        if self.struck_at is None:
            self.struck_at = where
            send_self(self.sig)

    def phase(self, text: str) -> None:
        if text.startswith(self.phase_prefix):
            self._strike(text)

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
        if self.struck_at is None:
            self.ok_before += ok
            if self.phase_prefix == "trial" and spec.seq == 2:
                self._strike(f"after trial {spec.seq}")


def _db_state(db: Path) -> tuple[str, int]:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        (status,) = con.execute("SELECT status FROM runs").fetchone()
        (ok,) = con.execute("SELECT count(*) FROM trials WHERE status='ok'").fetchone()
        return status, ok
    finally:
        con.close()


PHASES = {
    "provisioning": "provisioning fscrypt" if "fscrypt" in ALL else "provisioning plain",
    "proving encryption": "proving encryption",
    "probing": "probing what each target protects",
    "layout": "writing the",
    "trial": "trial",
    "teardown": "tearing down",
}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("phase", list(PHASES))
def test_a_signal_in_any_phase_tears_down_and_keeps_finished_trials(
    target_dir: Path, tmp_path: Path, phase: str, sig: int
) -> None:
    db = tmp_path / "r.sqlite"
    strike = Strike(PHASES[phase], sig)
    # The selftest suite's two workloads (a read and a write), not the quick suite's six:
    # every phase is in the run all the same, and a strike at the teardown no longer waits
    # for six workloads' trials (27 s such a run took in a fresh-clone run on 2026-11-28).
    request = RunRequest(backends=ALL, suite="selftest", size="4M", repeats=2, target=str(target_dir), db=db)
    outcome = run.run(request, progress=strike)
    assert strike.struck_at is not None, f"the run never reached {phase}"
    assert outcome.exit_code == 128 + sig
    assert outcome.status == ("complete" if phase == "teardown" else "interrupted")
    assert leftovers(target_dir) == []
    assert not list((target_dir / "cryptbench").glob("run-*"))
    status, ok = _db_state(db)
    assert status == outcome.status
    assert ok == strike.ok_before  # every finished trial, and only those
    count(f"interrupts survived: {signal.Signals(sig).name} during {phase}")


def _kill_helper_during_a_trial(target_dir: Path, stop: threading.Event) -> list[int]:
    """Kill gocryptfs (SIGKILL) while fio runs a trial on it; return the pid killed."""
    killed: list[int] = []
    while not stop.is_set() and not killed:
        for p in psutil.process_iter(["name", "cmdline"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if p.info["name"] == "fio" and re.search(r"/jobs/\d{5}-\S*-gocryptfs\.fio", cmd):
                for d in psutil.process_iter(["name", "cmdline"]):
                    if d.info["name"] == "gocryptfs" and str(target_dir) in " ".join(d.info["cmdline"] or []):
                        d.kill()
                        killed.append(d.pid)
                break
        time.sleep(0.005)
    return killed


def test_a_helper_that_dies_fails_its_trial_and_the_run_goes_on(target_dir: Path, tmp_path: Path) -> None:
    need_backend("gocryptfs")
    db = tmp_path / "r.sqlite"
    stop = threading.Event()
    killed: list[int] = []
    killer = threading.Thread(target=lambda: killed.extend(_kill_helper_during_a_trial(target_dir, stop)))
    killer.start()
    try:
        outcome = run.run(
            RunRequest(backends="plain,gocryptfs", size="32M", repeats=2, target=str(target_dir), db=db)
        )
    finally:
        stop.set()
        killer.join()
    assert killed, "gocryptfs was never killed"
    assert outcome.status == "complete" and outcome.exit_code == 1
    con = sqlite3.connect(db)
    failed = con.execute("SELECT target, error FROM trials WHERE status='failed'").fetchall()
    plain_ok = con.execute("SELECT count(*) FROM trials WHERE target='plain' AND status='ok'").fetchone()[0]
    notes = " ".join(outcome.document.notes)
    con.close()
    assert len(failed) == 1, failed
    assert failed[0][0] == "gocryptfs"
    assert f"gocryptfs (pid {killed[0]}) was killed by signal 9 (SIGKILL)" in failed[0][1]
    assert "target gocryptfs is lost" in failed[0][1]
    assert plain_ok == 2 * 6  # the other target went on to the end
    assert "remaining trial(s) were not run" in notes
    assert leftovers(target_dir) == []
    count("helper deaths survived (gocryptfs SIGKILLed mid-trial)")


@pytest.fixture
def small_fs(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 300 MiB tmpfs: room for the plan, and easy to fill."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m", "tmpfs", str(mnt)], check=True)
    yield mnt
    left = leftovers(mnt / "cryptbench")
    subprocess.run(["umount", str(mnt)], check=True)
    assert not left, left


class FillTheDisk(NullProgress):
    """After the first trial another process takes all free space, and the data file's
    blocks with it (as if it had been sparse)."""

    def __init__(self, fs: Path) -> None:
        self.fs, self.done, self.ok_before = fs, False, 0

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
        if self.done:
            return
        self.ok_before += ok
        self.done = True
        for data in self.fs.glob("cryptbench/run-*/targets/plain/*/cryptbench.dat"):
            os.truncate(data, 0)
        with open(self.fs / "filler", "wb") as f:
            block = b"\xff" * (1 << 20)
            try:
                while True:
                    f.write(block)
                    f.flush()
            except OSError:
                pass


@requires_root
def test_disk_full_during_a_trial_stops_cleanly(small_fs: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    fill = FillTheDisk(small_fs)
    with pytest.raises(DiskFull, match=r"filled up during .* on plain .*No space left on device"):
        run.run(
            RunRequest(backends="plain", size="16M", repeats=3, target=str(small_fs), db=db), progress=fill
        )
    assert fill.done
    status, ok = _db_state(db)
    assert status == "failed"
    assert ok == fill.ok_before == 1
    assert not list((small_fs / "cryptbench").glob("run-*"))  # scratch freed
    (small_fs / "filler").unlink()
    count("disk-full trials survived")


def test_two_runs_at_once_share_one_database(tmp_path: Path) -> None:
    """Same scratch: the second refuses. Two scratches: both runs store every trial."""
    db = tmp_path / "shared.sqlite"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()

    def start(target: Path) -> subprocess.Popen[str]:
        args = ["run", "--backends", "plain", "--size", "2M", "--repeats", "4", "--target", str(target)]
        return subprocess.Popen(
            [sys.executable, "-m", "cryptbench", *args, "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    first, second = start(a), start(b)
    deadline = time.monotonic() + 60
    while not list(a.glob("cryptbench/run-*/journal.jsonl")):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.01)
    third = cli("run", "--backends", "plain", "--size", "2M", "--target", str(a), "--db", str(db))
    assert third.returncode == 2, third.stderr
    assert f"another cryptbench run (pid {first.pid}) is using {a}/cryptbench" in third.stderr
    for proc in (first, second):
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    per_run = dict(con.execute("SELECT run_id, count(*) FROM trials WHERE status='ok' GROUP BY run_id"))
    con.close()
    assert sorted(per_run.values()) == [4 * 6, 4 * 6]
    count("concurrent runs into one database without loss")
    count("second runs on a busy scratch refused")


@requires_root
def test_teardown_detaches_a_loop_device_whose_image_was_deleted(target_dir: Path) -> None:
    """The kernel shows such a backing file as "…/ext4.img (deleted)"; it is still ours."""
    from cryptbench.backends.filesystem import loop_device
    from cryptbench.machine.session import Session

    session = Session.create(target_dir)
    try:
        image = session.path("ext4.img")
        with open(image, "wb") as f:
            f.truncate(8 << 20)
        with loop_device(session, image, direct_io=False) as loop:
            image.unlink()
            backing = Path(f"/sys/block/{Path(loop.dev).name}/loop/backing_file").read_text()
            assert backing.strip().endswith("ext4.img (deleted)")
    finally:
        session.close()
    assert leftovers(target_dir) == []
    assert not Path(f"/sys/block/{Path(loop.dev).name}/loop/backing_file").exists()
    count("loop devices over a deleted image detached at teardown")


KILLED_WITH_A_LOOP = """
import os, sys, time
from pathlib import Path
from cryptbench.backends.filesystem import loop_device
from cryptbench.machine.session import Session
session = Session.create(Path(sys.argv[1]))
image = session.path("ext4.img")
with open(image, "wb") as f:
    f.truncate(8 << 20)
with loop_device(session, image, direct_io=False) as loop:
    print(loop.dev, session.run_dir, flush=True)
    time.sleep(600)
"""


@requires_root
def test_cleanup_detaches_loops_of_a_run_whose_directory_was_removed(target_dir: Path) -> None:
    """Seen here: a run stopped while provisioning, its run directory removed
    under it, left loop devices over "…/ext4.img (deleted)", and `cleanup` said
    "nothing to clean up"."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WITH_A_LOOP, str(target_dir)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    dev, run_dir = proc.stdout.readline().split()
    proc.kill()
    proc.wait()
    subprocess.run(["rm", "-rf", run_dir], check=True)  # the directory goes, the loop device stays
    backing = Path(f"/sys/block/{Path(dev).name}/loop/backing_file")
    assert backing.read_text().strip() == f"{run_dir}/ext4.img (deleted)"
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert f"detached {dev}" in clean.stdout, clean.stdout
    assert not backing.exists()
    assert "nothing to clean up" in cli("cleanup", "--target", str(target_dir)).stdout
    count("loop devices of a removed run directory detached by cleanup")
