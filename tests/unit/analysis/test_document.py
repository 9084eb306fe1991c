"""The result document, from a real store filled with synthetic trials."""

import dataclasses
import json
from pathlib import Path

import pytest

from cryptbench.analysis import document
from cryptbench.model.errors import UsageError
from cryptbench.model.result import Comparison, Document, TargetInfo
from cryptbench.stats.stopping import Question, interval
from cryptbench.store.database import MetricValue, Store, TrialRecord
from tests.support.bootstrap_spy import spy_on_bootstrap
from tests.support.paths import TESTS

CONTRACT_TARGET_KEYS = {"name", "backend", "baseline", "io_mode", "encryption_verified"}
CONTRACT_RESULT_KEYS = {
    "workload",
    "target",
    "metric",
    "unit",
    "samples",
    "median",
    "ci_low",
    "ci_high",
    "cv",
}
DOCS = TESTS / "fixtures" / "documents"
CONTRACT_COMPARISON_KEYS = {"workload", "target", "baseline", "ratio", "ci_low", "ci_high"}


def _store(
    tmp_path: Path,
    series: dict[tuple[str, str], list[float]],
    failed: int = 0,
    resident: int = 0,
    env: dict | None = None,
) -> tuple[Store, int]:
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run(
        "quick",
        {"seed": 3, "size": 1 << 20, "repeats": 5, "data": "random", "workloads": ["w1", "w2"]},
        env or {"cache_drop": "drop_caches", "kernel_crypto": {}},
        "0.1.0",
    )
    for name, baseline, enc in (("plain", None, False), ("gocryptfs", "plain", True)):
        store.insert_target(
            run_id,
            TargetInfo(
                name=name,
                backend=name,
                baseline=baseline,
                encrypted=enc,
                io_mode="buffered",
                direct_io="buffered",
                direct_io_reason="",
                marker_in_backing=not enc,
                encryption_verified=True if enc else None,
                details={},
            ),
        )
    seq = 0
    for (w, t), values in series.items():
        for i, v in enumerate(values):
            row = {
                "seq": seq,
                "block": i,
                "repeat": i,
                "workload": w,
                "target": t,
                "started_at": "x",
                "status": "ok",
                "cache_resident_bytes": resident,
            }
            store.insert_trial(
                run_id,
                TrialRecord(**row),
                [MetricValue("throughput", "bytes/s", v), MetricValue("lat_p99", "s", 1e-3)],
            )
            seq += 1
    for i in range(failed):
        store.insert_trial(
            run_id,
            TrialRecord(
                seq=seq + i,
                block=0,
                repeat=0,
                workload="w1",
                target="gocryptfs",
                started_at="x",
                status="failed",
                error="fio exited with status 1: boom",
            ),
            [],
        )
    store.finish_run(run_id, "complete")
    return store, run_id


STEADY = [100e6, 101e6, 99e6, 100.5e6, 99.5e6]


def test_contract_and_ratio(tmp_path: Path) -> None:
    store, run_id = _store(
        tmp_path,
        {
            ("w1", "plain"): STEADY,
            ("w1", "gocryptfs"): [v * 0.4 * (1 + 0.001 * (i % 3 - 1)) for i, v in enumerate(STEADY)],
        },
    )
    doc = document.build(store, run_id).to_json()
    assert doc["schema_version"] == 5 and doc["run_id"] == run_id
    for key in ("environment", "targets", "results", "comparisons", "warnings"):
        assert key in doc
    assert all(set(t) >= CONTRACT_TARGET_KEYS for t in doc["targets"])
    assert all(set(r) >= CONTRACT_RESULT_KEYS for r in doc["results"])
    (c,) = doc["comparisons"]
    assert set(c) >= CONTRACT_COMPARISON_KEYS
    assert (c["target"], c["baseline"]) == ("gocryptfs", "plain")
    assert c["ratio"] == pytest.approx(0.4, abs=0.001)
    assert c["ci_low"] < c["ratio"] < c["ci_high"]
    assert c["change_percent"] == pytest.approx(-60, abs=0.1)  # negative when slower, as every figure
    # Each round's gocryptfs trial is 0.4 of that round's plain one to a thousandth: paired by
    # round, the rounds' spread cancels and the interval is that narrow (unpaired: [59, 61]).
    assert c["method"] == "paired" and (c["ci_low"], c["ci_high"]) == pytest.approx((0.4, 0.4), abs=0.002)
    assert doc["conclusions"] == [
        "gocryptfs is slower than plain on every workload: -60% in throughput (most at w1: -60% [-60, -60]*)."
    ]
    assert doc["warnings"] == []
    assert document.build(store, run_id).to_json() == doc  # show reproduces run exactly


