"""Runs that several lab tests read.

Under TCG one `cryptbench run` spends a minute or more before its first trial
(the interpreter, NumPy and SciPy, the baselines' own trials), so the tests
that only inspect a finished run share one: a run of every backend this host's
kernel lacks, and a `--ram` run begun with ext4 not yet loaded. Each test
still checks its own part of the run and fails on its own.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from cryptbench.backends.filesystem import kernel_filesystems
from cryptbench.backends.luks_variants import HIGH_PRIORITY, VARIANTS
from cryptbench.commands import backends
from tests.lab import FinishedRun, RamRun, run_args
from tests.support.cli import cli, own_state
from tests.support.leaks import leak_checked_dir

# Every backend this host's kernel lacks: Adiantum, eCryptfs, device-mapper; but for the
# high_priority variant, which this run's kernel (6.1) refuses ("needs Linux 6.10"):
# test_luks.py runs it on 6.12, and test_kernels.py checks the refusal.
KERNEL_ONLY = [
    "fscrypt-adiantum",
    "ecryptfs",
    *(n for n, v in VARIANTS.items() if HIGH_PRIORITY not in v.flags),
]

# One of luks-tuning's workloads, tiny: the responsiveness probe under a bulk write (one
# second of it), both fio jobs, on every target. Under TCG each 4 KiB direct read is
# emulated, so the files are small (4 MiB, the probe's 2 MiB): behaviour, not speed, is
# tested. (A second workload, rnd4k-q1-write, doubled the run's trials, half of its time;
# fio's workloads run on dm-crypt in test_luks.py's 6.12 run and test_sigkill.py.)
PROBE_UNDER_BULK = """
name = "kernel-only-tiny"
description = "One of luks-tuning's workloads, tiny, for the kernel lab"
[[workloads]]
name = "responsiveness"
app = "responsiveness"
seconds = 1
probe_size = "2M"
"""
WORKLOADS = ("responsiveness",)  # what the shared run measures on every target


@pytest.fixture(scope="session")
def kernel_only_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FinishedRun]:
    home = tmp_path_factory.mktemp("kernel-only")
    suite = home / "suite.toml"
    suite.write_text(PROBE_UNDER_BULK)
    env = own_state(home)
    with leak_checked_dir() as target:
        proc = cli(
            *("run", "--backends", ",".join(KERNEL_ONLY), "--suite", str(suite), "--size", "4M"),
            *("--repeats", "2", "--json", "--target", str(target), "--db", str(home / "r.sqlite")),
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        yield FinishedRun(json.loads(proc.stdout), home / "r.sqlite", env)


@pytest.fixture(scope="session")
def ram_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RamRun]:
    home = tmp_path_factory.mktemp("ram")
    env = own_state(home)
    if "ext4" in kernel_filesystems():  # an earlier lab test mounted ext4; nothing holds it now
        subprocess.run(["rmmod", "ext4"], check=True)
    loaded = "ext4" in kernel_filesystems()
    rows = {str(r["name"]): r for r in backends.run()}
    with leak_checked_dir() as target:
        proc = cli(*run_args(target, home, ["fscrypt"], "--ram", "--json", "--skip-protection"), env=env)
        assert proc.returncode == 0, proc.stderr
        yield RamRun(json.loads(proc.stdout), home / "r.sqlite", env, loaded, rows)
