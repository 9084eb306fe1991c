"""The ranking of encrypted targets, built here (never read from a stored document):
on documents recorded by real runs (tests/fixtures/documents/), some altered the way
a failure or a faster layer would, and on small documents whose verdicts are worked
out by hand."""

import copy
import dataclasses
import json
import math

import pytest

from cryptbench.analysis import ranking
from cryptbench.model.ranking_section import RankEntry, RankingSection
from cryptbench.model.result import Answer, Document, Result, TargetInfo
from cryptbench.model.stored_run import RunPlan
from cryptbench.planning.questions import RankingGroups
from cryptbench.stats import estimates
from cryptbench.trial.allocator import contenders
from tests.support.bootstrap_oracle import exact_distribution, geometric_mean_of_ratios, quantile
from tests.support.bootstrap_spy import spy_on_bootstrap
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"


def _doc(name: str) -> dict:
    """A recorded document with its ranking built anew from its results."""
    return _rebuilt(json.loads((DOCS / f"{name}.json").read_text()))


def _rebuilt(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["ranking"] = [s.to_json() for s in ranking.build(Document.from_json(doc))]
    return doc


def test_each_target_is_held_to_the_cheapest_directly_on_the_default_run() -> None:
    doc = _doc("default-run")
    (section,) = doc["ranking"]
    overall = section["overall"]
    assert [e["target"] for e in overall] == ["gocryptfs", "securefs", "encfs", "fscrypt", "cryfs"]
    assert [e["verdict"] for e in overall] == ["cheapest", "costlier", "costlier", "costlier", "costlier"]
    best, securefs = overall[0], overall[1]
    # Their intervals against plain overlap (the old rule called that a tie), but held to
    # gocryptfs directly, paired by round, securefs is 16 % to 43 % slower: costlier.
    assert securefs["ci_high"] >= best["ci_low"]
    assert (securefs["vs_ci_low"], securefs["vs_cheapest"], securefs["vs_ci_high"]) == pytest.approx(
        (0.5727, 0.7165, 0.8438), abs=1e-4
    )
    assert securefs["reason"] == "slower than gocryptfs over its whole interval"
    assert "vs_cheapest" not in best and "reason" not in best  # held to nothing
    assert "ext4-loop" not in {e["target"] for e in overall}  # not encrypted: not ranked at all
    text = " ".join(ranking.sentences(Document.from_json(doc)))
    assert text.startswith("Cheapest here: gocryptfs, -58% [-66, -50] against plain over 6 workloads.")
    assert "cryfs costs most: -89% [-90, -87]" in text
    # in the random family two cannot be told apart from gocryptfs, each for its own reason
    (random,) = [f for f in section["families"] if f["family"] == "random"]
    why = {e["target"]: (e["verdict"], e.get("reason", "")) for e in random["entries"]}
    assert why == {
        "gocryptfs": ("cheapest", ""),
        "securefs": ("tied", "securefs varies ±10% trial to trial"),
        "encfs": ("tied", "too close to tell apart at this run's precision"),
        "fscrypt": ("costlier", "slower than gocryptfs over its whole interval"),
        "cryfs": ("costlier", "slower than gocryptfs over its whole interval"),
    }
    assert [round(e["vs_cheapest"], 2) for e in random["entries"][1:]] == [0.99, 0.97, 0.89, 0.36]
    by_kind = ranking.sentences(Document.from_json(doc))[1]
    assert by_kind == (
        "Cheapest by kind of work: sequential gocryptfs -10% [-50, +46]; "
        "random gocryptfs -71% [-75, -68] (2 more tied)."
    )


def _noisy(doc: dict, target: str, scale: float) -> dict:
    """The target's trials scaled by `scale` and swinging fourfold either way, trial to trial."""
    for r in doc["results"]:
        if r["target"] == target:
            r["samples"] = [v * scale * (0.25, 4.0)[i % 2] for i, v in enumerate(r["samples"])]
    return _rebuilt(doc)


def test_a_better_figure_ranked_costlier_than_a_worse_one_says_why() -> None:
    # The run: securefs's figure is below fscrypt's, but it varies so widely that
    # the run cannot tell it from gocryptfs, while fscrypt, measured tightly, is costlier.
    doc = _noisy(_doc("default-run"), "securefs", 1.3)
    (section,) = doc["ranking"]
    verdicts = [(e["target"], e["verdict"]) for e in section["overall"]]
    assert verdicts == [
        ("gocryptfs", "cheapest"),
        ("encfs", "costlier"),
        ("fscrypt", "costlier"),
        ("securefs", "tied"),
        ("cryfs", "costlier"),
    ]
    securefs = section["overall"][3]
    assert securefs["vs_ci_low"] < 1 <= securefs["vs_ci_high"]
    assert securefs["reason"].startswith("securefs varies ±")
    first = ranking.sentences(Document.from_json(doc))[0]
    assert (
        "; securefs (-64% [-76, +48]) cannot be told apart from it: securefs varies ±143% trial to trial."
        in first
    )
    assert (
        " encfs and fscrypt rank costlier despite better figures than securefs: held to gocryptfs"
        " directly, they are -43% [-47, -34] and -52% [-55, -45], while securefs cannot be set apart"
        " from it." in first
    )
    # one tied with the cheapest costs no "most", however low its figure
    assert "cryfs costs most" in first


def test_all_tied_when_the_direct_comparison_cannot_tell_them_apart() -> None:
    doc = _doc("default-run")
    keep = {"plain", "ext4-loop", "gocryptfs", "securefs"}
    doc["targets"] = [t for t in doc["targets"] if t["name"] in keep]
    doc["results"] = [r for r in doc["results"] if r["target"] in keep]
    doc = _noisy(doc, "securefs", 1.3)
    assert ranking.sentences(Document.from_json(doc))[0] == (
        "The 2 encrypted targets cannot be told apart: gocryptfs -58% [-66, -50], "
        "securefs -85% [-90, -39], against plain over 6 workloads."
    )


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
    doc = _doc("default-run")
    for r in doc["results"]:
        if r["target"] == "encfs":
            r["samples"] = [v * 20 for v in r["samples"]]
    doc = _rebuilt(doc)
    first = doc["ranking"][0]["overall"][0]
    assert first["target"] == "encfs" and first["ci_low"] > 1 and first["change_percent"] > 0
    assert "encfs ran faster than plain here" in ranking.sentences(Document.from_json(doc))[0]


def test_failed_or_unproven_targets_are_never_ranked() -> None:
    doc = _doc("default-run")
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


def _exact_quantiles(pairs: list[tuple[list[float], list[float]]], qs: tuple[float, ...]) -> list[float]:
    """The percentile interval of the geometric mean, from every resample enumerated."""
    values = exact_distribution([s for pair in pairs for s in pair], geometric_mean_of_ratios)
    return [quantile(values, q) for q in qs]


def test_geometric_mean_interval_matches_exact_enumeration() -> None:
    pairs = [([10.0, 14.0, 11.0], [20.0, 21.0, 26.0]), ([3.0, 5.0, 4.2], [4.0, 4.4, 3.6])]
    r = estimates.geometric_mean_ratio(pairs, seed=7)
    assert r.ratio == pytest.approx(math.sqrt((11 / 21) * (4.2 / 4.0)))
    lo_band = _exact_quantiles(pairs, (0.015, 0.035))
    hi_band = _exact_quantiles(pairs, (0.965, 0.985))
    # The bands tell a 95 % interval from a 90 % one: its bounds fall outside both.
    ninety = _exact_quantiles(pairs, (0.05, 0.95))
    assert ninety[0] > lo_band[1] and ninety[1] < hi_band[0]
    assert r.ci_low is not None and r.ci_high is not None
    assert lo_band[0] <= r.ci_low <= lo_band[1]
    assert hi_band[0] <= r.ci_high <= hi_band[1]
    other = estimates.geometric_mean_ratio(
        [([10.0, 14.0, 11.0], [20.0, 21.0, 25.0]), ([3.0, 5.0, 4.0], [4.0, 4.4, 3.9])], 7
    )
    again = estimates.geometric_mean_ratio(
        [([10.0, 14.0, 11.0], [20.0, 21.0, 25.0]), ([3.0, 5.0, 4.0], [4.0, 4.4, 3.9])], 8
    )
    assert (other.ci_low, other.ci_high) != (again.ci_low, again.ci_high)  # the seed is used


def test_geometric_mean_without_enough_trials_has_no_interval() -> None:
    r = estimates.geometric_mean_ratio([([10.0], [20.0, 21.0]), ([3.0, 5.0], [4.0, 4.4])])
    assert r.ci_low is None and r.ci_high is None and r.ratio > 0


# Small documents whose verdicts are worked out by hand. Trials of equal value give
# a ratio exactly and an interval of one point (ci_low == ci_high == the ratio).
SEQ, RND, APP = "seq-read", "rnd-read", "responsiveness"
PLAN = {
    "workloads": [SEQ, RND, APP],
    "workload_specs": {SEQ: {"rw": "read"}, RND: {"rw": "randread"}},  # an app has no fio spec
    "primary_metrics": {SEQ: "throughput", RND: "throughput", APP: "probe.lat_p99"},  # p99: lower is better
    "seed": 3,
}
BASE = Document.from_json(json.loads((DOCS / "default-run.json").read_text()))


def _target(name: str, medium: str = "device", host: str | None = None) -> TargetInfo:
    backend = name.rsplit("/", 1)[-1].removeprefix("ram:")
    plain = backend == "plain"
    return TargetInfo(
        name, backend, None if plain else "plain", not plain, "direct", None, None,
        None if plain else False, None if plain else True, {}, medium, host,
    )  # fmt: skip


def _result(workload: str, target: str, samples: list[float]) -> Result:
    metric = PLAN["primary_metrics"][workload]
    return Result(
        workload, target, metric, "", samples, len(samples), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None, None
    )


def _alike(value: float, trials: int = 3) -> list[float]:
    """`trials` figures whose median is `value`, a thousandth apart: a spread too small
    to print (-20% [-20, -20]), yet one to build an interval from; trials that all read
    one figure have none (stats/estimates.no_spread)."""
    return [value * (1 + 0.001 * (i - (trials - 1) / 2)) for i in range(trials)]


def _speeds(target: str, seq: float, rnd: float, p99: float, trials: int = 3) -> list[Result]:
    """A target's results: MB/s at the two fio workloads, and a p99 in seconds."""
    return [
        _result(SEQ, target, _alike(seq, trials)),
        _result(RND, target, _alike(rnd, trials)),
        _result(APP, target, _alike(p99, trials)),
    ]


def _document(targets: list[TargetInfo], results: list[Result], margin: float | None = None) -> Document:
    assert BASE.stopping is not None
    stopping = dataclasses.replace(BASE.stopping, rule={**BASE.stopping.rule, "equivalence": margin})
    return dataclasses.replace(
        BASE, plan=RunPlan(PLAN), targets=targets, results=results, warnings=[], stopping=stopping
    )


def _section(
    targets: list[TargetInfo], results: list[Result], margin: float | None = None
) -> list[RankingSection]:
    return ranking.build(_document(targets, results, margin))


def _verdicts(entries: list[RankEntry]) -> list[tuple[str, float, str]]:
    return [(e.target, round(e.ratio, 9), e.verdict) for e in entries]


def test_verdicts_worked_out_by_hand() -> None:
    # plain: 100 and 100 MB/s, p99 10 ms. a: 80 % of plain's speed everywhere (its p99
    # 12.5 ms is plain's 10 ms over 0.8). b: half plain's speed. c: a's very figures,
    # so its interval, a thousandth of the trials' spread wide, holds the cheapest's: tied.
    (s,) = _section(
        [_target("plain"), _target("a"), _target("b"), _target("c")],
        [
            *_speeds("plain", 100, 100, 0.010),
            *_speeds("a", 80, 80, 0.0125),
            *_speeds("b", 50, 50, 0.020),
            *_speeds("c", 80, 80, 0.0125),
        ],
    )
    assert s.plain == "plain" and s.workloads == [SEQ, RND, APP]
    assert _verdicts(s.overall) == [("a", 0.8, "cheapest"), ("c", 0.8, "tied"), ("b", 0.5, "costlier")]
    best, tied = s.overall[0], s.overall[1]
    assert (best.ci_low, best.ci_high) == (tied.ci_low, tied.ci_high) == pytest.approx((0.8, 0.8), abs=0.001)
    # held to a directly, c's interval holds no change: not faster than it, just too close
    assert tied.vs_ci_low < 1.0 < tied.vs_ci_high
    assert tied.reason == "too close to tell apart at this run's precision"
    assert ranking.interval_of(best) == ""  # the cheapest is held to nothing
    assert [e.workloads for e in s.overall] == [3, 3, 3]
    assert [(f.family, f.workloads) for f in s.families] == [
        ("sequential", [SEQ]),
        ("random", [RND]),
        ("application", [APP]),
    ]
    # responsiveness' p99 is a time: a slower p99 is a ratio below 1, not above
    (app,) = [f for f in s.families if f.family == "application"]
    assert _verdicts(app.entries) == [("a", 0.8, "cheapest"), ("c", 0.8, "tied"), ("b", 0.5, "costlier")]
    assert [w.workload for w in s.per_workload] == [SEQ, RND, APP]


def test_the_cheapest_differs_by_family_and_overall_is_the_geometric_mean() -> None:
    # a: 0.9 sequential, 0.4 random, 0.8 app; b: 0.5, 0.8, 0.8.
    # Overall a = (0.9 * 0.4 * 0.8) ** (1/3) = 0.66, b = (0.5 * 0.8 * 0.8) ** (1/3) = 0.684.
    (s,) = _section(
        [_target("plain"), _target("a"), _target("b")],
        [*_speeds("plain", 100, 100, 0.010), *_speeds("a", 90, 40, 0.0125), *_speeds("b", 50, 80, 0.0125)],
    )
    fam = {f.family: _verdicts(f.entries) for f in s.families}
    assert fam["sequential"] == [("a", 0.9, "cheapest"), ("b", 0.5, "costlier")]
    assert fam["random"] == [("b", 0.8, "cheapest"), ("a", 0.4, "costlier")]
    assert fam["application"] == [("a", 0.8, "cheapest"), ("b", 0.8, "tied")]
    overall = _verdicts(s.overall)
    assert overall == [
        ("b", round((0.5 * 0.8 * 0.8) ** (1 / 3), 9), "cheapest"),
        ("a", round((0.9 * 0.4 * 0.8) ** (1 / 3), 9), "costlier"),
    ]


def test_without_an_interval_the_run_cannot_tell_targets_apart() -> None:
    # d ran once: no interval, so though its one ratio is far below, it is tied.
    one_trial = [_target("plain"), _target("a"), _target("d")]
    (s,) = _section(
        one_trial,
        [
            *_speeds("plain", 100, 100, 0.010),
            *_speeds("a", 80, 80, 0.0125),
            *_speeds("d", 25, 25, 0.04, trials=1),
        ],
    )
    assert _verdicts(s.overall) == [("a", 0.8, "cheapest"), ("d", 0.25, "tied")]
    assert s.overall[1].ci_low is None and s.overall[1].ci_high is None
    assert s.overall[1].reason == "d ran 1 trial: no interval"
    assert ranking.interval(None, 1.2) == ranking.interval(0.8, None) == "(no interval)"
    # and when the cheapest itself has no interval, every other target is tied with it
    (s,) = _section(
        one_trial,
        [
            *_speeds("plain", 100, 100, 0.010),
            *_speeds("a", 80, 80, 0.0125, trials=1),
            *_speeds("d", 25, 25, 0.04),
        ],
    )
    assert _verdicts(s.overall) == [("a", 0.8, "cheapest"), ("d", 0.25, "tied")]
    assert s.overall[1].reason == "a ran 1 trial: no interval"


def _three_places() -> tuple[list[TargetInfo], list[Result]]:
    """fscrypt and plain on the device, on RAM and on host h1: 0.8, 0.5 and 0.25 of its plain."""
    targets = [
        _target("plain"),
        _target("fscrypt"),
        _target("ram:plain", medium="ram"),
        _target("ram:fscrypt", medium="ram"),
        _target("h1/plain", host="h1"),
        _target("h1/fscrypt", host="h1"),
    ]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("fscrypt", 80, 80, 0.0125),
        *_speeds("ram:plain", 1000, 1000, 0.001),
        *_speeds("ram:fscrypt", 500, 500, 0.002),
        *_speeds("h1/plain", 400, 400, 0.001),
        *_speeds("h1/fscrypt", 100, 100, 0.004),
    ]
    return targets, results


