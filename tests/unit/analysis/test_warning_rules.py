"""Each kind of warning has its rule beside it, named after it, and the rules find
on recorded documents what the document lists."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from cryptbench.analysis import warning_rules
from cryptbench.model.result import Document
from cryptbench.model.warning_kinds import RunWarning, WarningKind
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"


def test_every_kind_has_its_rule_and_find_calls_every_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind's rule, named after it, is watched while find() runs over a recorded
    document: every one must be called, whichever way find() reaches it."""
    called: set[str] = set()

    def watched(name: str) -> Callable[..., list[RunWarning]]:
        rule = getattr(warning_rules, name)  # an AttributeError here: a kind without its rule

        def spy(*args: Any) -> list[RunWarning]:
            called.add(name)
            return rule(*args)

        return spy

    names = {k.value.replace("-", "_") for k in WarningKind}
    spies = {name: watched(name) for name in names}
    for name, spy in spies.items():
        monkeypatch.setattr(warning_rules, name, spy)
    for table in ("RUN_RULES", "RESULT_RULES"):  # they hold the rules themselves, not their names
        rules = getattr(warning_rules, table)
        monkeypatch.setattr(warning_rules, table, tuple(spies.get(r.__name__, r) for r in rules))
    doc = Document.from_json(json.loads((DOCS / "default-run.json").read_text()))
    warning_rules.find(doc, [])
    assert called == names


@pytest.mark.parametrize("name", sorted(p.stem for p in DOCS.glob("*.json")))
def test_the_rules_find_the_recorded_warnings_that_need_no_trials(name: str) -> None:
    """Recorded documents hold what the rules found when they were built; the rules
    that read only the document find the same again, in the same order."""
    doc = json.loads((DOCS / f"{name}.json").read_text())
    # the rules that read trials, and short-trial, which is newer than every recorded document
    trial_kinds = {WarningKind.FAILED_TRIALS, WarningKind.CACHE_NOT_DROPPED, WarningKind.SHORT_TRIAL}
    again = [
        w.to_json() for w in warning_rules.find(Document.from_json(doc), []) if w.kind not in trial_kinds
    ]
    recorded = [w for w in doc["warnings"] if w["kind"] not in trial_kinds]
    assert again == recorded


def test_trials_shorter_than_a_second_of_io_are_named_per_target_and_workload() -> None:
    doc = Document.from_json(json.loads((DOCS / "default-run.json").read_text()))
    found = list(warning_rules.short_trial(doc))
    short = {(w.target, w.workload): w.message for w in found}
    # plain's sequential reads moved their bytes in 51, 97 and 185 ms (io_bytes / throughput)
    assert short[("plain", "seq1m-q8-read")].startswith(
        "trials shorter than 1 s of I/O (median, fio's runtime): 97 ms;"
    )
    # its rnd4k-q1-read trials took 1162, 983, 1138 and 1420 ms: a median over a second
    assert ("plain", "rnd4k-q1-read") not in short
    # each names its target and workload, never one without the other
    assert all(w.kind == WarningKind.SHORT_TRIAL and w.target and w.workload for w in found)


def test_a_trial_of_exactly_a_second_of_io_is_not_short() -> None:
    raw = json.loads((DOCS / "default-run.json").read_text())
    by = {(r["workload"], r["target"], r["metric"]): r for r in raw["results"]}
    moved, rate = by[("rnd4k-q1-read", "plain", "io_bytes")], by[("rnd4k-q1-read", "plain", "throughput")]
    for seconds, short in ((1.0, False), (0.999, True)):
        moved["samples"] = [r * seconds for r in rate["samples"]]  # every trial `seconds` of I/O
        found = {(w.target, w.workload) for w in warning_rules.short_trial(Document.from_json(raw))}
        assert (("plain", "rnd4k-q1-read") in found) is short, seconds


def test_one_sample_of_a_dropped_workload_is_not_told_to_repeat_more() -> None:
    raw = json.loads((DOCS / "default-run.json").read_text())
    for r in raw["results"]:
        if r["workload"] in ("rnd4k-q1-read", "rnd4k-q1-write"):
            r["samples"], r["n"] = r["samples"][:1], 1
    for a in raw["stopping"]["answers"]:
        if a["workload"] == "rnd4k-q1-read":
            a["stopped_by"] = "dropped"
    doc = Document.from_json(raw)
    few = {
        (w.workload, w.target): w.message
        for w in warning_rules.find(doc, [])
        if w.kind == WarningKind.FEW_SAMPLES
    }
    dropped = few[("rnd4k-q1-read", "gocryptfs")]
    assert "dropped to fit the time budget" in dropped and "--repeats" not in dropped
    # a workload that was not dropped ran one trial for want of repeats: more would help
    assert few[("rnd4k-q1-write", "gocryptfs")].endswith("use --repeats 3 or more")


def _recorded() -> dict[str, Any]:
    return json.loads((DOCS / "default-run.json").read_text())


