"""The user's own commands as workloads, for real: plain, gocryptfs and every FUSE
filesystem present, through the command line as a user runs them.

Timing checks use `sleep`, whose length is known: it cannot return early, so the lower
bound is exact; the upper bound allows the shell's fork and exec and a loaded 2-core
machine's scheduling (the kernel lab's guest runs beside these tests): a second and a
half, generous, yet less than any second a misplaced clock would add (a preparation,
a copy of the inputs, a cache drop and its sync).
"""

# Over 60 s of make test (162 s in the fresh-clone run of fee2b51, 2026-11-27): the
# user's own commands on every FUSE target, timed against `sleep`s of known length, and
# background processes and open files at teardown.
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cryptbench.trial.runner import WARM
from tests.support.burner import write_burner
from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.targets import available, includes, need_backend

pytestmark = pytest.mark.integration

WANTED = ("plain", "gocryptfs", "securefs", "cryfs", "encfs")
FUSE = ",".join(available(WANTED))
test_includes = includes(WANTED)
SLACK = 1.5  # seconds a command's measured time may exceed its sleep (module docstring)
BURN = 0.4  # CPU seconds the burner spends


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # The protection probes are tested in test_protection_real.py; here CryFS's, which
    # wait out its block cache on every look, would slow every run.
    return cli("run", "--skip-protection", *args)


def _trials(db: Path) -> list[sqlite3.Row]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return con.execute("SELECT * FROM trials ORDER BY seq").fetchall()
    finally:
        con.close()


def _metrics(db: Path) -> dict[tuple[int, str], float]:
    """(trial seq, metric) -> value."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT t.seq, m.name, m.value FROM metrics m JOIN trials t ON t.id = m.trial_id")
        return {(seq, name): value for seq, name, value in rows}
    finally:
        con.close()


def _strays(command: str) -> list[str]:
    """Processes running exactly `command` (a program and its arguments, such as
    "sleep 6122"): what a command started and left. Not cryptbench's own process, whose
    command line holds the command as an argument."""
    return [
        f"{p.pid} {command}"
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE and " ".join(p.info["cmdline"] or []) == command
    ]


def test_a_suite_of_commands_on_every_fuse_target(target_dir: Path, tmp_path: Path) -> None:
    """Timing, phases in order, the process tree's CPU, inputs copied once per target,
    the environment, cold and warm caches, and the hyperfine-like answer."""
    inputs = tmp_path / "photos"
    inputs.mkdir()
    (inputs / "big.raw").write_bytes(os.urandom(8 << 20))
    log = tmp_path / "log"
    burner = write_burner(tmp_path, BURN)
    pass_file = tmp_path / "pass"
    pass_file.write_text("correct horse battery staple\n")
    pass_file.chmod(0o600)
    suite = tmp_path / "mine.toml"
    suite.write_text(
        f"""