def test_sections_by_host_and_by_ram_twin_each_against_their_own_plain() -> None:
    # Each target is held to the plain of its host and medium, never to another's:
    # on the device fscrypt is 0.8 of plain, on RAM 0.5 of ram:plain, on h1 0.25 of h1/plain.
    targets, results = _three_places()
    sections = _section(targets, results)
    assert [(s.host, s.medium, s.plain) for s in sections] == [
        (None, "device", "plain"),
        (None, "ram", "ram:plain"),
        ("h1", "device", "h1/plain"),
    ]
    assert [_verdicts(s.overall) for s in sections] == [
        [("fscrypt", 0.8, "cheapest")],
        [("ram:fscrypt", 0.5, "cheapest")],
        [("h1/fscrypt", 0.25, "cheapest")],
    ]


def test_a_target_missing_a_workload_is_not_ranked_and_plain_missing_one_drops_it() -> None:
    (s,) = _section(
        [_target("plain"), _target("a"), _target("b")],
        [*_speeds("plain", 100, 100, 0.010), *_speeds("a", 80, 80, 0.0125), *_speeds("b", 50, 50, 0.02)[:2]],
    )
    assert [(n.target, n.reason) for n in s.not_ranked] == [("b", f"trials failed at {APP}")]
    (s,) = _section(
        [_target("plain"), _target("a")],
        [*_speeds("plain", 100, 100, 0.010)[1:], *_speeds("a", 80, 80, 0.0125)],
    )
    assert s.workloads == [RND, APP] and _verdicts(s.overall) == [("a", 0.8, "cheapest")]


