"""A run that several integration modules read.

One whole run of every backend available here, with every phase (provisioning, the
encryption proof, the protection probes, trials, teardown), costs about two minutes
here. test_sentinel.py reads what it changed outside its scratch space, and
test_protection_real.py reads what its probes found: one run serves both. Each test
still checks its own part of the run and fails on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cryptbench.backends import REGISTRY
from cryptbench.machine.session import scratch_root
from tests.support import sentinels
from tests.support.cli import cli, own_state
from tests.support.leaks import leak_checked_dir, leftovers
from tests.support.suites import READ_AND_WRITE
from tests.support.targets import available
from tests.support.whole_run import WholeRun

EVERY = available(list(REGISTRY))  # every backend this host has


@pytest.fixture(scope="session")
def whole_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WholeRun]:
    home = tmp_path_factory.mktemp("whole-run")
    suite = home / "read-and-write.toml"
    suite.write_text(READ_AND_WRITE)
    env = own_state(home)
    db = home / "r.sqlite"
    with leak_checked_dir() as target:
        sentinels.lay(target)
        scratch = scratch_root(target)
        before = sentinels.snapshot(target, scratch)
        proc = cli(
            *("run", "--backends", ",".join(EVERY), "--suite", str(suite), "--size", "4M"),
            *("--repeats", "1", "--target", str(target), "--db", str(db), "--json"),
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        after = sentinels.snapshot(target, scratch)
        yield WholeRun(json.loads(proc.stdout), db, env, before, after, leftovers(target))
