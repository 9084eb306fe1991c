"""A tiny suite, end to end, on every default backend available here."""

# Over 60 s of make test (122 s in the fresh-clone run of fee2b51, 2026-11-27): a suite
# on every default backend available here, protection probes included, and the default
# output's first screen from a real run.
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cryptbench.analysis import ranking
from cryptbench.backends import DEFAULT, REGISTRY
from cryptbench.commands import run as run_cmd
from cryptbench.commands import show
from cryptbench.engines.fio import probe_ioengine
from cryptbench.measure import resident
from cryptbench.measure.stack import stack_of
from cryptbench.model.errors import UnavailableError
from cryptbench.planning.request import RunRequest
from cryptbench.planning.stopping_rule import DEFAULT_MAX_TIME
from cryptbench.planning.suite import load_suite
from cryptbench.planning.targets import not_run
from cryptbench.store.database import Store
from tests.support.cli import cli
from tests.support.targets import available, includes

pytestmark = pytest.mark.integration

TINY = "4M"
# the quick suite runs on every default backend here: each one missing shows as a skip
test_includes = includes(DEFAULT)
SEQ_SUITE = Path(__file__).parent.parent / "fixtures" / "suites" / "seq.toml"


def test_quick_suite_on_every_available_backend(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    # Without the protection probes: test_protection_real and the sentinel run them on
    # every backend, and CryFS's alone cost this test about 20 s.
    request = RunRequest(size=TINY, repeats=2, seed=11, target=str(target_dir), db=db, skip_protection=True)
    outcome = run_cmd.run(request)
    doc = outcome.document.to_json()
    assert outcome.status == "complete" and outcome.exit_code == 0
    here = available(DEFAULT)
    assert [t["name"] for t in doc["targets"]] == here
    # rclone-crypt, where it is here, cannot make the quick suite's random writes: left out
    quick = load_suite("quick")
    left_out = sum(len(not_run(n, quick)) for n in here)
    assert len(doc["plan"]["not_run"]) == left_out
    assert doc["trials"] == {"ok": (6 * len(here) - left_out) * 2, "failed": 0}
    for t in doc["targets"]:
        if t["encrypted"]:
            assert t["encryption_verified"] is True
    throughput = [r for r in doc["results"] if r["metric"] == "throughput"]
    assert len(throughput) == 6 * len(here) - left_out
    assert all(r["n"] == 2 and r["median"] > 0 for r in throughput)
    # every encrypted target is compared with its baseline on every workload
    pairs = {(c["target"], c["baseline"]) for c in doc["comparisons"]}
    for t in doc["targets"]:
        if t["baseline"]:
            assert (t["name"], t["baseline"]) in pairs
    # each backend's own program's version (Backend.version); the kernel's backends have none
    assert set(doc["environment"].get("versions", {})) == {n for n in here if REGISTRY[n].version()}
    # fio's code was kept resident across the cache drops (measure/resident.py): at least its executable
    assert doc["environment"]["fio_code_held_bytes"] >= resident.PAGE
    # io mode recorded per target, the same for all in auto mode
    assert len({t["io_mode"] for t in doc["targets"]}) == 1
    # raw fio output kept for every trial
    store = Store.open(db)
    raws = store.db.execute("SELECT raw_output FROM trials WHERE run_id=?", (outcome.run_id,)).fetchall()
    assert all(json.loads(r[0])["fio version"].startswith("fio-") for r in raws)
    # bytes moved per trial are the plan's size
    assert {r["median"] for r in doc["results"] if r["metric"] == "io_bytes"} == {4 << 20}
    store.close()
    assert show.run(ref="latest", db=db).to_json() == doc
    assert not list((target_dir / "cryptbench").glob("run-*"))  # scratch removed


def test_cli_json_document(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    proc = cli(
        "run",
        "--backends",
        "plain",
        "--size",
        TINY,
        "--repeats",
        "1",
        "--target",
        str(target_dir),
        "--db",
        str(db),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # stdout is one JSON document, progress is on stderr
    assert doc["targets"][0]["name"] == "plain"
    assert {w["kind"] for w in doc["warnings"]} >= {"few-samples"}
    again = cli("show", "latest", "--json", "--db", str(db))
    assert json.loads(again.stdout) == doc
    hist = cli("history", "--json", "--db", str(db))
    (row,) = json.loads(hist.stdout)["runs"]
    assert row["id"] == doc["run_id"] and row["status"] == "complete" and row["ok_trials"] == 6


def test_adaptive_repetition_for_real(target_dir: Path, tmp_path: Path) -> None:
    """fscrypt against ext4-loop, repeated until ±precision or max-repeats (plain,
    ext4-loop's baseline and what fscrypt is ranked against, with each of fscrypt's
    trials, so their rounds pair; ext4-loop, asked nothing, only as fscrypt's
    baseline); what stopped each comparison is stored and shown."""
    db = tmp_path / "r.sqlite"
    outcome = run_cmd.run(
        RunRequest(
            backends="fscrypt",
            suite=str(SEQ_SUITE),
            size=TINY,
            precision="40%",
            min_repeats=2,
            max_repeats=4,
            seed=5,
            target=str(target_dir),
            db=db,
        )
    )
    doc = outcome.document.to_json()
    assert outcome.exit_code == 0
    st = doc["stopping"]
    assert st["rule"] == {
        "precision": 0.40,
        "min_repeats": 2,
        "max_repeats": 4,
        "max_bytes": st["rule"]["max_bytes"],
        "max_time": DEFAULT_MAX_TIME,
        "equivalence": 0.03,
        "overrun": "drop",
    }
    # ext4-loop and plain were added as baselines: compared with, not asked about
    assert {(a["target"], a["baseline"]) for a in st["answers"]} == {("fscrypt", "ext4-loop")}
    ok = Store.open(db)
    counts = dict(
        ok.db.execute(
            "SELECT target, count(*) FROM trials WHERE run_id=? AND status='ok' GROUP BY target",
            (outcome.run_id,),
        ).fetchall()
    )
    ok.close()
    for a in st["answers"]:
        assert a["stopped_by"] in ("precision", "max-repeats")
        assert 2 <= a["rounds"] <= 4
        if a["stopped_by"] == "precision":
            assert a["halfwidth"] <= 0.40
        else:
            assert a["rounds"] == 4
    # the document's comparison carries the same verdict and its own precision
    for c in doc["comparisons"]:
        if c["target"] == "fscrypt" and c["kind"] == "baseline":
            assert c["stopped_by"] in ("precision", "max-repeats") and c["precision"] is not None
            if c["stopped_by"] == "precision":
                assert c["precision"] <= 0.40  # precise on every sample the report uses
    assert counts["plain"] == counts["fscrypt"] == counts["ext4-loop"]  # every round, each once
    assert sum(counts.values()) == doc["trials"]["ok"]
    assert max(counts.values()) <= 4 * 2
    assert st["bytes_source"] == "device" and st["bytes_written"] >= 2 * 3 * (4 << 20)
    assert show.run(ref="latest", db=db).to_json() == doc


def test_a_byte_budget_ends_the_repetition(target_dir: Path, tmp_path: Path) -> None:
    """Also the run's --ioengine: its trials use the engine asked for, not the one the run
    would have chosen (io_uring, where this kernel has it)."""
    db = tmp_path / "r.sqlite"
    proc = cli(
        "run", "--backends", "plain", "--suite", str(SEQ_SUITE), "--size", TINY, "--max-bytes", "1M",
        "--ioengine", "libaio", "--target", str(target_dir), "--db", str(db), "--details",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "stopped by max-bytes" in proc.stdout
    doc = show.run(ref="latest", db=db)
    assert doc.stopping is not None and doc.stopping.stopped_by == "max-bytes"
    # the first write block crossed the budget: nothing ran after it
    assert doc.trials.ok <= 2
    assert doc.environment.ioengine == "libaio" and doc.plan.raw["ioengine"] == "libaio"
    store = Store.open(db)
    jobs = [j for (j,) in store.db.execute("SELECT job_file FROM trials").fetchall()]
    store.close()
    assert jobs and all("ioengine=libaio" in j.splitlines() for j in jobs)


def test_an_ioengine_asked_for_is_checked_with_fio(tmp_path: Path) -> None:
    assert probe_ioengine(tmp_path / "probe", wanted="libaio") == "libaio"
    assert probe_ioengine(tmp_path / "probe", wanted="psync") == "psync"
    with pytest.raises(
        UnavailableError, match=r"--ioengine no-such-engine: fio cannot read with it here \(.+\)"
    ):
        probe_ioengine(tmp_path / "probe", wanted="no-such-engine")
    assert not list(tmp_path.iterdir())  # the probe's file is gone


def test_the_default_output_answers_first_on_one_80_column_screen(target_dir: Path, tmp_path: Path) -> None:
    """A real run through the command line, piped as into a log: stdout is the
    header, the ranking, the matrix and the pointer to the details, every line
    within 80 columns; stderr has a progress line per round, not a blank bar."""
    encrypted = [n for n in ("gocryptfs", "fscrypt") if REGISTRY[n].probe().ok]
    if not encrypted:
        why = "; ".join(f"{n}: {REGISTRY[n].probe().reason}" for n in ("gocryptfs", "fscrypt"))
        pytest.skip(f"no encrypted target to rank here ({why})")
    db = tmp_path / "r.sqlite"
    env = os.environ.copy() | {"COLUMNS": "80"}
    proc = cli(
        "run", "--backends", ",".join(encrypted), "--size", TINY, "--repeats", "2", "--seed", "3",
        "--target", str(target_dir), "--db", str(db), env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.rstrip("\n").split("\n")
    assert max(len(line) for line in lines) <= 80, proc.stdout
    doc = show.run(ref="latest", db=db)
    # The matrix's height follows its intervals' widths: a 2-trial run's bounds reach four
    # digits (CI saw [-100,+8890]) and push the quick suite's six workload columns into a
    # third block. So the matrix is held to three blocks, each a header of at most two lines,
    # a rule and a row per target, and everything else to 24 lines.
    blocks = sum(1 for line in lines if line.strip() and set(line.strip()) == {"─"})
    assert 1 <= blocks <= 3, proc.stdout
    assert len(lines) - blocks * (len(doc.targets) + 3) <= 24, proc.stdout
    assert lines[0].startswith(f"Run {doc.run_id} (quick suite): {len(doc.targets)} targets, ")
    # under the header, the stack under the scratch space, then the ranking
    assert lines[1] == f"Scratch space {target_dir}: {stack_of(target_dir).line()}", proc.stdout
    first = ranking.sentences(doc)[0]
    assert " ".join(lines[2:5]).startswith(first[:40]), proc.stdout
    assert lines[-1] == f"Every figure, warning and the diagnosis: cryptbench show {doc.run_id} --details"
    assert "trials: round 1, 0 done of " in proc.stderr and "trials: round 2, " in proc.stderr
    # --details still prints the full report, and the same answer opens show
    again = cli("show", "latest", "--db", str(db), env=env)
    assert again.stdout == proc.stdout
    details = cli("show", "latest", "--details", "--db", str(db), env=env)
    assert len(details.stdout.splitlines()) > len(lines) and "Diagnosis" in details.stdout