def _swinging(target: str, factor: float, rounds: list[int] | None) -> list[Result]:
    """Speeds that swing 2x from round to round, `factor` of plain's in every round to a
    thousandth, each target off it its own way (by the factor's digits), their geometric
    mean `factor` still."""
    e = 1.001 ** round(factor * 10 - 9)
    swing = [s * w for s, w in zip([1.0, 2.0, 0.5, 1.5], [e, 1 / e, 1 / e, e], strict=True)]
    return [
        dataclasses.replace(_result(SEQ, target, [100 * s * factor for s in swing]), rounds=rounds),
        dataclasses.replace(_result(RND, target, [50 * s * factor for s in swing]), rounds=rounds),
        dataclasses.replace(_result(APP, target, [0.01 * s / factor for s in swing]), rounds=rounds),
    ]


def test_trials_of_the_same_rounds_rank_paired() -> None:
    # a is 0.8 of plain in every round, b 0.7: paired by round, the swing cancels and each
    # interval is that narrow, so b is costlier; without rounds the swing hides the gap.
    targets = [_target("plain"), _target("a"), _target("b")]
    rounds = [0, 1, 2, 3]
    results = [*_swinging("plain", 1.0, rounds), *_swinging("a", 0.8, rounds), *_swinging("b", 0.7, rounds)]
    (s,) = _section(targets, results)
    assert _verdicts(s.overall) == [("a", 0.8, "cheapest"), ("b", 0.7, "costlier")]
    assert [(e.ci_low, e.ci_high) for e in s.overall] == [
        pytest.approx((0.8, 0.8), abs=0.002),
        pytest.approx((0.7, 0.7), abs=0.002),
    ]
    (seq,) = [w for w in s.per_workload if w.workload == SEQ]
    assert _verdicts(seq.entries) == [("a", 0.8, "cheapest"), ("b", 0.7, "costlier")]
    unpaired = [dataclasses.replace(r, rounds=None) for r in results]
    (s,) = _section(targets, unpaired)  # the ratio of medians, off by the wobble
    assert [(e.target, round(e.ratio, 2), e.verdict) for e in s.overall] == [
        ("a", 0.8, "cheapest"),
        ("b", 0.7, "tied"),
    ]


