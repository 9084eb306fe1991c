"""The example suites of your own commands (docs/own-work.md) run as shipped: their
inputs built locally, every phase timed, on plain and on gocryptfs (gocryptfs's own
benchmark on rclone-crypt and EncFS too)."""

# Over 60 s of make test (124 s in the fresh-clone run of 6754047, 2026-11-29, with the
# unit tests beside it at nice 19): each of the shipped example suites (compileall,
# git, gocryptfs's own benchmark, many files, sqlite) builds its inputs and runs on two
# targets; gocryptfs's benchmark on rclone-crypt and EncFS too (75 s of it here), the
# many files on fscrypt too.
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.engines.apps.command import CommandWorkload
from cryptbench.planning.suite import builtin_suites, load_suite
from tests.support.cli import cli
from tests.support.leaks import leftovers
from tests.support.targets import available, need_backend

pytestmark = pytest.mark.integration

EXAMPLES = [n for n in builtin_suites() if n.startswith("example-")]


@pytest.mark.beside  # refused or read before anything is made: lane 2
def test_there_are_the_five_examples_and_the_docs_list_each() -> None:
    assert EXAMPLES == [
        "example-compileall",
        "example-git",
        "example-gocryptfs-bench",
        "example-many-files",
        "example-sqlite",
    ]
    docs = (Path(__file__).parents[2] / "docs" / "own-work.md").read_text()
    listed = json.loads(cli("suites", "--json").stdout)
    for name in EXAMPLES:
        assert f"`{name}`" in docs, name
        assert any(s["name"] == name for s in listed)
        assert all(isinstance(w, CommandWorkload) for w in load_suite(name).workloads)


# gocryptfs's own benchmark also runs on the layers its maintainer compared by hand
# (gocryptfs-website#7: rclone crypt's untar about 4x slower): docs/backends.md quotes a run.
# The many files are names' work: fscrypt's (and HCTR2's, on a kernel that has it).
PEERS = {
    "example-gocryptfs-bench": ("rclone-crypt", "encfs"),
    "example-many-files": ("fscrypt", "fscrypt-hctr2"),
}


@pytest.mark.parametrize("name", EXAMPLES)
def test_an_example_suite_runs_as_shipped(target_dir: Path, tmp_path: Path, name: str) -> None:
    need_backend("gocryptfs")
    db = tmp_path / "r.sqlite"
    layers = ["gocryptfs", *available(list(PEERS.get(name, ())))]
    # --skip-protection: the suite is as shipped; what gocryptfs hides is test_protection_real's.
    proc = cli(
        *("run", "--suite", name, "--backends", ",".join(["plain", *layers]), "--repeats", "2"),
        *("--skip-protection", "--target", str(target_dir), "--db", str(db), "--json"),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    targets = [t["name"] for t in doc["targets"]]  # with the baselines run adds (fscrypt's ext4-loop)
    assert set(layers) <= set(targets)
    assert doc["trials"] == {"ok": 2 * len(targets) * len(load_suite(name).workloads), "failed": 0}
    workload = load_suite(name).workloads[0]
    assert isinstance(workload, CommandWorkload)
    for layer in layers:
        metrics = {r["metric"] for r in doc["results"] if r["target"] == layer}
        if len(workload.phases) > 1:
            assert {f"{p.name}.seconds" for p in workload.phases} <= metrics, layer
        assert {"seconds", "command_cpu_seconds", "helper_cpu_seconds"} <= metrics, layer
    assert leftovers(target_dir) == []