name = "mine"
[[workloads]]
name = "sleep"
command = "sleep 0.4"
[[workloads]]
name = "phased"
inputs = "photos"
prepare = "echo ready > prepared"
env = {{ PHOTO_APP = "darktable" }}
[[workloads.phases]]
name = "count"
command = '''test -f prepared && echo x >> "$CRYPTBENCH_INPUTS/count" && \\
n=$(wc -l < "$CRYPTBENCH_INPUTS/count") && \\
echo "$CRYPTBENCH_TARGET $CRYPTBENCH_TRIAL $n $CRYPTBENCH_WORKLOAD $PHOTO_APP" >> {log}'''
[[workloads.phases]]
name = "burn"
command = "sh -c 'python3 {burner}'"
[[workloads.phases]]
name = "nap"
command = "sleep 0.3; env > {tmp_path}/env.txt"
[[workloads]]
name = "cold-read"
inputs = "photos"
command = "cat $CRYPTBENCH_INPUTS/big.raw > /dev/null"
[[workloads]]
name = "warm-read"
inputs = "photos"
cache = "warm"
command = "cat $CRYPTBENCH_INPUTS/big.raw > /dev/null"
"""
    )
    db = tmp_path / "r.sqlite"
    # Two trials each: the second shows the inputs were copied once (the count goes on, not
    # back to 1); a third showed nothing more. With --skip-protection below, the test took
    # 44 s instead of 87 on the idle 2-core VM (2026-11-29).
    args = ("--suite", str(suite), "--backends", FUSE, "--repeats", "2", "--target", str(target_dir))
    wide = {**os.environ, "COLUMNS": "300"}  # the answer's sentences unfolded, to be searched
    # --skip-protection as _run: the probes are no part of what this test checks.
    done = cli(
        *("run", "--skip-protection", *args, "--db", str(db), "--passphrase-file", str(pass_file)),
        *("--seed", "5"),
        env=wide,
    )
    assert done.returncode == 0, done.stderr
    targets = FUSE.split(",")
    trials = _trials(db)
    metrics = _metrics(db)
    assert len(trials) == 4 * 2 * len(targets) and all(t["status"] == "ok" for t in trials)

    for t in trials:
        seconds = metrics[(t["seq"], "seconds")]
        if t["workload"] == "sleep":
            assert 0.4 <= seconds <= 0.4 + SLACK, (t["target"], seconds)
        if t["workload"] == "phased":
            out = json.loads(t["raw_output"])
            assert [p["name"] for p in out["phases"]] == ["count", "burn", "nap"]
            assert 0.3 <= metrics[(t["seq"], "nap.seconds")] <= 0.3 + SLACK
            assert seconds == pytest.approx(sum(p["seconds"] for p in out["phases"]))
            # the burner is a grandchild of the phase's shell: the tree's CPU holds it
            burn = metrics[(t["seq"], "burn.command_cpu_seconds")]
            assert BURN <= burn <= BURN + SLACK, (t["target"], burn)
            assert metrics[(t["seq"], "command_cpu_seconds")] >= burn
        # cold: caches dropped before the clock, as for every workload; warm: kept
        warm = t["workload"] == "warm-read"
        assert t["cache_method"] == (WARM if warm else "drop_caches")
        assert (t["cache_resident_bytes"] is None) == warm
        assert (t["seq"], "device_bytes_read") in metrics

    # Inputs copied once per target: the count kept in the copy grows trial by trial.
    counts: dict[str, list[tuple[int, int]]] = {}
    for line in log.read_text().splitlines():
        where, trial, count, workload, app = line.split()
        assert (workload, app) == ("phased", "darktable")
        counts.setdefault(where, []).append((int(trial), int(count)))
    assert len(counts) == len(targets)
    assert all(seen == [(1, 1), (2, 2)] for seen in counts.values()), counts

    # A cold read of the 8 MiB input on plain reads it from the device; a warm one does not
    # have to (the copy's pages stay cached between trials).
    cold = [metrics[(t["seq"], "device_bytes_read")] for t in trials if t["workload"] == "cold-read"]
    plain_cold = [
        metrics[(t["seq"], "device_bytes_read")]
        for t in trials
        if t["workload"] == "cold-read" and t["target"] == "plain"
    ]
    assert min(plain_cold) >= 8 << 20 and len(cold) == 2 * len(targets)

    # The commands saw no passphrase.
    env = (tmp_path / "env.txt").read_text()
    assert "correct horse" not in env and "CRYPTBENCH_TARGET=" in env

    # The answer, as hyperfine would put it, on the one screen.
    assert "sleep (`sleep 0.4`) took " in done.stdout and " on plain" in done.stdout
    if "gocryptfs" in targets:
        assert "on gocryptfs " in done.stdout
    assert "phased (count → burn → nap) took" in done.stdout
    details = cli("show", "--db", str(db), "--details", env=wide)
    assert "phased: each phase, median over the trials" in details.stdout
    assert "CPU of its processes" in details.stdout
    assert leftovers(target_dir) == []


def test_a_failing_command_fails_its_trial_and_the_run_goes_on(target_dir: Path, tmp_path: Path) -> None:
    need_backend("gocryptfs")  # the failure is staged on it; skipped with the reason `backends` gives
    db = tmp_path / "r.sqlite"
    command = 'case "$CRYPTBENCH_TARGET" in */targets/gocryptfs/*) echo "no space for it" >&2; exit 3;; esac'
    done = _run(
        *("--command", command, "--backends", "plain,gocryptfs", "--repeats", "2"),
        *("--target", str(target_dir), "--db", str(db)),
    )
    assert done.returncode == 1, done.stderr  # complete, with failed trials
    trials = _trials(db)
    failed = [t for t in trials if t["status"] == "failed"]
    assert {t["target"] for t in failed} == {"gocryptfs"} and len(failed) == 2
    assert all("exited with status 3: no space for it" in t["error"] for t in failed)
    assert sum(t["status"] == "ok" for t in trials) == 2
    assert leftovers(target_dir) == []


def test_a_command_broken_on_the_baseline_stops_the_run_keeping_what_is_stored(
    target_dir: Path, tmp_path: Path
) -> None:
    db = tmp_path / "r.sqlite"
    kept = _run(
        "--command",
        "true",
        "--backends",
        "plain",
        "--repeats",
        "1",
        "--target",
        str(target_dir),
        "--db",
        str(db),
    )
    assert kept.returncode == 0, kept.stderr
    done = _run(
        *("--command", "ls /nonexistent-dir", "--backends", "plain", "--repeats", "3"),
        *("--target", str(target_dir), "--db", str(db)),
    )
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(
        "cryptbench: error: ls-nonexistent-dir failed on plain, the baseline, in the first round"
    )
    assert "exited with status 2: ls: cannot access '/nonexistent-dir'" in error
    assert "Traceback" not in done.stderr
    con = sqlite3.connect(db)
    assert con.execute("SELECT status FROM runs ORDER BY id").fetchall() == [("complete",), ("failed",)]
    con.close()
    assert leftovers(target_dir) == []


def test_a_command_s_timeout_ends_it(target_dir: Path, tmp_path: Path) -> None:
    suite = tmp_path / "slow.toml"
    suite.write_text('name = "slow"\n[[workloads]]\nname = "slow"\ncommand = "sleep 6121"\ntimeout = 1\n')
    db = tmp_path / "r.sqlite"
    done = _run(
        "--suite",
        str(suite),
        "--backends",
        "plain",
        "--repeats",
        "1",
        "--target",
        str(target_dir),
        "--db",
        str(db),
    )
    assert done.returncode == 2
    assert "`sleep 6121` did not finish within 1 s" in done.stderr
    assert _strays("sleep 6121") == [] and leftovers(target_dir) == []


def test_background_processes_and_open_files_never_block_teardown(target_dir: Path, tmp_path: Path) -> None:
    """A command that leaves `sleep 600 &` behind, and one that leaves a process holding a
    file open on the target: every trial ends them, and the run unmounts cleanly. One
    trial of each per target: each target still runs two, one after the other's, and
    the second of two trials of one command added nothing to that."""
    db = tmp_path / "r.sqlite"
    done = _run(
        *("--command", "sleep 6122 & echo started"),
        *("--command", "echo held > held.txt; sleep 6123 < held.txt > /dev/null 2>&1 &"),
        *("--backends", FUSE, "--repeats", "1", "--target", str(target_dir), "--db", str(db)),
    )
    assert done.returncode == 0, done.stderr
    trials = _trials(db)
    assert len(trials) == 2 * len(FUSE.split(",")) and all(t["status"] == "ok" for t in trials)
    assert _strays("sleep 6122") == [] and _strays("sleep 6123") == []
    assert leftovers(target_dir) == []


def _start_background_run(target: Path, db: Path, tag: str) -> subprocess.Popen[str]:
    # Both sleeps carry the tag: _strays looks machine-wide, and any other `sleep 30` on
    # the machine (a monitoring loop's, as one CI run here had) would count as left behind.
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "cryptbench", "run", "--command", f"sleep {tag} & sleep 30.{tag}"),
            *("--backends", "plain", "--repeats", "2", "--target", str(target), "--db", str(db)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not _strays(f"sleep {tag}"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_command_with_a_background_child_runs(
    target_dir: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    db = tmp_path / "r.sqlite"
    proc = _start_background_run(target_dir, db, "6124")
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert _strays("sleep 6124") == [] and _strays("sleep 30.6124") == []
    assert leftovers(target_dir) == []


def test_cleanup_ends_what_a_sigkilled_run_s_command_left(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    proc = _start_background_run(target_dir, db, "6125")
    proc.kill()
    proc.communicate()
    assert _strays("sleep 6125")  # the command's child outlived the run
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert "stopped" in clean.stdout
    assert _strays("sleep 6125") == [] and leftovers(target_dir) == []