def test_targets_within_the_equivalence_margin_of_the_cheapest_are_equal_not_tied() -> None:
    # a 0.80 of plain, e 0.79 (e/a = 0.9875, within ±3 %), t 0.70 measured loosely, b 0.5:
    # e is equal to a; t's interval reaches a's but their difference is not known to be
    # small, so it is tied; b is costlier.
    targets = [_target("plain"), _target("a"), _target("e"), _target("t"), _target("b")]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("a", 80, 80, 0.0125),
        *_speeds("e", 79, 79, 0.010 / 0.79),
        *[dataclasses.replace(r, samples=[v * f for v, f in zip(r.samples, (0.8, 1.0, 1.2), strict=True)])
          for r in _speeds("t", 70, 70, 0.010 / 0.7)],
        *_speeds("b", 50, 50, 0.020),
    ]  # fmt: skip
    (s,) = _section(targets, results, margin=0.03)
    assert [(e.target, e.verdict) for e in s.overall] == [
        ("a", "cheapest"),
        ("e", "equal"),
        ("t", "tied"),
        ("b", "costlier"),
    ]
    doc = dataclasses.replace(_document(targets, results, 0.03), ranking=[s])
    first, by_kind = ranking.sentences(doc)
    assert (
        "; e costs the same within ±3%; t (-12% [-25, +0]) cannot be told apart from it: t varies ±20% trial"
        " to trial. b costs most" in first
    )
    assert s.overall[1].reason == "within ±3% of a"
    assert "sequential a -20% [-20, -20] (1 more equal, 1 more tied)" in by_kind
    # without a margin (a run recorded before there was one) e's 1 %, measured exactly, is costlier
    (s,) = _section(targets, results)
    assert [e.verdict for e in s.overall] == ["cheapest", "costlier", "tied", "costlier"]


