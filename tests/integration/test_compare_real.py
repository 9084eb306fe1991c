"""`cryptbench compare` on real runs: two tiny gocryptfs runs in two databases (as if
from two machines), compared through the command line; a run of another size is
refused without --force; the HTML page has every section; `history` draws the
same runs' medians over time."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from cryptbench.commands import run as run_cmd
from cryptbench.planning.request import RunRequest
from cryptbench.stats.estimates import no_spread
from tests.support.cli import cli
from tests.support.html_page import Page
from tests.support.targets import need_backend, requires_root

pytestmark = pytest.mark.integration

SEQ_SUITE = Path(__file__).parent.parent / "fixtures" / "suites" / "seq.toml"


def _run(target_dir: Path, db: Path, size: str, repeats: int, seed: int) -> dict:
    outcome = run_cmd.run(
        RunRequest(
            backends="gocryptfs",
            suite=str(SEQ_SUITE),
            size=size,
            repeats=repeats,
            seed=seed,
            target=str(target_dir),
            db=db,
        )
    )
    assert outcome.status == "complete" and outcome.document.trials.failed == 0
    return outcome.document.to_json()


@requires_root
def test_compare_two_real_runs(target_dir: Path, tmp_path: Path) -> None:
    need_backend("gocryptfs")
    db_a, db_b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    a = _run(target_dir, db_a, "8M", 4, 1)
    b = _run(target_dir, db_b, "8M", 4, 2)

    done = cli("compare", "latest", "latest", "--db", str(db_a), "--db-b", str(db_b), "--json")
    assert done.returncode == 0, done.stderr
    comp = json.loads(done.stdout)
    assert (comp["a"]["run_id"], comp["b"]["run_id"]) == (a["run_id"], b["run_id"])
    assert not comp["forced"] and not [d for d in comp["differences"] if d["blocking"]]
    assert {(r["workload"], r["target"]) for r in comp["rows"]} == {
        (w, t) for w in ("seq1m-q8-read", "seq1m-q8-write") for t in ("plain", "gocryptfs")
    }
    median = {
        (side, r["workload"], r["target"]): statistics.median(r["samples"])
        for side, doc in (("a", a), ("b", b))  # both are run 1 of their own database
        for r in doc["results"]
        if r["metric"] == "throughput"
    }
    for r in comp["rows"]:
        assert r["test"] == "mann-whitney" and 0 < r["p_value"] <= 1  # 4 against 4 trials allow it
        assert r["significant"] == (r["p_value"] < 0.05)
        want = median[("b", r["workload"], r["target"])] / median[("a", r["workload"], r["target"])]
        assert r["ratio"] == pytest.approx(want)
        assert r["ratio_low"] <= r["ratio_high"]
        # the tool's one convention: B's change in speed against A, with both ends
        assert r["words"] == f"{(r['ratio'] - 1) * 100:+.0f}% [{(r['ratio_low'] - 1) * 100:+.0f}, " + (
            f"{(r['ratio_high'] - 1) * 100:+.0f}]"
        )

    # The terminal table and the page, from the same two stores.
    page_path = tmp_path / "compare.html"
    shown = cli(
        "compare", "latest", "latest", "--db", str(db_a), "--db-b", str(db_b), "--html", str(page_path)
    )
    assert shown.returncode == 0, shown.stderr
    assert "B against A, 4 workload-target pairs" in " ".join(shown.stdout.split())
    page = Page()
    page.feed(page_path.read_text())
    assert page.sections == ["summary", "runs", "comparison", "changes", "costs"]
    assert len(page.rows["comparison-table"]) == 4 and page.charts == ["comparison"]
    again = cli(
        "compare", "latest", "latest", "--db", str(db_a), "--db-b", str(db_b), "--html", str(page_path)
    )
    assert again.returncode == 2 and "exists" in again.stderr  # never overwritten

    # Another size measures something else: refused in one line, compared with --force.
    c = _run(target_dir, db_a, "4M", 2, 3)
    refused = cli("compare", str(a["run_id"]), str(c["run_id"]), "--db", str(db_a))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1 and "data per trial: 8.0 MiB vs 4.0 MiB" in refused.stderr
    forced = cli("compare", str(a["run_id"]), str(c["run_id"]), "--db", str(db_a), "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    data = json.loads(forced.stdout)
    assert data["forced"]
    # 4 against 2 trials: too few for Mann-Whitney, so the two intervals are compared; where
    # both trials of a side read one figure (4 MiB from the page cache lasts a few ms, and
    # fio's runtime is in ms), that side has no interval and there is no test
    alike = {
        (r["workload"], r["target"])
        for doc in (a, c)
        for r in doc["results"]
        if r["metric"] == "throughput" and no_spread(np.asarray(r["samples"]))
    }
    for r in data["rows"]:
        assert r["test"] == ("none" if (r["workload"], r["target"]) in alike else "intervals"), r

    # history over the same store: both runs, each target's median as the documents have it.
    hist = cli(
        "history", "--db", str(db_a), "--workload", "seq1m-q8-read", "--backend", "gocryptfs", "--json"
    )
    assert hist.returncode == 0, hist.stderr
    found = json.loads(hist.stdout)
    assert [r["id"] for r in found["runs"]] == [c["run_id"], a["run_id"]] and found["metric"] == "throughput"
    (series,) = found["series"]  # only gocryptfs's targets with --backend
    assert (
        series["target"] == "gocryptfs" and "bytes per trial differ between these runs" in series["caveats"]
    )
    for point, doc in zip(series["points"], (a, c), strict=True):
        result = next(
            r
            for r in doc["results"]
            if (r["workload"], r["target"], r["metric"]) == ("seq1m-q8-read", "gocryptfs", "throughput")
        )
        assert point["run_id"] == doc["run_id"] and point["median"] == pytest.approx(result["median"])
    shown = cli("history", "--db", str(db_a), "--workload", "seq1m-q8-read")
    assert shown.returncode == 0 and "median per run, oldest left" in shown.stdout
