"""selftest's known answers: the range each check must reach, and when it cannot be made.

The figures are the CI run's of 6dbe85b (throttle-40 wrote 38.0 MB/s [37.3, 38.2]) and
this VM's (throttle-none wrote 279 MB/s unthrottled, `cryptbench selftest`)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import cast

import pytest

from cryptbench.commands import selftest
from cryptbench.commands.selftest import FAST, SLOW, TWIN, Check, checks, known_range
from cryptbench.model.result import Comparison, ComparisonKind, Document, Result

READ, WRITE = "seq1m-q8-read", "seq1m-q8-write"
MB = 1_000_000
MIB_FOR_MB = 1 << 20  # a harness that took MiB for MB reports 40 MB/s as 38.1


def _result(target: str, workload: str, median: float, half_width: float = 0.002) -> Result:
    low, high = median * (1 - half_width), median * (1 + half_width)
    return Result(
        workload, target, "throughput", "bytes/s", [median], 1, median, median, 0, 0, low, high, low, high
    )


def _ratio(workload: str, ratio: float, half_width: float = 0.01) -> Comparison:
    low, high = ratio * (1 - half_width), ratio * (1 + half_width)
    kind = ComparisonKind.BASELINE
    return Comparison(
        workload, SLOW, FAST, kind, "throughput", ratio, low, high, (ratio - 1) * 100, 0.01, None
    )


def _doc(rates: dict[tuple[str, str], float], twin: dict[str, float], ratios: dict[str, float]) -> Document:
    results = [_result(t, w, v) for (t, w), v in rates.items()] + [
        _result(TWIN, w, v) for w, v in twin.items()
    ]
    return cast(
        Document, SimpleNamespace(results=results, comparisons=[_ratio(w, r) for w, r in ratios.items()])
    )


def _by_what(found: list[Check]) -> dict[str, Check]:
    return {c.what: c for c in found}


def test_a_read_is_the_throttles_rate_a_write_reaches_down_by_its_flush() -> None:
    assert known_range(40 * MB, 279 * MB, write=False) == (40 * MB, 40 * MB)
    low, high = known_range(40 * MB, 279 * MB, write=True)
    assert high == 40 * MB and low == pytest.approx(40 * 279 / (40 + 279) * MB)
    assert known_range(40 * MB, None, write=True) == (40 * MB, 40 * MB)  # no twin: the rate alone


def test_a_check_passes_when_its_interval_reaches_the_range() -> None:
    def check(ci_low: float, ci_high: float, unreachable: str = "") -> Check:
        return Check("x", ci_low, ci_low, ci_high, 1.0, 0.9, 1.1, "ratio", unreachable)

    assert check(0.8, 0.9).passed and check(1.1, 1.2).passed
    assert not check(0.8, 0.899).passed and not check(1.101, 1.2).passed
    assert not check(0.95, 1.05, unreachable="too slow").passed
    assert not Check("x", 1.0, None, None, 1.0, 0.9, 1.1, "ratio").passed
    # trials that all read one figure (a throttle's rate to the byte): that figure is held
    # to the range; one trial is held to nothing
    alike = Check("x", 1.0, None, None, 1.0, 0.9, 1.1, "ratio", trials=3)
    assert alike.passed and not replace(alike, trials=1).passed
    assert not replace(alike, measured=1.2).passed and not replace(alike, measured=0.89).passed
    assert replace(alike, measured=1.1).passed and replace(alike, measured=0.9).passed


def test_the_ci_machines_write_passes_once_its_flush_is_counted() -> None:
    rates = {
        (FAST, READ): 40.9 * MB,
        (FAST, WRITE): 38.0 * MB,
        (SLOW, READ): 20.6 * MB,
        (SLOW, WRITE): 19.7 * MB,
    }
    found = _by_what(checks(_doc(rates, {READ: 600 * MB, WRITE: 279 * MB}, {READ: 0.503, WRITE: 0.523})))
    assert len(found) == 6 and all(c.passed for c in found.values()), found
    write = found[f"{FAST}, {WRITE}"]
    assert write.low == pytest.approx(40 * 279 / 319 * MB * (1 - selftest.RATE_BAND))
    # the same 38.0 MB/s is a failure where the job has no flush to wait for
    assert not found[f"{FAST}, {READ}"].low <= 38.0 * MB * 1.002


@pytest.mark.parametrize("workload", [READ, WRITE])
def test_mib_taken_for_mb_fails_where_the_stack_is_fast(workload: str) -> None:
    wrong = 40 * MB * MB / MIB_FOR_MB
    rates = {(FAST, workload): wrong, (SLOW, workload): 20 * MB * MB / MIB_FOR_MB}
    found = _by_what(checks(_doc(rates, {workload: 1e13}, {workload: 0.5})))
    assert not found[f"{FAST}, {workload}"].passed and not found[f"{SLOW}, {workload}"].passed
    assert found[f"{SLOW} / {FAST}, {workload}"].passed  # a unit error cancels in a ratio


@pytest.mark.parametrize("ratio", [2.0, 1.0])
def test_a_ratio_inverted_or_between_the_wrong_targets_fails(ratio: float) -> None:
    rates = {(FAST, WRITE): 40 * MB, (SLOW, WRITE): 20 * MB}
    found = _by_what(checks(_doc(rates, {WRITE: 279 * MB}, {WRITE: ratio})))
    assert not found[f"{SLOW} / {FAST}, {WRITE}"].passed
    assert found[f"{SLOW} / {FAST}, {WRITE}"].low < 0.5 < found[f"{SLOW} / {FAST}, {WRITE}"].high


def test_a_stack_slower_than_headroom_times_a_throttle_cannot_check_it() -> None:
    rates = {(FAST, READ): 40 * MB, (SLOW, READ): 20 * MB}
    found = _by_what(checks(_doc(rates, {READ: 60 * MB}, {READ: 0.5})))
    assert "moved only 60.0 MB/s" in found[f"{FAST}, {READ}"].unreachable
    assert not found[f"{FAST}, {READ}"].passed
    assert not found[f"{SLOW} / {FAST}, {READ}"].passed  # a ratio needs the faster throttle's
    assert found[f"{SLOW}, {READ}"].unreachable == "" and found[f"{SLOW}, {READ}"].passed  # 60 >= 2 x 20
    at_headroom = _by_what(checks(_doc(rates, {READ: selftest.HEADROOM * 40 * MB}, {READ: 0.5})))
    assert all(c.passed for c in at_headroom.values())