def test_all_equal_is_said_as_such() -> None:
    targets = [_target("plain"), _target("a"), _target("e")]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("a", 80, 80, 0.0125),
        *_speeds("e", 79, 79, 0.010 / 0.79),
    ]
    (s,) = _section(targets, results, margin=0.03)
    doc = dataclasses.replace(_document(targets, results, 0.03), ranking=[s])
    assert ranking.sentences(doc)[0] == (
        "The 2 encrypted targets cost the same within ±3%: a -20% [-20, -20], e -21% [-21, -21], "
        "against plain over 3 workloads."
    )
    # each workload's own ranking is over that one workload
    assert [e.workloads for w in s.per_workload for e in w.entries] == [1] * 6


def test_a_workload_dropped_to_fit_the_budget_ranks_nothing() -> None:
    # the app workload ran one round, then was dropped: the ranking is over the other two
    targets = [_target("plain"), _target("a"), _target("b")]
    results = [*_speeds("plain", 100, 100, 0.010), *_speeds("a", 80, 80, 0.0125), *_speeds("b", 50, 50, 0.02)]
    results = [dataclasses.replace(r, samples=r.samples[:1]) if r.workload == APP else r for r in results]
    doc = _document(targets, results)
    assert doc.stopping is not None
    answer = Answer(APP, "a", "plain", "probe.lat_p99", "dropped", 1, 1, None)
    doc = dataclasses.replace(doc, stopping=dataclasses.replace(doc.stopping, answers=[answer]))
    (s,) = ranking.build(doc)
    assert s.workloads == [SEQ, RND] and [f.family for f in s.families] == ["sequential", "random"]
    assert _verdicts(s.overall) == [("a", 0.8, "cheapest"), ("b", 0.5, "costlier")]
    first = ranking.sentences(dataclasses.replace(doc, ranking=[s]))[0]
    assert "against plain over 2 workloads (1 dropped to fit the time budget)" in first


