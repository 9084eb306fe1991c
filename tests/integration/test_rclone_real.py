"""rclone-crypt for real: Debian's rclone mounting a crypt remote without its VFS cache,
measured on the work it can do (writes from a file's start, reads anywhere), the rest
of a suite left out with the reason, and cleaned up after a SIGKILL.
Its protection is probed in the shared whole run (test_protection_real.py), and its
config file's secrecy in test_secrets.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.reliability import count
from tests.support.targets import need_backend, requires_root

pytestmark = pytest.mark.integration

# The two writes fio makes from a file's start (the layout, a write trial) at a queue
# depth of 8, and a read at random offsets.
FROM_START = """
name = "from-start"
description = "what rclone-crypt can do: writes from a file's start, reads anywhere"
[[workloads]]
name = "seq1m-q8-write"
rw = "write"
bs = "1M"
iodepth = 8
[[workloads]]
name = "seq1m-q8-read"
rw = "read"
bs = "1M"
iodepth = 8
[[workloads]]
name = "rnd4k-q1-read"
rw = "randread"
bs = "4K"
iodepth = 1
"""


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "from-start.toml"
    path.write_text(FROM_START)
    return path


def test_it_reads_and_writes_from_the_start_with_the_sync_in_the_clock(
    target_dir: Path, tmp_path: Path
) -> None:
    need_backend("rclone-crypt")
    db = tmp_path / "r.sqlite"
    proc = cli(
        *("run", "--backends", "rclone-crypt", "--suite", str(_suite(tmp_path)), "--size", "16M"),
        *("--repeats", "1", "--skip-protection", "--target", str(target_dir), "--db", str(db), "--json"),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trials"] == {**doc["trials"], "ok": 6, "failed": 0}, doc["trials"]
    t = {x["name"]: x for x in doc["targets"]}["rclone-crypt"]
    assert t["encryption_verified"] is True and t["marker_in_backing"] is False
    assert t["details"]["vfs_cache_mode"] == "off"
    assert doc["plan"]["write_new_file"] is True
    assert any("can write a file only from its start" in n for n in doc["notes"]), doc["notes"]
    with sqlite3.connect(db) as c:
        synced = c.execute(
            "SELECT t.target, t.workload FROM metrics m JOIN trials t ON t.id = m.trial_id "
            "WHERE m.name = 'backing_sync_seconds'"
        ).fetchall()
        jobs = dict(c.execute("SELECT target || '/' || workload, job_file FROM trials").fetchall())
    # only rclone's write: plain's fsync reaches its disk
    assert synced == [("rclone-crypt", "seq1m-q8-write")]
    assert "create_on_open=1" in jobs["rclone-crypt/seq1m-q8-write"].splitlines()
    assert leftovers(target_dir) == []


def test_the_quick_suite_runs_all_but_its_random_writes_and_says_why(
    target_dir: Path, tmp_path: Path
) -> None:
    need_backend("rclone-crypt")
    db = tmp_path / "r.sqlite"
    args = ["--backends", "rclone-crypt", "--size", "8M", "--repeats", "1", "--skip-protection"]
    proc = cli("run", *args, "--target", str(target_dir), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    left_out = {(d["workload"], d["target"]) for d in doc["plan"]["not_run"]}
    assert left_out == {("rnd4k-q32-write", "rclone-crypt"), ("rnd4k-q1-write", "rclone-crypt")}
    ran = {(r["workload"], r["target"]) for r in doc["results"] if r["metric"] == "throughput"}
    assert not left_out & ran
    assert {w for w, t in ran if t == "rclone-crypt"} == {
        "seq1m-q8-read",
        "seq1m-q8-write",
        "rnd4k-q32-read",
        "rnd4k-q1-read",
    }
    assert doc["trials"] == {"ok": 6 + 4, "failed": 0}  # plain's six, rclone's four
    answer = cli("show", "--db", str(db), env={**os.environ, "COLUMNS": "80"}).stdout
    flat = " ".join(answer.split())
    assert "Not ranked: rclone-crypt (not run at rnd4k-q32-write and rnd4k-q1-write: rclone's mount" in flat
    rows = [line for line in answer.splitlines() if line.startswith("rclone-crypt")]
    assert any("not run" in line for line in rows) and not any("failed" in line for line in rows), answer
    assert leftovers(target_dir) == []


@requires_root
def test_sigkill_with_rclone_mounted_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    need_backend("rclone-crypt")
    args = ["run", "--backends", "rclone-crypt", "--suite", str(_suite(tmp_path)), "--size", "16M"]
    args += ["--repeats", "3", "--target", str(target_dir), "--db", str(tmp_path / "r.sqlite")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cryptbench", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )

    def rclone_up() -> list[str]:
        # leftovers() lists a helper as "process PID ARGV…"
        return [x for x in leftovers(target_dir) if x.startswith("process ") and "rclone" in x]

    deadline = time.monotonic() + 120
    while not rclone_up():
        assert proc.poll() is None and time.monotonic() < deadline, "rclone never mounted"
        time.sleep(0.1)
    time.sleep(1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert rclone_up(), leftovers(target_dir)  # a real mess: the daemon outlives the run
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert leftovers(target_dir) == []
    count("SIGKILLs with rclone mounted, cleaned up")
