"""The ranking of encrypted targets, on documents recorded by real runs
(tests/fixtures/documents/), some altered the way a failure or a faster layer would."""

import copy
import json
import math
from pathlib import Path

import pytest

from cryptbench import stats
from cryptbench.report import ranking
from cryptbench.result_model import Document
from tests.unit.bootstrap_oracle import exact_distribution, geometric_mean_of_ratios, quantile

DOCS = Path(__file__).parent.parent / "fixtures" / "documents"


def _doc(name: str) -> dict:
    return json.loads((DOCS / f"{name}.json").read_text())


def _rebuilt(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["ranking"] = [s.to_json() for s in ranking.build(Document.from_json(doc))]
    return doc


def test_clear_winner_and_a_tie_on_the_default_run() -> None:
    doc = _doc("default-run")
    (section,) = doc["ranking"]
    overall = section["overall"]
    assert [e["target"] for e in overall] == ["gocryptfs", "securefs", "encfs", "fscrypt", "cryfs"]
    assert [e["verdict"] for e in overall] == ["cheapest", "tied", "costlier", "costlier", "costlier"]
    best = overall[0]
    # tied: its interval reaches the cheapest's; costlier: it does not
    assert overall[1]["ci_high"] >= best["ci_low"] and overall[2]["ci_high"] < best["ci_low"]
    assert "ext4-loop" not in {e["target"] for e in overall}  # not encrypted: not ranked at all
    text = " ".join(ranking.sentences(Document.from_json(doc)))
    assert text.startswith("Cheapest here: gocryptfs, -58% [-66, -50] against plain over 6 workloads;")
    assert "securefs cannot be told apart from it" in text and "cryfs costs most" in text


def test_every_target_slower_and_the_geometric_mean_of_the_workloads() -> None:
    doc = _doc("default-run")
    (section,) = doc["ranking"]
    assert all(e["ci_high"] < 1 for e in section["overall"])  # each one costs
    per = {(w["workload"], e["target"]): e["ratio"] for w in section["per_workload"] for e in w["entries"]}
    for e in section["overall"]:
        ratios = [per[(w, e["target"])] for w in section["workloads"]]
        assert e["ratio"] == pytest.approx(math.exp(sum(map(math.log, ratios)) / len(ratios)))
        assert e["ci_low"] <= e["ratio"] <= e["ci_high"] and e["workloads"] == 6
    # a workload's entry repeats the document's own comparison with plain
    comps = {(c["workload"], c["target"]): c for c in doc["comparisons"] if c["baseline"] == "plain"}
    e = section["per_workload"][0]["entries"][0]
    c = comps[(section["per_workload"][0]["workload"], e["target"])]
    assert (e["ratio"], e["ci_low"], e["ci_high"]) == pytest.approx((c["ratio"], c["ci_low"], c["ci_high"]))


def test_families_rank_on_their_own_workloads() -> None:
    (section,) = _doc("default-run")["ranking"]
    fams = {f["family"]: f["workloads"] for f in section["families"]}
    assert fams == {
        "sequential": ["seq1m-q8-read", "seq1m-q8-write"],
        "random": ["rnd4k-q32-read", "rnd4k-q32-write", "rnd4k-q1-read", "rnd4k-q1-write"],
    }


def test_a_target_faster_than_plain_is_ranked_first_and_said_to_be_faster() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    for r in doc["results"]:
        if r["target"] == "encfs":
            r["samples"] = [v * 20 for v in r["samples"]]
    doc = _rebuilt(doc)
    first = doc["ranking"][0]["overall"][0]
    assert first["target"] == "encfs" and first["ci_low"] > 1 and first["change_percent"] > 0
    assert "encfs ran faster than plain here" in ranking.sentences(Document.from_json(doc))[0]


def test_failed_or_unproven_targets_are_never_ranked() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    doc["results"] = [
        r for r in doc["results"] if not (r["target"] == "cryfs" and r["workload"] == "rnd4k-q1-read")
    ]
    doc["warnings"].append(
        {
            "kind": "failed-trials",
            "message": "3 trial(s) failed",
            "workload": "rnd4k-q1-read",
            "target": "cryfs",
        }
    )
    next(t for t in doc["targets"] if t["name"] == "securefs")["encryption_verified"] = False
    doc = _rebuilt(doc)
    (section,) = doc["ranking"]
    assert {e["target"] for e in section["overall"]} == {"gocryptfs", "encfs", "fscrypt"}
    assert section["not_ranked"] == [
        {"target": "securefs", "reason": "encryption not verified"},
        {"target": "cryfs", "reason": "trials failed at rnd4k-q1-read"},
    ]
    assert (
        "Not ranked: securefs (encryption not verified); cryfs (trials failed at rnd4k-q1-read)."
        in (ranking.sentences(Document.from_json(doc))[0])
    )


def test_a_fleet_run_ranks_per_host_against_that_hosts_plain() -> None:
    doc = _doc("fleet-three-hosts")
    assert [(s["host"], s["plain"]) for s in doc["ranking"]] == [
        ("h1", "h1/plain"),
        ("h2", "h2/plain"),
        ("h3", "h3/plain"),
    ]
    assert [e["target"] for s in doc["ranking"] for e in s["overall"]] == [
        "h1/fscrypt",
        "h2/fscrypt",
        "h3/fscrypt",
    ]
    lines = ranking.sentences(Document.from_json(doc))
    assert lines[0].startswith("On h1: only h1/fscrypt was measured encrypted: -89%")


def test_ram_twins_rank_separately_from_the_device() -> None:
    doc = _doc("quick-fscrypt-gocryptfs-ram")
    assert [(s["medium"], s["plain"]) for s in doc["ranking"]] == [("device", "plain"), ("ram", "ram:plain")]
    assert [e["target"] for e in doc["ranking"][1]["overall"]] == ["ram:gocryptfs", "ram:fscrypt"]


def test_all_tied_when_intervals_overlap() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    keep = {"plain", "ext4-loop", "gocryptfs", "securefs"}
    doc["targets"] = [t for t in doc["targets"] if t["name"] in keep]
    doc["results"] = [r for r in doc["results"] if r["target"] in keep]
    doc = _rebuilt(doc)
    assert ranking.sentences(Document.from_json(doc))[0].startswith(
        "The 2 encrypted targets cannot be told apart: gocryptfs -58%"
    )


def _exact_quantiles(pairs: list[tuple[list[float], list[float]]], qs: tuple[float, ...]) -> list[float]:
    """The percentile interval of the geometric mean, from every resample enumerated."""
    values = exact_distribution([s for pair in pairs for s in pair], geometric_mean_of_ratios)
    return [quantile(values, q) for q in qs]


def test_geometric_mean_interval_matches_exact_enumeration() -> None:
    pairs = [([10.0, 14.0], [20.0, 21.0]), ([3.0, 5.0], [4.0, 4.4])]
    r = stats.geometric_mean_ratio(pairs, seed=7)
    assert r.ratio == pytest.approx(math.sqrt((12 / 20.5) * (4 / 4.2)))
    lo_band = _exact_quantiles(pairs, (0.01, 0.04))
    hi_band = _exact_quantiles(pairs, (0.96, 0.99))
    assert lo_band[0] <= r.ci_low <= lo_band[1]
    assert hi_band[0] <= r.ci_high <= hi_band[1]
    other = stats.geometric_mean_ratio(
        [([10.0, 14.0, 11.0], [20.0, 21.0, 25.0]), ([3.0, 5.0, 4.0], [4.0, 4.4, 3.9])], 7
    )
    again = stats.geometric_mean_ratio(
        [([10.0, 14.0, 11.0], [20.0, 21.0, 25.0]), ([3.0, 5.0, 4.0], [4.0, 4.4, 3.9])], 8
    )
    assert (other.ci_low, other.ci_high) != (again.ci_low, again.ci_high)  # the seed is used


def test_geometric_mean_without_enough_trials_has_no_interval() -> None:
    r = stats.geometric_mean_ratio([([10.0], [20.0, 21.0]), ([3.0, 5.0], [4.0, 4.4])])
    assert r.ci_low is None and r.ci_high is None and r.ratio > 0