def test_a_kind_ranked_on_its_writes_alone_says_so_and_one_that_cannot_be_ranked_names_none() -> None:
    # The run: the random reads dropped to fit the budget, the random writes kept.
    doc = _doc("default-run")
    assert doc["stopping"] is not None
    doc["stopping"]["answers"] = [
        {**a, "stopped_by": "dropped"}
        for a in doc["stopping"]["answers"]
        if a["workload"].startswith("rnd4k-q") and a["workload"].endswith("-read")
    ] + [
        a
        for a in doc["stopping"]["answers"]
        if not (a["workload"].startswith("rnd4k-q") and a["workload"].endswith("-read"))
    ]
    doc = _rebuilt(doc)
    (section,) = doc["ranking"]
    (random,) = [f for f in section["families"] if f["family"] == "random"]
    assert random["workloads"] == ["rnd4k-q32-write", "rnd4k-q1-write"]
    by_kind = ranking.sentences(Document.from_json(doc))[1]
    # fscrypt is cheapest at random writes alone (at random reads it was near the worst)
    assert "random (writes only: the reads were dropped to fit the time budget) fscrypt -70%" in by_kind
    assert "sequential gocryptfs" in by_kind  # sequential lost nothing: no note
    # the same reads lost because plain has no result for them: not measured, not dropped
    lost = _doc("default-run")
    lost["results"] = [
        r
        for r in lost["results"]
        if not (
            r["target"] == "plain" and r["workload"].startswith("rnd4k-q") and r["workload"].endswith("-read")
        )
    ]
    assert ranking.sentences(Document.from_json(_rebuilt(lost)))[1] == (
        "Cheapest by kind of work: sequential gocryptfs -10% [-50, +46]; "
        "random (writes only: the reads were not measured) fscrypt -70% [-76, -67]."
    )
    # a kind whose every other target cannot be told apart from its first names no winner
    targets = [_target("plain"), _target("a"), _target("t")]
    swing = (0.8, 1.0, 1.2)
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("a", 80, 40, 0.0125),
        *[dataclasses.replace(r, samples=[v * f for v, f in zip(r.samples, swing, strict=True)])
          for r in _speeds("t", 70, 20, 0.010 / 0.7)],
    ]  # fmt: skip
    small = _document(targets, results, 0.03)
    small = dataclasses.replace(small, ranking=ranking.build(small))
    by_kind = ranking.sentences(small)[1]
    assert by_kind.startswith("Cheapest by kind of work: sequential none: its 2 cannot be told apart;")
    assert "; random a -60% [-60, -60];" in by_kind  # a clear winner is named


def _entry(
    target: str, verdict: str, vs: tuple[float, float, float] | None = None, reason: str = ""
) -> RankEntry:
    """A ranked target as the sentences read it: held to the cheapest at `vs` (ratio, low, high)."""
    low_high = (None, None, None) if vs is None else vs
    return RankEntry(target, 0.8, 0.7, 0.9, 6, verdict, *low_high, reason)


CHEAPEST = _entry("a", "cheapest")


def test_the_cheapests_peers_are_named_each_with_its_reason() -> None:
    """Two equal cost the same (plural); a tie without a direct comparison is named alone,
    one stored before ties had reasons says none."""
    entries = [
        CHEAPEST,
        _entry("e", "equal", (0.99, 0.97, 1.01)),
        _entry("f", "equal", (0.99, 0.98, 1.0)),
        _entry("t", "tied"),
        _entry("u", "tied", (0.75, 0.5, 1.1), "u varies ±40% trial to trial"),
    ]
    assert ranking._others(entries, "±3%") == (
        "; e and f cost the same within ±3%; t cannot be told apart from it; u (-25% [-50, +10]) cannot"
        " be told apart from it: u varies ±40% trial to trial"
    )


def test_a_costlier_target_with_a_better_figure_is_explained_in_the_singular() -> None:
    entries = [CHEAPEST, _entry("c", "costlier", (0.9, 0.85, 0.95)), _entry("u", "tied", (0.75, 0.5, 1.1))]
    assert ranking._inversions(entries) == (
        " c ranks costlier despite a better figure than u: held to a directly, it is -10% [-15, -5], while"
        " u cannot be set apart from it."
    )


def test_the_targets_below_an_inversion_are_those_after_its_first_costlier_one() -> None:
    """e, beside the cheapest before c, is no target c's figure beats; g and u after it are."""
    entries = [
        CHEAPEST,
        _entry("e", "equal", (0.99, 0.97, 1.01)),
        _entry("c", "costlier", (0.9, 0.85, 0.95)),
        _entry("g", "equal", (0.99, 0.98, 1.0)),
        _entry("d", "costlier", (0.88, 0.84, 0.93)),
        _entry("u", "tied", (0.75, 0.5, 1.1)),
    ]
    assert ranking._inversions(entries) == (
        " c and d rank costlier despite better figures than g and u: held to a directly, they are"
        " -10% [-15, -5] and -12% [-16, -7], while g and u cannot be set apart from it."
    )


def _said(targets: list[TargetInfo], results: list[Result], margin: float | None = None) -> list[str]:
    """The ranking's sentences, as the answer prints them, of a document ranked here."""
    doc = _document(targets, results, margin)
    return ranking.sentences(dataclasses.replace(doc, ranking=ranking.build(doc)))


