"""`cryptbench report` on a real tiny run: the CSV read back by pandas agrees
with the run's own document; Markdown and JSON from the same store; files
are never overwritten."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from cryptbench.backends import REGISTRY
from cryptbench.commands import run as run_cmd
from cryptbench.store import Store
from tests.conftest import cli, requires_root

SEQ_SUITE = Path(__file__).parent.parent / "fixtures" / "suites" / "seq.toml"


@requires_root
def test_report_exports_a_real_run(target_dir: Path, tmp_path: Path) -> None:
    if not REGISTRY["fscrypt"].probe().ok:
        pytest.skip(f"fscrypt unavailable here: {REGISTRY['fscrypt'].probe().reason}")
    db = tmp_path / "r.sqlite"
    outcome = run_cmd.run(
        backends="fscrypt", suite=str(SEQ_SUITE), size="8M", repeats=2, seed=3, target=str(target_dir), db=db
    )
    assert outcome.status == "complete"
    doc = outcome.document
    exports = tmp_path / "exports"
    exports.mkdir()
    _the_csv_reads_back_as_the_runs_own_figures(db, doc, exports)
    _an_existing_file_is_never_overwritten(db, exports)
    _markdown_and_json_come_from_the_same_store(db, doc)


def _the_csv_reads_back_as_the_runs_own_figures(db: Path, doc: dict, exports: Path) -> None:
    out = exports / "run.csv"
    done = cli("report", "--db", str(db), "--csv", str(out))
    assert done.returncode == 0, done.stderr
    df = pd.read_csv(out)
    assert len(df) == doc["trials"]["ok"] + doc["trials"]["failed"]
    assert set(df["run_id"]) == {doc["run_id"]} and set(df["hostname"]) == {doc["environment"]["hostname"]}
    assert df["encrypted"].dtype == bool and set(df.loc[df["encrypted"], "target"]) == {"fscrypt"}
    assert pd.api.types.is_float_dtype(df["throughput_bytes_per_s"])
    assert list(df["trial_seq"]) == sorted(df["trial_seq"])
    checked = 0
    for r in doc["results"]:
        if r["metric"] != "throughput":
            continue
        mine = df[(df["workload"] == r["workload"]) & (df["target"] == r["target"])]["throughput_bytes_per_s"]
        assert statistics.median(mine.dropna()) == pytest.approx(r["median"], rel=1e-12)
        checked += 1
    assert checked == len({r["workload"] for r in doc["results"]}) * len(doc["targets"])
    again = cli("report", "--db", str(db), "--csv", "-")  # stdout gives the same bytes
    assert again.stdout == out.read_text()


def _an_existing_file_is_never_overwritten(db: Path, exports: Path) -> None:
    out = exports / "mine.csv"
    out.write_text("precious\n")
    done = cli("report", "--db", str(db), "--csv", str(out))
    assert done.returncode == 2 and "does not overwrite" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in exports.iterdir()) == ["mine.csv", "run.csv"]  # no temporary file left


def _markdown_and_json_come_from_the_same_store(db: Path, doc: dict) -> None:
    md = cli("report", "latest", "--db", str(db), "--markdown")
    assert md.returncode == 0, md.stderr
    assert f"**cryptbench run {doc['run_id']}**" in md.stdout
    assert any(line.startswith("| ") and "| fscrypt |" in line for line in md.stdout.splitlines())
    js = cli("report", str(doc["run_id"]), "--db", str(db), "--json")
    shown = cli("show", str(doc["run_id"]), "--db", str(db), "--json")
    assert json.loads(js.stdout) == json.loads(shown.stdout)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say what to write"),
        (["--markdown", "12345"], "no run 12345"),
        (["--csv", "/nonexistent-dir/x.csv"], "no directory"),
    ],
)
def test_report_bad_input(args: list[str], message: str, tmp_path: Path) -> None:
    db = tmp_path / "empty.sqlite"
    Store.open(db).close()  # an empty store is enough for these
    done = cli("report", *args, "--db", str(db))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
