"""`cryptbench check`: the gate's arithmetic on a recorded run."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from cryptbench.commands import check
from cryptbench.model.errors import UsageError
from cryptbench.model.result import Document
from tests.support.paths import TESTS

DOC = json.loads((TESTS / "fixtures" / "documents" / "quick-fscrypt-gocryptfs-ram.json").read_text())


def _evaluate(doc: dict[str, Any], max_overhead: float) -> check.Result:
    """The gate on a document edited as JSON, the form users see, for `--max-overhead
    {max_overhead}%`: a floor of -max_overhead % change in speed."""
    return check.evaluate(Document.from_json(doc), -max_overhead)


def _change(target: str, workload: str) -> float:
    c = next(
        c
        for c in DOC["comparisons"]
        if (c["target"], c["workload"], c["kind"]) == (target, workload, "baseline")
    )
    return (c["ratio"] - 1) * 100


def test_each_encrypted_target_on_the_device_at_each_workload() -> None:
    result = _evaluate(DOC, 100)
    assert {(f.target, f.baseline) for f in result.findings} == {
        ("fscrypt", "ext4-loop"),
        ("gocryptfs", "plain"),
    }
    assert len(result.findings) == 2 * len(DOC["plan"]["workloads"])  # RAM twins explain; they are not gated
    assert result.passed


def test_a_target_fails_on_its_worst_workload_and_only_then() -> None:
    worst = min(_change("gocryptfs", w) for w in DOC["plan"]["workloads"])
    assert worst < 0 and worst == pytest.approx(_evaluate(DOC, 0).worst()["gocryptfs"].change)
    just_below = _evaluate(DOC, -worst - 0.5)
    assert not just_below.passed and not just_below.worst()["gocryptfs"].passed
    assert [f.workload for f in just_below.findings if f.target == "gocryptfs" and not f.passed] == [
        min(DOC["plan"]["workloads"], key=lambda w: _change("gocryptfs", w))
    ]
    assert _evaluate(DOC, -worst + 0.5).worst()["gocryptfs"].passed
    assert just_below.to_json()["floor_change_percent"] == pytest.approx(worst + 0.5)


def test_interval_wording_tells_clear_from_borderline() -> None:
    # in the tool's one convention: a change in speed, negative when slower
    f = check.CheckedCost("t", "b", "w", -40.0, -45.0, -35.0, False)
    assert f.words(-30) == (
        "t at w: -40% [-45, -35] against b — past the -30% bound, clearly (its whole interval)"
    )
    assert check.CheckedCost("t", "b", "w", -40.0, -45.0, -25.0, False).words(-30) == (
        "t at w: -40% [-45, -25] against b — past the -30% bound, though its interval reaches it"
    )
    passing = check.CheckedCost("t", "b", "w", -20.0, -25.0, -15.0, True)
    assert passing.words(-30) == "t at w: -20% [-25, -15] against b"


def test_a_figure_without_an_interval_never_says_its_interval_reaches() -> None:
    f = check.CheckedCost("t", "b", "w", -40.0, None, None, False)
    assert f.words(-30) == (
        "t at w: -40% (no interval) against b — past the -30% bound, with no interval to say how clearly"
    )


def test_a_missing_comparison_cannot_pass() -> None:
    doc = copy.deepcopy(DOC)
    doc["comparisons"] = [
        c for c in doc["comparisons"] if not (c["target"] == "fscrypt" and c["workload"] == "rnd4k-q1-read")
    ]
    result = _evaluate(doc, 100)
    assert not result.passed
    f = result.worst()["fscrypt"]
    assert (f.workload, f.change) == ("rnd4k-q1-read", None) and "cannot pass" in f.words(-100)


def test_a_workload_that_failed_everywhere_cannot_pass() -> None:
    doc = copy.deepcopy(DOC)
    doc["results"] = [r for r in doc["results"] if r["workload"] != "rnd4k-q1-write"]
    doc["comparisons"] = [c for c in doc["comparisons"] if c["workload"] != "rnd4k-q1-write"]
    result = _evaluate(doc, 100)
    assert not result.passed
    assert {(f.target, f.workload) for f in result.findings if f.change is None} == {
        ("fscrypt", "rnd4k-q1-write"),
        ("gocryptfs", "rnd4k-q1-write"),
    }


def test_a_run_without_encrypted_targets_is_an_error() -> None:
    doc = copy.deepcopy(DOC)
    for t in doc["targets"]:
        t["encrypted"] = False
    with pytest.raises(UsageError, match="nothing to check"):
        _evaluate(doc, 30)


@pytest.mark.parametrize("bound", ["-5%", "101%", "30 percent"])
def test_bad_bounds_are_refused(bound: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--max-overhead"):
        check.run(check.CheckRequest(max_overhead=bound, db=tmp_path / "none.sqlite"))


def _fleet(worse_on_b: str) -> dict[str, Any]:
    """DOC as two hosts' targets, b losing 10 points more of fscrypt's speed at one workload."""
    doc = copy.deepcopy(DOC)
    targets, comparisons = [], []
    for host in ("a", "b"):
        for t in DOC["targets"]:
            baseline = t["baseline"] and f"{host}/{t['baseline']}"
            targets.append({**t, "name": f"{host}/{t['name']}", "baseline": baseline, "host": host})
        for c in DOC["comparisons"]:
            c = {**c, "target": f"{host}/{c['target']}"}
            if host == "b" and c["target"] == "b/fscrypt" and c["workload"] == worse_on_b:
                c.update({k: c[k] - 0.10 for k in ("ratio", "ci_low", "ci_high") if c.get(k) is not None})
            comparisons.append(c)
    doc.update(targets=targets, comparisons=comparisons)
    return doc


def test_a_fleet_run_names_each_targets_worst_host() -> None:
    workload = min(DOC["plan"]["workloads"], key=lambda w: _change("fscrypt", w))
    result = _evaluate(_fleet(workload), 100)
    assert {f.host for f in result.findings} == {"a", "b"}
    assert set(result.worst()) == {"a/fscrypt", "b/fscrypt", "a/gocryptfs", "b/gocryptfs"}
    worst = result.worst_hosts()
    assert set(worst) == {"fscrypt", "gocryptfs"}
    assert (worst["fscrypt"].host, worst["fscrypt"].workload) == ("b", workload)
    assert worst["fscrypt"].change == pytest.approx(_change("fscrypt", workload) - 10)
    assert not worst["fscrypt"].passed and result.worst()["a/fscrypt"].passed
    assert result.to_json()["worst_hosts"]["fscrypt"]["host"] == "b"
    assert _evaluate(DOC, 100).worst_hosts() == {}


def _protected(tamper: dict[str, str]) -> dict[str, Any]:
    """DOC with each target's tamper finding as the probes record it."""
    doc = copy.deepcopy(DOC)
    for t in doc["targets"]:
        if t["name"] in tamper:
            t["protection"] = {
                "sight": "directory",
                "tamper": {"verdict": tamper[t["name"]], "evidence": "x"},
            }
    return doc