def test_each_section_opens_with_where_it_was_measured_when_there_are_several() -> None:
    targets, results = _three_places()
    assert _said(targets, results) == [
        "On the device: only fscrypt was measured encrypted: -20% [-20, -20] against plain over 3 workloads.",
        "On RAM: only ram:fscrypt was measured encrypted: -50% [-50, -50] "
        "against ram:plain over 3 workloads.",
        "On h1: only h1/fscrypt was measured encrypted: -75% [-75, -75] against h1/plain over 3 workloads.",
    ]
    # two sections are several too; one names no place
    assert _said(targets[:4], results[:12])[1].startswith("On RAM: only ram:fscrypt")
    assert _said(targets[:2], results[:6])[0].startswith("Only fscrypt was measured encrypted")


def test_each_reason_not_to_rank_is_said_after_the_ranking() -> None:
    unchecked = dataclasses.replace(_target("b"), encryption_verified=None)
    unverified = dataclasses.replace(_target("c"), encryption_verified=False)
    targets = [_target("plain"), _target("a"), unchecked, unverified, _target("d")]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("a", 80, 80, 0.0125),
        *_speeds("b", 50, 50, 0.02),
        *_speeds("c", 50, 50, 0.02),
        *_speeds("d", 50, 50, 0.02)[:1],  # two of its three workloads missing
    ]
    assert _said(targets, results)[0] == (
        "Only a was measured encrypted: -20% [-20, -20] against plain over 3 workloads. "
        "Not ranked: b (encryption not checked); c (encryption not verified); "
        "d (trials failed at rnd-read and 1 more)."
    )


def test_only_a_target_faster_than_plain_over_its_whole_interval_is_said_to_be_faster() -> None:
    # a: plain's very figures, an interval of one point at 1.0: not faster. b, c, e: faster.
    targets = [_target("plain"), _target("a"), _target("b"), _target("c"), _target("e")]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("a", 100, 100, 0.010),
        *_speeds("b", 200, 200, 0.005),
        *_speeds("c", 150, 150, 0.010 / 1.5),
        *_speeds("e", 120, 120, 0.010 / 1.2),
    ]
    first = _said(targets, results)[0]
    assert first.endswith(" b, c and e ran faster than plain here; the diagnosis says why."), first
    assert first.startswith("Cheapest here: b, +100% [+100, +100] against plain over 3 workloads.")


def test_one_workload_is_said_in_the_singular() -> None:
    targets = [_target("plain"), _target("a"), _target("b")]
    results = [
        *_speeds("plain", 100, 100, 0.010)[:1],
        *_speeds("a", 80, 80, 0.0125)[:1],
        *_speeds("b", 50, 50, 0.02)[:1],
    ]
    assert _said(targets, results)[0] == (
        "Cheapest here: a, -20% [-20, -20] against plain over 1 workload. b costs most: -50% [-50, -50]."
    )


@pytest.mark.parametrize(
    ("needs", "protection", "said"),
    [
        (["tamper"], {"names": {"verdict": "hidden"}}, "needs tamper detected: not probed here"),
        (["names"], {"names": {"verdict": "shown"}}, "needs names hidden: shown here"),
        (["tamper"], {"tamper": {"verdict": "hidden"}}, "needs tamper detected: hidden here"),
        (
            ["names"],
            {"broken": "a control failed", "names": {"verdict": "hidden"}},
            "needs names hidden: not proven here",
        ),
        (["names"], None, "needs names hidden: not proven here"),
        (["names", "tamper"], {"names": {"verdict": "hidden"}, "tamper": {"verdict": "detected"}}, None),
        ([], None, None),
    ],
)
def test_a_need_is_met_only_by_its_own_verdict_proven(
    needs: list[str], protection: dict | None, said: str | None
) -> None:
    assert ranking.unmet_need(needs, dataclasses.replace(_target("a"), protection=protection)) == said


def test_without_plains_results_nothing_is_ranked_and_each_target_says_why() -> None:
    targets = [_target("plain"), _target("a")]
    results = _speeds("a", 80, 80, 0.0125)
    (s,) = _section(targets, results)
    assert s.workloads == [] and s.overall == [] and s.families == []
    assert [(x.target, x.reason) for x in s.not_ranked] == [("a", "plain has no result to compare with")]
    assert _said(targets, results) == [
        "No encrypted target to rank. Not ranked: a (plain has no result to compare with)."
    ]


def test_a_target_not_proven_to_meet_the_runs_need_is_not_ranked() -> None:
    proven = {"names": {"verdict": "hidden"}}
    targets = [
        _target("plain"),
        dataclasses.replace(_target("a"), protection=proven),
        dataclasses.replace(_target("b"), protection={"names": {"verdict": "visible"}}),
    ]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        *_speeds("a", 80, 80, 0.0125),
        *_speeds("b", 90, 90, 0.011),
    ]
    doc = dataclasses.replace(_document(targets, results), plan=RunPlan({**PLAN, "needs": ["names"]}))
    (s,) = ranking.build(doc)
    assert [e.target for e in s.overall] == ["a"]
    assert [(x.target, x.reason) for x in s.not_ranked] == [("b", "needs names hidden: visible here")]