def test_unstable_results_are_flagged_not_hidden(tmp_path: Path) -> None:
    store, run_id = _store(
        tmp_path,
        {
            ("w1", "plain"): [100e6, 101e6, 99e6, 100e6, 300e6],  # an outlier
            ("w1", "gocryptfs"): [40e6, 80e6, 20e6, 60e6, 30e6],  # high variation
            ("w2", "plain"): [50e6, 100e6, 101e6, 99e6, 100e6],  # slow first trial
        },
        failed=2,
        resident=1 << 20,
    )
    doc = document.build(store, run_id).to_json()
    kinds = {(w["kind"], w["target"], w["workload"]) for w in doc["warnings"]}
    assert ("outlier", "plain", "w1") in kinds
    assert ("high-variation", "gocryptfs", "w1") in kinds
    assert ("slow-first-trial", "plain", "w2") in kinds
    assert ("failed-trials", "gocryptfs", "w1") in kinds
    assert ("cache-not-dropped", "plain", "w1") in kinds
    # the outlier is kept in the samples, not dropped
    r = next(
        r
        for r in doc["results"]
        if (r["workload"], r["target"], r["metric"]) == ("w1", "plain", "throughput")
    )
    assert 300e6 in r["samples"] and r["n"] == 5
    assert doc["trials"] == {"ok": 15, "failed": 2}


def test_generic_kernel_aes_is_only_mentioned_where_it_matters(tmp_path: Path) -> None:
    env = {
        "cache_drop": "fadvise",
        "cpu_flags": ["aes"],
        "kernel_crypto": {"xts(aes)": "xts(ecb(aes-fixed-time))", "generic_software_aes": True},
    }
    store, run_id = _store(tmp_path, {("w1", "plain"): STEADY}, env=env)
    kinds = {w["kind"] for w in document.build(store, run_id).to_json()["warnings"]}
    assert "cache-drop-limited" in kinds
    assert "generic-kernel-aes" not in kinds  # no kernel-crypto target in this run


def test_a_time_is_compared_as_speed(tmp_path: Path) -> None:
    """An app workload compared on seconds: twice the time is half the speed."""
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run(
        "apps",
        {
            "seed": 3,
            "size": 1 << 20,
            "repeats": 5,
            "data": "random",
            "workloads": ["tree"],
            "primary_metrics": {"tree": "seconds"},
        },
        {"cache_drop": "drop_caches", "kernel_crypto": {}},
        "0.1.0",
    )
    for name, baseline in (("plain", None), ("gocryptfs", "plain")):
        store.insert_target(
            run_id,
            TargetInfo(
                name=name,
                backend=name,
                baseline=baseline,
                encrypted=baseline is not None,
                io_mode="buffered",
                direct_io="buffered",
                direct_io_reason="",
                marker_in_backing=None,
                encryption_verified=True if baseline else None,
                details={},
            ),
        )
    seq = 0
    for target, factor in (("plain", 1.0), ("gocryptfs", 2.0)):
        for i, v in enumerate([1.0, 1.01, 0.99, 1.005, 0.995]):
            row = {
                "seq": seq,
                "block": i,
                "repeat": i,
                "workload": "tree",
                "target": target,
                "started_at": "x",
                "status": "ok",
            }
            # the first trial is the slowest: a time above the others' is a slow start
            seconds = v * factor * (1.5 if i == 0 and target == "plain" else 1.0)
            store.insert_trial(
                run_id,
                TrialRecord(**row),
                [MetricValue("seconds", "s", seconds), MetricValue("extract.seconds", "s", seconds / 2)],
            )
            seq += 1
    store.finish_run(run_id, "complete")
    doc = document.build(store, run_id).to_json()
    (c,) = doc["comparisons"]
    assert c["metric"] == "seconds"
    # Half the speed, but for round 0, where plain alone started slow (its ratio 0.75):
    # paired by round, that round weighs in the geometric mean and widens the interval.
    assert c["method"] == "paired"
    assert c["ratio"] == pytest.approx((0.75 * 0.5**4) ** (1 / 5), rel=1e-3)
    assert c["ci_low"] <= 0.5 <= c["ci_high"]
    assert c["change_percent"] == pytest.approx(100 * (c["ratio"] - 1))
    assert doc["conclusions"][0].startswith("gocryptfs is slower than plain on every workload: -46% in speed")
    assert {r["metric"] for r in doc["results"]} == {"seconds", "extract.seconds"}
    slow = [w for w in doc["warnings"] if w["kind"] == "slow-first-trial"]
    assert [(w["target"], w["workload"]) for w in slow] == [("plain", "tree")]


