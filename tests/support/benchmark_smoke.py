"""Every script in benchmarks/ in a tiny smoke mode of seconds each, so that none can
break unseen (fidelity.py once stopped with a TypeError for weeks: nothing ran it).
Their figures at these sizes mean nothing; only that each runs to the end and prints
its table. The scripts that compute only (COMPUTE_ONLY) run with the unit tests
(tests/unit/support/test_benchmarks_compute.py), the ones that run the tool on targets with
the integration tests (tests/integration/test_benchmarks_smoke.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support import fleet_hosts
from tests.support.paths import REPO

BENCHMARKS = REPO / "benchmarks"

# script -> (its tiny arguments, what its output must hold, exit statuses that mean
# "ran to the end": fidelity.py exits 1 when a ratio misses its target, which at these
# sizes it may). The scripts that run a suite run selftest's two workloads (a read and
# a write) rather than the quick suite's six: each path of the script is taken all the same.
SMOKE: dict[str, tuple[list[str], str, set[int]]] = {
    "allocation.py": (["--replays", "1"], "answered per minute", {0}),
    "between-runs.py": (
        [
            *("--runs", "2", "--", "--backends", "plain", "--suite", "selftest"),
            *("--size", "1M", "--repeats", "2", "--trial-time", "0"),
        ],
        "cells differing significantly",
        {0, 1},
    ),
    "calibration.py": (
        ["--runs", "1", "--size", "1M", "--repeats", "2", "--suite", "selftest"],
        "contain 1.00",
        {0},
    ),
    "cipher-vs-openssl.py": (["--rounds", "1", "--seconds", "1"], "ratio", {0}),
    "coverage.py": (["--comparisons", "8"], "A/A coverage", {0}),
    "cost-to-answer.py": (["--size", "1M"], "adaptive / fixed", {0}),
    "fidelity.py": (["--size", "4M", "--rounds", "1", "--suite", "selftest"], "largest deviation", {0, 1}),
    "fidelity.py --whole-run": (
        ["--whole-run", "--size", "4M", "--rounds", "1", "--trial-time", "0.1s", "--suite", "selftest"],
        "by hand MB/s",
        {0, 1},
    ),
    "fidelity.py --whole-run --ram": (
        [
            *("--whole-run", "--ram", "--ioengine", "libaio", "--size", "4M", "--rounds", "1"),
            *("--trial-time", "0.1s", "--suite", "selftest"),
        ],
        "by hand MB/s",
        {0, 1},
    ),
    "fleet-scaling.py": (
        ["--hosts", "1", "--size", "1M", "--repeats", "1", "--backends", "plain", "--suite", "selftest"],
        "ratio to 1 host",
        {0},
    ),
    "mutation.py": (["--smoke"], "score over 1 module(s)", {0}),
    "startup.py": (["--rounds", "2"], "neither SciPy nor Matplotlib", {0}),
    "tmpfs-state.py": (["--size", "4M", "--rounds", "2"], "fresh against reused", {0}),
    "trial-length.py": (
        ["--pairs", "1", "--repeats", "1", "--size", "4M", "--trial-time", "0.1s"],
        "one pass / sized",
        {0},
    ),
}

# Scripts that provision nothing, need no root and touch nothing outside their own
# temporary files: they can run in make test's lane 2 (scripts/test_lanes.sh).
COMPUTE_ONLY = frozenset({"allocation.py", "coverage.py", "cipher-vs-openssl.py", "mutation.py"})


def run(script: str, target: Path | None) -> None:
    """Run `script` in its smoke mode (with --target `target` where it takes one) and
    check it ran to the end and printed its table."""
    args, expect, statuses = SMOKE[script]
    path = BENCHMARKS / script.split()[0]
    if "--target" in path.read_text():
        assert target is not None, f"{script} takes --target: it runs with the integration tests"
        args = [*args, "--target", str(target)]
    # In a session of its own, so that a Ctrl-C meant for the suite reaches it only through
    # `finish`, which waits for the script to undo what it made.
    proc = subprocess.Popen(
        [sys.executable, str(path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=RUN_SECONDS)
    finally:
        finish(proc)
    assert "Traceback" not in err, err
    assert proc.returncode in statuses, (proc.returncode, out, err)
    assert expect in out, out


RUN_SECONDS = 300.0  # a smoke run takes seconds to a minute; beyond this it has hung
# for a script stopped mid-run to tear down: a minute beyond what one of fleet-scaling's
# serves may take (fleet_hosts.STOP_WAIT)
STOP_SECONDS = fleet_hosts.STOP_WAIT + 60.0


def finish(proc: subprocess.Popen[str]) -> None:
    """A script still running (the suite stopped, or it hung) is stopped as a user would:
    Ctrl-C (SIGINT) to its process group, so that it tears down what it made (the tool's
    targets, fleet-scaling's namespace hosts and their serves); killed only if that
    takes over STOP_SECONDS."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