def test_one_kind_of_work_gets_no_by_kind_sentence() -> None:
    plan = {**PLAN, "workloads": [SEQ], "primary_metrics": {SEQ: "throughput"}}
    targets = [_target("plain"), _target("a"), _target("b")]
    results = [
        _result(SEQ, "plain", _alike(100.0)),
        _result(SEQ, "a", _alike(80.0)),
        _result(SEQ, "b", _alike(50.0)),
    ]
    doc = dataclasses.replace(_document(targets, results), plan=RunPlan(plan))
    doc = dataclasses.replace(doc, ranking=ranking.build(doc))
    assert ranking.sentences(doc) == [
        "Cheapest here: a, -20% [-20, -20] against plain over 1 workload. b costs most: -50% [-50, -50]."
    ]


def _varying(target: str, samples: list[float]) -> list[Result]:
    """A target's results whose every workload varies as `samples` (MB/s) do, trial to trial."""
    return [
        _result(SEQ, target, samples),
        _result(RND, target, samples),
        _result(APP, target, [1.0 / x for x in reversed(samples)]),  # seconds: the slowest last
    ]


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        # b's trials vary by exactly the threshold (8 MB/s about 80: 0.10): put down to noise
        ([82.0] * 3, [72.0, 80.0, 88.0], "b varies ±10% trial to trial"),
        # a hair under it (7.2 about 80): the run's precision, not a noisy target
        ([82.0] * 3, [72.8, 80.0, 87.2], "too close to tell apart at this run's precision"),
        # both vary past it: the one that varies more is named, the cheapest as much as another
        ([63.0, 90.0, 117.0], [70.4, 80.0, 89.6], "a varies ±30% trial to trial"),
        ([79.2, 90.0, 100.8], [56.0, 80.0, 104.0], "b varies ±30% trial to trial"),
    ],
)
def test_a_tie_is_put_down_to_the_noisier_side_from_a_tenth_of_variation(
    a: list[float], b: list[float], reason: str
) -> None:
    (s,) = _section(
        [_target("plain"), _target("a"), _target("b")],
        [*_varying("plain", [100.0] * 3), *_varying("a", a), *_varying("b", b)],
    )
    assert [(e.target, e.verdict) for e in s.overall] == [("a", "cheapest"), ("b", "tied")]
    assert s.overall[1].reason == reason


def test_the_stopping_rule_weighs_contenders_on_the_intervals_the_ranking_prints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run gives its trials to the targets that can still change the ranking
    (trial/allocator.contenders): it must judge them on the very intervals the report ranks by,
    each resampled from the same samples with the same seed, overall and per kind of work."""
    drawn = spy_on_bootstrap(monkeypatch)
    swing = [1.0, 1.3, 0.8, 1.1, 0.9]  # unpaired (no rounds): every interval is bootstrapped
    results = [
        *_varying("plain", [100.0 * s for s in swing]),
        *_varying("a", [80.0 * s for s in reversed(swing)]),
        *_varying("b", [76.0 * s for s in swing[1:] + swing[:1]]),
    ]
    doc = _document([_target("plain"), _target("a"), _target("b")], results)
    ranking.build(doc)
    printed = set(drawn)
    drawn.clear()
    groups = RankingGroups(
        {"a": "plain", "b": "plain"},
        {w: ranking.family(doc.plan, w) for w in PLAN["workloads"]},
        {SEQ: True, RND: True, APP: False},
    )
    samples = {(r.workload, r.target): r.samples for r in results}
    assert contenders(groups, samples, {}, doc.plan.seed) == {"a", "b"}
    assert drawn and set(drawn) <= printed


def test_trials_that_all_read_one_figure_are_tied_for_want_of_an_interval_and_say_so() -> None:
    """a 2 ms trial reads 1.5 times a 3 ms one, every round (fio's runtime is in ms): no
    spread to estimate, so no interval, and b is not "costlier beyond doubt" but tied."""
    targets = [_target("plain"), _target("a"), _target("b")]
    results = [
        *_speeds("plain", 100, 100, 0.010),
        _result(SEQ, "a", [75.0, 75.0, 75.0]),
        _result(SEQ, "b", [50.0, 50.0, 50.0]),
        *(_result(w, "a", _alike(v)) for w, v in ((RND, 75.0), (APP, 0.0133))),
        *(_result(w, "b", _alike(v)) for w, v in ((RND, 50.0), (APP, 0.020))),
    ]
    (s,) = _section(targets, results)
    (seq,) = [w for w in s.per_workload if w.workload == SEQ]
    assert [(e.target, e.verdict) for e in seq.entries] == [("a", "cheapest"), ("b", "tied")]
    b = seq.entries[1]
    assert (b.vs_ci_low, b.vs_ci_high) == (None, None) and b.vs_cheapest == pytest.approx(50 / 75)
    assert b.reason == "every round read the same figures, 3 or more trials each: no spread, so no interval"
    # one trial fewer is a different reason, said as before
    results[4] = _result(SEQ, "b", [50.0])
    (s,) = _section(targets, results)
    (seq,) = [w for w in s.per_workload if w.workload == SEQ]
    assert seq.entries[1].reason == "b ran 1 trial: no interval"
