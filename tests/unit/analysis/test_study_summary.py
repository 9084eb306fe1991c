"""Study 004's own summary (drop min and max, mean, sd, speed) and the page-cache ratios."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from typing import Any

import pytest
from rich.console import Console

from cryptbench.analysis import study_summary
from cryptbench.analysis.study_summary import build, drop_min_max, twin_of
from cryptbench.model.result import Result
from cryptbench.model.stored_run import RunPlan
from cryptbench.model.study import StudySummary
from cryptbench.report import console as console_report

MIB = 1 << 20


def test_drop_min_max_is_the_studys_arithmetic() -> None:
    s = drop_min_max([9.0, 8.0, 12.0, 10.0, 11.0])
    assert s.used == 3 and s.mean == pytest.approx(10.0) and s.sd == pytest.approx(1.0)


def test_drop_min_max_drops_ties_together_as_rs_which_does() -> None:
    # C[-which(C$V3 == max(C$V3)), ] removes every trial equal to the maximum.
    s = drop_min_max([3.0, 1.0, 3.0, 2.0, 1.0, 2.5])
    assert s.used == 2 and s.mean == pytest.approx(2.25)
    one = drop_min_max([1.0, 2.0, 3.0])
    assert one.used == 1 and one.mean == 2.0 and one.sd is None
    none = drop_min_max([4.0, 4.0, 4.0])
    assert none.used == 0 and none.mean is None and none.sd is None
    assert drop_min_max([]).used == 0


PLAN: dict[str, Any] = {
    "summary": "drop-min-max",
    "workloads": ["dd-zero", "dd-random", "dd-zero-as-published"],
    "as_published": ["dd-zero-as-published"],
    "apps": {
        "dd-zero": {"app": "dd-write", "name": "dd-zero", "size": MIB, "data": "zero", "style": "durable"},
        "dd-random": {
            "app": "dd-write",
            "name": "dd-random",
            "size": MIB,
            "data": "random",
            "style": "durable",
        },
        "dd-zero-as-published": {
            "app": "dd-write",
            "name": "dd-zero-as-published",
            "size": MIB,
            "data": "zero",
            "style": "as-published",
            "fsync": False,
        },
    },
}


def _samples() -> dict[tuple[str, str, str], list[float]]:
    times = [2.0, 1.0, 4.0, 3.0, 5.0]
    fast = [0.1, 0.11, 0.09, 0.1, 0.1]
    out: dict[tuple[str, str, str], list[float]] = {}
    for w, seconds in (("dd-zero", times), ("dd-random", times), ("dd-zero-as-published", fast)):
        out[(w, "plain", "seconds")] = seconds
        out[(w, "plain", "io_bytes")] = [float(MIB)] * 5
        out[(w, "plain", "throughput")] = [MIB / s for s in seconds]
    return out


def test_the_summary_rows_and_the_page_cache_ratio() -> None:
    doc = build(RunPlan(PLAN), _samples(), ["plain", "fscrypt"], lambda *parts: 1)
    assert doc is not None and doc.method == "drop-min-max"
    rows = {r.workload: r for r in doc.rows}
    assert set(rows) == set(PLAN["workloads"])  # fscrypt has no samples: no rows
    zero = rows["dd-zero"]
    assert (zero.n, zero.used) == (5, 3)
    assert zero.mean_seconds == pytest.approx(3.0)
    assert zero.sd_seconds == pytest.approx(1.0)
    assert zero.throughput == pytest.approx(MIB / 3.0)  # bytes over the mean time, as the study's speed
    (pc,) = doc.page_cache
    assert (pc.workload, pc.durable, pc.target) == ("dd-zero-as-published", "dd-zero", "plain")
    assert pc.ratio == pytest.approx(
        statistics.median([MIB / s for s in [0.1] * 3 + [0.11, 0.09]]) / (MIB / 3.0)
    )
    assert pc.ci_low is not None and pc.ci_high is not None
    assert pc.ci_low <= pc.ratio <= pc.ci_high
    # the document's JSON holds all of it: read back, it is the same summary
    assert StudySummary.from_json(json.loads(json.dumps(doc.to_json()))) == doc


def test_the_twin_is_the_same_app_and_data_written_durably() -> None:
    assert twin_of(RunPlan(PLAN), "dd-zero-as-published") == "dd-zero"
    plan = {**PLAN, "apps": {k: v for k, v in PLAN["apps"].items() if k != "dd-zero"}}
    assert twin_of(RunPlan(plan), "dd-zero-as-published") is None


def test_no_summary_without_the_suite_asking() -> None:
    assert build(RunPlan({**PLAN, "summary": None}), _samples(), ["plain"], lambda *p: 1) is None


def test_the_console_shows_both_summaries_and_says_what_the_cache_did() -> None:
    summary = build(RunPlan(PLAN), _samples(), ["plain"], lambda *parts: 1)
    results = [
        Result(w, "plain", "throughput", "bytes/s", [1e6], 1, 1e6, 1e6, 0.0, 0.0, 1e6, 1e6, 0.9e6, 1.1e6)
        for w in PLAN["workloads"]
    ]
    out = Console(record=True, width=80)
    console_report._study_summary(summary, results, out)
    text = out.export_text()
    assert "longest and shortest trials dropped" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith("plain ")]
    assert rows and all(row[1] == "3/5" for row in rows)  # trials used of those run
    assert "3.000" in text and "1.000" in text and "1.0 [1, 1]" in text
    assert max(len(line) for line in text.splitlines() if "│" in line or line.startswith("  ")) <= 80
    assert "the page cache inflated it" in " ".join(text.split())
    assert summary is not None
    line = study_summary.page_cache_line(replace(summary.page_cache[0], ratio=0.5, ci_low=0.4, ci_high=0.6))
    assert "the study's command was slower" in line
    line = study_summary.page_cache_line(replace(summary.page_cache[0], ratio=1.0, ci_low=0.8, ci_high=1.2))
    assert line.endswith("no clear difference")
