"""The repetition line: how the run decided its trial count, and what it spent."""

from __future__ import annotations

from cryptbench.report.console import stopping_lines
from cryptbench.result_model import Stopping


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
    assert "budget: 1.0 GiB written, 5 min 0 s" in first
    assert rest == ["  enc vs plain, v: ±17.1% after 4 trial(s), stopped by max-time"]


def test_without_a_device_counter_it_says_whose_count_it_is() -> None:
    (first, *_rest) = stopping_lines(_stopping(None, source="workloads"))
    assert first.startswith("Repetition: 10 trials per workload and target, fixed;")
    assert "(as the workloads counted)" in first


def test_no_stopping_record_no_line() -> None:
    assert stopping_lines(None) == []