def test_require_tamper_fails_the_targets_not_proven_to_detect_it() -> None:
    doc = _protected({"fscrypt": "silent", "gocryptfs": "detected"})
    result = check.evaluate(Document.from_json(doc), None, ("tamper",))
    assert result.findings == []  # no --max-overhead: speed is not gated
    assert {r.target: r.unmet for r in result.protection} == {
        "fscrypt": "needs tamper detected: silent here",
        "gocryptfs": None,
    }  # the RAM twins explain; they are not gated
    assert not result.passed
    assert result.to_json()["required"] == ["tamper"]
    both = check.evaluate(
        Document.from_json(_protected({"fscrypt": "detected", "gocryptfs": "detected"})), -100, ("tamper",)
    )
    assert both.passed and both.findings


def test_require_on_a_run_without_probes_cannot_pass() -> None:
    result = check.evaluate(Document.from_json(DOC), None, ("names",))
    assert {r.unmet for r in result.protection} == {"needs names hidden: not proven here"}
    assert not result.passed


@pytest.mark.parametrize(
    ("flags", "message"),
    [({}, "needs --max-overhead, --require or both"), ({"require": "colour"}, "--require: unknown property")],
)
def test_check_refuses_a_gate_of_nothing_and_unknown_properties(
    flags: dict[str, str], message: str, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match=message):
        check.run(check.CheckRequest(db=tmp_path / "none.sqlite", **flags))
