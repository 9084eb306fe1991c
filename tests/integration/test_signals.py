"""Ctrl-C, SIGTERM and SIGKILL during a run leave nothing behind and lose no finished trial."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY
from tests.conftest import leftovers

BACKENDS = ",".join(n for n in ("plain", "ext4-loop", "fscrypt", "gocryptfs") if REGISTRY[n].probe().ok)


def _start(target: Path, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cryptbench",
            "run",
            "--backends",
            BACKENDS,
            "--size",
            "16M",
            "--repeats",
            "3",
            "--target",
            str(target),
            "--db",
            str(db),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def _wait_for(cond, proc: subprocess.Popen[str], timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the phase"
        time.sleep(0.02)


def _trials(db: Path) -> int:
    try:
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT count(*) FROM trials WHERE status='ok'").fetchone()[0]
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
    _wait_for(lambda: PHASES[phase](target_dir, db), proc)
    finished_before = _trials(db)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert leftovers(target_dir) == []
    assert not list((target_dir / "cryptbench").glob("run-*"))
    con = sqlite3.connect(db)
    (status,) = con.execute("SELECT status FROM runs").fetchone()
    assert status == "interrupted"
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    assert _trials(db) >= finished_before


def test_sigkill_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    proc = _start(target_dir, db)
    _wait_for(lambda: _trials(db) >= 1, proc)
    proc.kill()
    proc.communicate()
    assert leftovers(target_dir) or list((target_dir / "cryptbench").glob("run-*"))  # a real mess
    clean = subprocess.run(
        [sys.executable, "-m", "cryptbench", "cleanup", "--target", str(target_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert clean.returncode == 0, clean.stderr
    assert "removed" in clean.stdout
    assert leftovers(target_dir) == []
    assert not list((target_dir / "cryptbench").glob("run-*"))
    again = subprocess.run(
        [sys.executable, "-m", "cryptbench", "cleanup", "--target", str(target_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "nothing to clean up" in again.stdout