def _result(raw: dict[str, Any], workload: str, target: str, metric: str) -> dict[str, Any]:
    (r,) = [
        r for r in raw["results"] if (r["workload"], r["target"], r["metric"]) == (workload, target, metric)
    ]
    return r


def test_variation_of_exactly_a_tenth_is_not_flagged() -> None:
    raw = _recorded()
    r = _result(raw, "seq1m-q8-read", "plain", "throughput")
    doc = Document.from_json(raw)
    (result,) = [
        x for x in doc.results if (x.workload, x.target, x.metric) == ("seq1m-q8-read", "plain", "throughput")
    ]
    assert r["samples"] == result.samples
    for cv, flagged in ((0.10, False), (0.1001, True)):
        found = list(warning_rules.high_variation(doc, dataclasses.replace(result, cv=cv)))
        assert bool(found) is flagged, cv


@pytest.mark.parametrize(
    ("metric", "first", "flagged"),
    [
        ("throughput", 80.0, False),  # exactly 80 % of the others' median speed
        ("throughput", 79.9, True),
        ("lat_p99", 1.25, False),  # a time 1.25 times the others': 80 % of their speed
        ("lat_p99", 1.2501, True),
    ],
)
def test_a_first_trial_at_exactly_four_fifths_of_the_others_speed_is_not_flagged(
    metric: str, first: float, flagged: bool
) -> None:
    doc = Document.from_json(_recorded())
    (r,) = [x for x in doc.results if (x.workload, x.target, x.metric) == ("seq1m-q8-read", "plain", metric)]
    others = [100.0, 100.0, 100.0] if metric == "throughput" else [1.0, 1.0, 1.0]
    r = dataclasses.replace(r, samples=[first, *others], n=4)
    assert bool(list(warning_rules.slow_first_trial(doc, r))) is flagged


def _short_of_precision(raw: dict[str, Any], metric: str) -> Document:
    """ext4-loop's sequential reads against plain, five trials each, stopped by the time
    budget before the asked precision, on `metric`."""
    (c,) = [
        c
        for c in raw["comparisons"]
        if (c["workload"], c["target"], c["baseline"]) == ("seq1m-q8-read", "ext4-loop", "plain")
    ]
    c.update(metric=metric, stopped_by="max-time", precision=0.4)
    for target, values in (
        ("plain", [100.0, 150.0, 80.0, 120.0, 90.0]),
        ("ext4-loop", [90.0, 60.0, 95.0, 70.0, 85.0]),
    ):
        r = _result(raw, "seq1m-q8-read", target, metric)
        r.update(samples=values, n=5, rounds=[0, 1, 2, 3, 4])
    return Document.from_json(raw)


def _imprecise(doc: Document) -> str:
    (w,) = [
        w for w in warning_rules.imprecise(doc) if (w.workload, w.target) == ("seq1m-q8-read", "ext4-loop")
    ]
    return w.message


def test_a_comparison_still_as_wide_as_four_fifths_of_its_early_interval_is_not_narrowing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = _short_of_precision(_recorded(), "throughput")
    # the early interval's half-width 0.5: the final 0.4 is exactly four fifths of it
    monkeypatch.setattr(warning_rules.estimates, "halfwidth", lambda _r: 0.5)
    assert "it is not narrowing (±50.0% after 3 trials, ±40.0% after 5)" in _imprecise(doc)
    monkeypatch.setattr(warning_rules.estimates, "halfwidth", lambda _r: 0.50001)
    assert "not narrowing" not in _imprecise(doc)


def test_the_early_interval_of_a_time_is_taken_as_a_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _short_of_precision(_recorded(), "lat_p99")
    directions: list[tuple[list[float], bool | None]] = []
    speed_ratio = warning_rules.estimates.speed_ratio

    def spy(a: list[float], b: list[float], higher: bool | None, *rest: Any) -> Any:
        directions.append((list(a), higher))
        return speed_ratio(a, b, higher, *rest)

    monkeypatch.setattr(warning_rules.estimates, "speed_ratio", spy)
    _imprecise(doc)
    # ext4-loop's first three times, the early interval's: a lower time is the faster
    assert ([90.0, 60.0, 95.0], False) in directions
    assert ([90.0, 60.0, 95.0], None) not in directions and ([90.0, 60.0, 95.0], True) not in directions


def test_a_target_without_fios_byte_count_leaves_the_others_judged() -> None:
    raw = _recorded()
    before = {(w.workload, w.target) for w in warning_rules.short_trial(Document.from_json(raw))}
    raw["results"].remove(_result(raw, "seq1m-q8-read", "plain", "io_bytes"))  # the first target's
    after = {(w.workload, w.target) for w in warning_rules.short_trial(Document.from_json(raw))}
    assert ("seq1m-q8-read", "plain") in before
    assert after == before - {("seq1m-q8-read", "plain")}
    assert len(after) > 1