def test_instability_is_warned_never_averaged_into_a_confident_number(tmp_path: Path) -> None:
    falling = [100e6 - 4e6 * i for i in range(10)]
    split = [50e6, 51e6, 49e6, 50.5e6, 49.5e6, 90e6, 91e6, 89e6, 90.5e6, 89.5e6]
    store, run_id = _store(tmp_path, {("w1", "plain"): falling, ("w1", "gocryptfs"): split})
    rule = {"precision": 0.05, "min_repeats": 3, "max_repeats": 10, "max_bytes": None, "max_time": None}
    answer = {"workload": "w1", "target": "gocryptfs", "baseline": "plain", "metric": "throughput"}
    store.set_stopping(
        run_id,
        {
            "rule": rule,
            "answers": [
                {**answer, "stopped_by": "max-repeats", "rounds": 10, "samples": 10, "halfwidth": 0.3}
            ],
            "stopped_by": None,
            "bytes_written": 0,
            "bytes_source": "device",
            "seconds": 1.0,
        },
    )
    doc = document.build(store, run_id).to_json()
    kinds = {(w["kind"], w["target"]): w["message"] for w in doc["warnings"]}
    assert "drifts down by 4" in kinds[("drift", "plain")]
    assert "two groups, 5 around 50.0 MB/s and 5 around 90.0 MB/s" in kinds[("bimodal", "gocryptfs")]
    imprecise = kinds[("imprecise", "gocryptfs")]
    assert "not the asked ±5%" in imprecise and "stopped by max-repeats" in imprecise
    (c,) = [c for c in doc["comparisons"] if c["workload"] == "w1"]
    assert c["stopped_by"] == "max-repeats" and c["precision"] > 0.05
    assert ("drift", "gocryptfs") not in kinds and ("bimodal", "plain") not in kinds


def test_a_comparison_within_the_equivalence_margin_has_no_measurable_cost() -> None:
    recorded = Document.from_json(json.loads((DOCS / "default-run.json").read_text()))
    assert recorded.stopping is not None

    def c(workload: str, ratio: float, lo: float, hi: float) -> Comparison:
        return Comparison(
            workload,
            "gocryptfs",
            "plain",
            "baseline",
            "throughput",
            ratio,
            lo,
            hi,
            (1 - ratio) * 100,
            None,
            None,
        )

    def said(comparisons: list[Comparison], margin: float | None) -> list[str]:
        stopping = dataclasses.replace(
            recorded.stopping, rule={**recorded.stopping.rule, "equivalence": margin}
        )
        return document.conclusions(dataclasses.replace(recorded, comparisons=comparisons, stopping=stopping))

    # 0.985 [0.975, 0.995]: measurably slower, but within ±3 % of no change
    mixed = [c("w1", 0.985, 0.975, 0.995), c("w2", 0.6, 0.55, 0.65), c("w3", 1.0, 0.9, 1.1)]
    assert said(mixed, 0.03) == [
        "gocryptfs against plain, of 3 workloads: no measurable cost at 1 (within ±3%); "
        "slower at 1 (most at w2: -40% [-45, -35]*); no clear difference at 1."
    ]
    assert said(mixed, None)[0].startswith("gocryptfs against plain, of 3 workloads: slower at 2")
    same = [c("w1", 0.99, 0.98, 1.0), c("w2", 1.01, 0.985, 1.02)]
    assert said(same, 0.03) == [
        "gocryptfs has no measurable cost against plain on any workload (each within ±3%)."
    ]


def test_a_misspelt_metric_is_answered_with_the_closest_one() -> None:
    path = TESTS / "fixtures" / "documents" / "default-run.json"
    doc = Document.from_json(json.loads(path.read_text()))
    document.require_metric(doc, "lat_p99")  # one the run has: no error
    with pytest.raises(UsageError, match=r"has no metric 'lat_p9' \(did you mean lat_p99\?\)$"):
        document.require_metric(doc, "lat_p9")
    with pytest.raises(UsageError, match=r"has no metric 'nothing' \(it has: .*throughput"):
        document.require_metric(doc, "nothing")


def test_the_stopping_rule_judges_the_very_interval_the_document_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stopping.interval decides when a question is answered; the document prints the same
    figure. Both are bootstrapped (unpaired here: gocryptfs ran a round plain did not), so
    both must resample the same sides, in the same direction, with the same seed."""
    drawn = spy_on_bootstrap(monkeypatch)
    plain = [100e6, 130e6, 80e6, 110e6, 95e6]
    enc = [52e6, 61e6, 38e6, 57e6, 44e6, 49e6]
    store, run_id = _store(tmp_path, {("w1", "plain"): plain, ("w1", "gocryptfs"): enc})
    doc = document.build(store, run_id)
    printed = set(drawn)
    samples = {("w1", "plain"): plain, ("w1", "gocryptfs"): enc}
    rounds = {key: list(range(len(v))) for key, v in samples.items()}
    (c,) = doc.comparisons
    assert c.method != "paired"
    drawn.clear()
    q = Question("w1", "gocryptfs", "plain", "throughput", True)
    r, n = interval(q, samples, 3, rounds)  # 3: the run's seed, as _store plans it
    assert n == 6 and r is not None
    assert (r.ratio, r.ci_low, r.ci_high) == (c.ratio, c.ci_low, c.ci_high)
    # a target's own median, where it answers for itself: its result's interval
    (own,) = [x for x in doc.results if (x.target, x.metric) == ("plain", "throughput")]
    r, _ = interval(Question("w1", "plain", None, "throughput", True), samples, 3, rounds)
    assert r is not None and own.ci_low is not None and own.ci_high is not None
    assert (r.ci_low, r.ci_high) == (own.ci_low / own.median, own.ci_high / own.median)
    # with a handful of trials most seeds reach the same interval: each draw of the
    # stopping rule's must be one the document made, seed and samples alike
    assert len(drawn) == 2 and set(drawn) <= printed
