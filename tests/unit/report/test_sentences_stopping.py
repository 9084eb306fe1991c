"""The repetition line: how the run decided its trial count, and what it spent."""

from __future__ import annotations

import dataclasses
import json

from cryptbench.model.result import Document, Stopping
from cryptbench.report.sentences import precision_line, stopping_lines
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"


def _stopping(precision: float | None, source: str = "device") -> Stopping:
    answer = {"workload": "w", "target": "enc", "baseline": "plain", "metric": "throughput", "rounds": 4}
    return Stopping.from_json(
        {
            "rule": {
                "precision": precision,
                "min_repeats": 3,
                "max_repeats": 10,
                "max_bytes": 1 << 30,
                "max_time": 300,
            },
            "answers": [
                {**answer, "stopped_by": "precision", "samples": 4, "halfwidth": 0.04},
                {**answer, "workload": "v", "stopped_by": "max-time", "samples": 4, "halfwidth": 0.171},
            ],
            "stopped_by": "max-time",
            "bytes_written": 3 << 30,
            "bytes_source": source,
            "seconds": 313.0,
        }
    )


def test_adaptive_line_counts_the_precise_and_lists_the_rest() -> None:
    first, *rest = stopping_lines(_stopping(0.05))
    assert "adaptive to ±5%" in first and "1 of 2 comparisons got there in 4 trials" in first
    # the device counter spans the trial phase, resets between trials included
    assert "the trial phase wrote 3.0 GiB (the device counter, resets between trials included)" in first
    assert "budget: 1.0 GiB written, 5 min" in first
    assert rest == ["  enc vs plain, v: ±17.1% after 4 trial(s), stopped by max-time"]


def test_without_a_device_counter_it_says_whose_count_it_is() -> None:
    (first, *_rest) = stopping_lines(_stopping(None, source="workloads"))
    assert first.startswith("Repetition: 10 trials per workload and target, fixed;")
    assert "(as the workloads counted)" in first


def test_no_stopping_record_no_line() -> None:
    assert stopping_lines(None) == []


def test_the_precision_line_says_what_stopped_each_group_and_how_far_it_got() -> None:
    answer = {"workload": "w", "target": "enc", "baseline": "plain", "metric": "throughput", "rounds": 3}
    answers = [
        *[{**answer, "stopped_by": "precision", "samples": 3, "halfwidth": 0.04}] * 22,
        *[{**answer, "stopped_by": "equivalent", "samples": 4, "halfwidth": 0.02}] * 9,
        {**answer, "stopped_by": "max-time", "samples": 2, "halfwidth": 0.06},
        {**answer, "stopped_by": "max-time", "samples": 3, "halfwidth": 0.11},
        {**answer, "stopped_by": "target-lost", "samples": 1, "halfwidth": None},
    ]
    rule = {"precision": 0.05, "min_repeats": 3, "max_repeats": 10, "max_bytes": None, "max_time": 240}
    st = Stopping.from_json(
        {
            "rule": {**rule, "equivalence": 0.03},
            "answers": answers,
            "stopped_by": "max-time",
            "bytes_written": 1 << 30,
            "bytes_source": "device",
            "seconds": 241.0,
        }
    )
    doc = dataclasses.replace(
        Document.from_json(json.loads((DOCS / "default-run.json").read_text())), stopping=st
    )
    assert precision_line(doc) == (
        "22 answered to ±5%, 9 equal within ±3%, 2 stopped by the 4 min budget after 2 to 3 trials "
        "(±6.0% to ±11.0%), 1 stopped: a target was lost after 1 trial (no interval)"
    )
    first, *rest = stopping_lines(st)
    assert "31 of 34 comparisons got there" in first  # equal within the margin is answered too
    assert len(rest) == 3


def test_each_comparison_stopped_short_counts_the_trials_its_figure_has() -> None:
    # The default run's rnd4k-q1-read answers took part in 3 rounds, but their targets
    # ran 4 good trials (n=4 in the results): the line counts trials, as n does.
    doc = Document.from_json(json.loads((DOCS / "default-run.json").read_text()))
    assert doc.stopping is not None
    n = {(r.workload, r.target): r.n for r in doc.results if r.metric == "throughput"}
    lines = [line for line in stopping_lines(doc.stopping) if " after " in line]
    assert lines
    for a in doc.stopping.answers:
        line = next((x for x in lines if x.startswith(f"  {a.target} vs {a.baseline}, {a.workload}:")), None)
        if line is not None:
            assert f" after {n[(a.workload, a.target)]} trial(s)" in line, line
    assert "  gocryptfs vs plain, rnd4k-q1-read: ±32.3% after 4 trial(s), stopped by max-time" in lines
