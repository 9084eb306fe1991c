"""The allocator: the stopping rule applied after every round (what closes, reopens, is
lost or out of budget), the targets that can still change the ranking, and the rounds it
drives, over a real store with a fake executor (the trials are synthetic, the logic is not)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from cryptbench.planning.questions import RankingGroups
from cryptbench.planning.suite import load_suite
from cryptbench.stats import estimates
from cryptbench.stats.stopping import (
    Fit,
    Question,
    Rounds,
    Samples,
    StoppingRule,
    StopReason,
    questions,
)
from cryptbench.store.database import Store
from cryptbench.trial.allocator import Controller, contenders
from cryptbench.trial.context import TrialSpec
from cryptbench.trial.schedule import Spend, interleave
from tests.support.fake_executor import FakeExecutor
from tests.support.questions import halfwidth, one_question

THROUGHPUT = ("throughput", True)


def test_an_interval_within_the_equivalence_margin_is_answered_as_no_cost() -> None:
    # enc is plain give or take 1 %: its interval lies within ±3 % of no change, though at
    # ±2.5 % it is not within the ±2 % asked for.
    rule = StoppingRule(0.02, 3, 8, None, None, 0.03)
    c = Controller(rule, [one_question()], 1)
    rounds = {("w", "plain"): [0, 1, 2], ("w", "enc"): [0, 1, 2]}
    samples = {("w", "plain"): [100.0, 200.0, 50.0], ("w", "enc"): [101.0, 198.5, 50.3]}
    c.review(3, samples, set(), rounds)
    (a,) = c.answers
    assert a.stopped_by is StopReason.EQUIVALENT and a.equivalent
    assert a.halfwidth is not None and 0.02 < a.halfwidth < 0.03
    # without a margin the same interval is merely imprecise
    c = Controller(StoppingRule(0.02, 3, 8, None, None), [one_question()], 1)
    c.review(3, samples, set(), rounds)
    assert c.answers[0].stopped_by is None
    # a 10 % cost measured as precisely is not equivalent to no cost
    slower = {("w", "plain"): [100.0, 200.0, 50.0], ("w", "enc"): [90.0, 180.18, 44.96]}
    c = Controller(rule, [one_question()], 1)
    c.review(3, slower, set(), rounds)
    assert c.answers[0].stopped_by is StopReason.PRECISION and not c.answers[0].equivalent


def test_an_interval_exactly_as_precise_as_asked_has_reached_it() -> None:
    rounds = {("w", "plain"): [0, 1, 2], ("w", "enc"): [0, 1, 2]}
    samples = {("w", "plain"): [100.0] * 3, ("w", "enc"): [50.0, 50.2, 49.8]}
    reached, _ = halfwidth(one_question(), samples, 1, rounds)
    assert reached is not None and 0 < reached < 0.05
    c = Controller(StoppingRule(reached, 3, 8, None, None), [one_question()], 1)
    c.review(3, samples, set(), rounds)
    (a,) = c.answers
    assert a.halfwidth == reached and a.stopped_by is StopReason.PRECISION


def test_trials_that_all_read_one_figure_have_not_reached_any_precision() -> None:
    """Their spread is below what the figures resolve (stats/estimates.no_spread): no
    interval yet, so the question stays open however loose the precision asked."""
    c = Controller(StoppingRule(0.5, 3, 8, None, None), [one_question(), one_question(None)], 1)
    rounds = {("w", "plain"): [0, 1, 2], ("w", "enc"): [0, 1, 2]}
    c.review(3, {("w", "plain"): [100.0] * 3, ("w", "enc"): [50.0] * 3}, set(), rounds)
    assert [(a.halfwidth, a.stopped_by) for a in c.answers] == [(None, None)] * 2
    assert not c.done


RULE = StoppingRule(0.05, 3, 8, None, None)


def _samples(enc: list[float]) -> dict[tuple[str, str], list[float]]:
    return {("w", "plain"): [100.0] * len(enc), ("w", "enc"): enc}


def test_a_precise_question_closes_at_min_repeats_not_before() -> None:
    c = Controller(RULE, [one_question()], 1)
    steady = [50.0, 50.5, 49.5]
    c.review(2, _samples(steady[:2]), set())
    assert not c.done  # below min_repeats even though already tight
    c.review(3, _samples(steady), set())
    (a,) = c.answers
    assert a.stopped_by is StopReason.PRECISION and a.rounds == 3 and a.halfwidth is not None
    assert a.halfwidth <= 0.05


def test_a_noisy_question_runs_to_max_repeats() -> None:
    c = Controller(RULE, [one_question()], 1)
    noisy = [30.0, 70.0, 45.0, 60.0, 35.0, 65.0, 40.0, 55.0]
    for r in range(3, 8):
        c.review(r, _samples(noisy[:r]), set())
        assert not c.done
        assert c.needed(r) == {"w": {"enc", "plain"}}
    c.review(8, _samples(noisy), set())
    assert c.answers[0].stopped_by is StopReason.MAX_REPEATS


def test_fixed_rule_runs_exactly_n_rounds_however_precise() -> None:
    c = Controller(StoppingRule(None, 4, 4, None, None), [one_question()], 1)
    c.review(3, _samples([50.0] * 3), set())
    assert not c.done
    c.review(4, _samples([50.0] * 4), set())
    assert c.answers[0].stopped_by is StopReason.FIXED


def test_a_lost_baseline_stops_its_questions() -> None:
    c = Controller(RULE, [one_question(), Question("w", "other", None, "throughput", True)], 1)
    c.review(1, _samples([50.0]), {"plain"})
    assert [a.stopped_by for a in c.answers] == [StopReason.TARGET_LOST, None]
    assert c.needed(1) is None  # the first min_repeats rounds run every target
    assert c.needed(3) == {"w": {"other"}}


def test_a_closed_answer_reopens_when_more_baseline_trials_widen_it() -> None:
    c = Controller(RULE, [one_question()], 1)
    c.review(3, _samples([50.0, 50.5, 49.5]), set())
    assert c.done
    # the baseline ran on for another question and turned out noisy
    widened = {("w", "plain"): [100.0, 60.0, 140.0, 70.0, 130.0], ("w", "enc"): [50.0, 50.5, 49.5]}
    c.review(5, widened, set())
    assert not c.done and c.answers[0].halfwidth is not None and c.answers[0].halfwidth > 0.05


def test_a_budget_stops_every_open_question_where_it_is() -> None:
    c = Controller(RULE, [one_question(), Question("v", "enc", "plain", "throughput", True)], 1)
    c.review(3, {**_samples([50.0, 50.2, 49.8])}, set())
    c.exhaust(StopReason.MAX_BYTES, 3, _samples([50.0, 50.2, 49.8]), set())
    assert c.stopped_by is StopReason.MAX_BYTES
    assert [a.stopped_by for a in c.answers] == [StopReason.PRECISION, StopReason.MAX_BYTES]


def test_a_budget_does_not_take_the_blame_for_a_lost_target() -> None:
    c = Controller(RULE, [one_question(), Question("w", "other", "plain", "throughput", True)], 1)
    c.review(1, _samples([50.0]), set())
    c.exhaust(StopReason.MAX_TIME, 1, _samples([50.0]), {"other"})
    assert [a.stopped_by for a in c.answers] == [StopReason.MAX_TIME, StopReason.TARGET_LOST]


WORKLOADS = tuple(w for w in load_suite("quick").workloads if w.name in ("seq1m-q8-read", "seq1m-q8-write"))


def _rounds(
    tmp_path: Path, rule: StoppingRule, spread: dict[str, tuple[float, float]], clock: Any = None
) -> tuple[FakeExecutor, Controller]:
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run("quick", {}, {}, "0")
    ex = FakeExecutor(store, run_id, spread)
    baselines = {"plain": None, "steady": "plain", "noisy": "plain"}
    qs = questions([(w.name, THROUGHPUT) for w in WORKLOADS], baselines)
    controller = Controller(rule, qs, 3)
    spend = Spend(ex.ctx, {w.name for w in WORKLOADS if w.is_write}, clock or (lambda: 0.0))
    interleave(ex, controller, spend, WORKLOADS, list(baselines), 3)
    return ex, controller


def test_precise_comparisons_stop_and_noisy_ones_go_on_with_their_baseline(tmp_path: Path) -> None:
    ex, c = _rounds(
        tmp_path,
        StoppingRule(0.05, 3, 8, None, None),
        {"plain": (100, 0.5), "steady": (50, 0.25), "noisy": (50, 25)},
    )
    by = {(a.question.workload, a.question.target): a for a in c.answers}
    for w in WORKLOADS:
        assert by[(w.name, "steady")].stopped_by is StopReason.PRECISION
        assert by[(w.name, "steady")].rounds == 3
        assert by[(w.name, "noisy")].stopped_by is StopReason.MAX_REPEATS
    count = {t: sum(s.target == t for s in ex.specs) for t in ("plain", "steady", "noisy")}
    assert count == {"plain": 16, "steady": 6, "noisy": 16}
    # every later round still interleaves the noisy target with its baseline, block by block
    late = [s for s in ex.specs if s.repeat >= 3]
    blocks: dict[int, set[str]] = {}
    for s in late:
        blocks.setdefault(s.block, set()).add(s.target)
    assert all(b == {"plain", "noisy"} for b in blocks.values())


def test_the_byte_budget_stops_the_run_between_blocks(tmp_path: Path) -> None:
    # one write block (three targets, 1 MiB each) per round: 3 MiB a round
    ex, c = _rounds(
        tmp_path,
        StoppingRule(0.05, 3, 8, 7 << 20, None),
        {"plain": (100, 20), "steady": (50, 10), "noisy": (50, 15)},
    )
    assert c.stopped_by is StopReason.MAX_BYTES
    assert {a.stopped_by for a in c.answers} == {StopReason.MAX_BYTES}
    written = sum(1 for s in ex.specs if s.workload.is_write)
    assert written == 9  # the third write block crossed 7 MiB; no block after it ran


def test_the_time_budget_stops_the_run(tmp_path: Path) -> None:
    ticks = iter(range(10_000))
    ex, c = _rounds(
        tmp_path,
        StoppingRule(0.05, 3, 8, None, 5.0),
        {"plain": (100, 20), "steady": (50, 10), "noisy": (50, 15)},
        clock=lambda: float(next(ticks)),
    )
    assert c.stopped_by is StopReason.MAX_TIME
    assert 0 < len(ex.specs) < 3 * 2 * 8
    # the 5 s ran out in the first round's first block, yet the first round ran whole:
    # the run learns its pace from it
    assert {(s.workload.name, s.target) for s in ex.specs if s.repeat == 0} == {
        (w.name, t) for w in WORKLOADS for t in ("plain", "steady", "noisy")
    }


def test_the_other_targets_go_on_when_one_is_lost(tmp_path: Path) -> None:
    """A fixed count: a lost target closes its questions, but the rest still run every round."""
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run("quick", {}, {}, "0")
    ex = FakeExecutor(store, run_id, {"plain": (100, 1), "enc": (50, 1)})
    ex.lost["enc"] = "its daemon died"
    qs = questions([(w.name, THROUGHPUT) for w in WORKLOADS], {"plain": None, "enc": "plain"})
    controller = Controller(StoppingRule(None, 4, 4, None, None), qs, 3)
    spend = Spend(ex.ctx, set(), lambda: 0.0)
    interleave(ex, controller, spend, WORKLOADS, ["plain", "enc"], 3)
    assert {a.stopped_by for a in controller.answers} == {StopReason.TARGET_LOST}
    assert sum(s.target == "plain" for s in ex.specs) == 4 * len(WORKLOADS)


def test_a_tight_time_budget_gives_its_trials_to_the_questions_nearest_an_answer() -> None:
    qs = [Question(w, t, "plain", "throughput", True) for w, t in (("w1", "a"), ("w2", "b"), ("w3", "c"))]
    c = Controller(StoppingRule(0.05, 3, 10, None, 60.0), qs, 0)
    for a, hw in zip(c.answers, (0.06, 0.20, 0.08), strict=True):
        a.halfwidth, a.samples = hw, 3
    # trials each target still needs, as 1/sqrt(n) predicts: 1.3, 45 and 4.7
    assert [round(c.remaining(a), 1) for a in c.answers] == [1.3, 45.0, 4.7]
    assert list(c.needed(3) or {}) == ["w1", "w3", "w2"]  # nearest first, all of them
    # room for 20 trials: w1 (2 x 1.3) and w3 (2 x 4.7) fit, w2 (2 x 7 rounds left) waits
    assert c.needed(3, capacity=20.0) == {"w1": {"a", "plain"}, "w3": {"c", "plain"}}
    # with room for none, the nearest still gets its trials
    assert c.needed(3, capacity=0.0) == {"w1": {"a", "plain"}}
    assert c.needed(2, capacity=0.0) is None  # the first rounds measure every target


class _Clocked(FakeExecutor):
    """Each trial takes its workload's seconds on a clock of its own."""

    def __init__(
        self, store: Store, run_id: int, spread: dict[str, tuple[float, float]], cost: dict[str, float]
    ):
        super().__init__(store, run_id, spread)
        self.cost, self.now = cost, 0.0

    def run(self, spec: TrialSpec) -> bool:
        self.now += self.cost[spec.workload.name]
        return super().run(spec)


def test_a_first_round_too_slow_for_the_budget_drops_workloads_and_says_so(tmp_path: Path) -> None:
    quick = {w.name: w for w in load_suite("quick").workloads}
    workloads = tuple(
        quick[n] for n in ("seq1m-q8-read", "seq1m-q8-write", "rnd4k-q32-read", "rnd4k-q1-read")
    )
    cost = {"seq1m-q8-read": 1.0, "seq1m-q8-write": 1.0, "rnd4k-q32-read": 1.0, "rnd4k-q1-read": 2.0}
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run("quick", {}, {}, "0")
    ex = _Clocked(store, run_id, {"plain": (100, 1), "enc": (50, 0.5)}, cost)
    qs = questions([(w.name, THROUGHPUT) for w in workloads], {"plain": None, "enc": "plain"})
    # round 1: (1 + 1 + 1 + 2) * 2 targets = 10 s; two more rounds need 20 s, 26 - 10 = 16 s left
    controller = Controller(StoppingRule(0.05, 3, 10, None, 26.0), qs, 3)
    interleave(ex, controller, Spend(ex.ctx, set(), lambda: ex.now), workloads, ["plain", "enc"], 3)
    dropped = {a.question.workload for a in controller.answers if a.stopped_by is StopReason.DROPPED}
    # sequential has its one read and one write: both stay. random has two reads: the
    # slower, rnd4k-q1-read (4 s a round), goes, and 2 rounds of 6 s fit in 16
    assert dropped == {"rnd4k-q1-read"}
    assert all(a.rounds == 1 for a in controller.answers if a.stopped_by is StopReason.DROPPED)
    assert not [s for s in ex.specs if s.repeat > 0 and s.workload.name in dropped]  # never run again
    kept = [a for a in controller.answers if a.stopped_by is not StopReason.DROPPED]
    assert all(a.stopped_by is StopReason.PRECISION and a.rounds == 3 for a in kept)
    (note,) = store.run_row(run_id).notes
    assert "dropped rnd4k-q1-read " in note and "each kind keeps its reads and its writes" in note


def test_a_refit_extends_the_time_budget_or_closes_the_dropped_questions() -> None:
    qs = [Question(w, "enc", "plain", "throughput", True) for w in ("w", "v")]
    longer = Controller(StoppingRule(0.05, 3, 10, None, 60.0), qs, 0)
    longer.refit(Fit(needed=90.0, left=10.0, extended_to=120.0), 1)
    assert longer.rule.max_time == 120.0 and longer.rule.min_repeats == 3
    assert all(a.stopped_by is None for a in longer.answers)
    fewer = Controller(StoppingRule(0.05, 3, 10, None, 60.0), qs, 0)
    fewer.refit(Fit(needed=90.0, left=10.0, dropped=("v",), kept_needed=8.0), 1)
    assert fewer.rule.max_time == 60.0
    assert [(a.question.workload, a.stopped_by, a.rounds) for a in fewer.answers] == [
        ("w", None, 0),
        ("v", StopReason.DROPPED, 1),
    ]


GROUPS = RankingGroups({"a": "plain", "b": "plain", "c": "plain"}, {"w": "sequential"}, {"w": True})


R3 = [0, 1, 2]


def _ranked_samples(b: list[float]) -> tuple[Samples, Rounds]:
    # a is 0.8 of plain in each round to a thousandth, c 0.5: both intervals are narrow
    samples = {
        ("w", "plain"): [100.0, 200.0, 50.0],
        ("w", "a"): [80.0, 160.16, 39.96],
        ("w", "c"): [50.0, 99.9, 25.025],
    }
    samples[("w", "b")] = b
    return samples, {key: R3 for key in samples}


def test_the_cheapest_and_those_tied_with_it_contend_the_costlier_do_not() -> None:
    # b wanders around 0.8 of plain: its interval reaches a's; c's lies far below
    assert contenders(GROUPS, *_ranked_samples([70.0, 180.0, 38.0]), 1) == {"a", "b"}
    # b measured at 0.6 in every round: a is cheapest and alone; nobody contends
    assert contenders(GROUPS, *_ranked_samples([60.0, 119.88, 30.03]), 1) == set()
    # b ran two rounds, both with plain: they pair, and b is clearly costlier
    samples, rounds = _ranked_samples([60.0, 119.88])
    rounds[("w", "b")] = [0, 1]
    assert contenders(GROUPS, samples, rounds, 1) == set()
    # b's second trial ran in a round without plain: b is ranked unpaired, as the report
    # would rank it, and its interval, wide on two trials, reaches everyone's
    rounds[("w", "b")] = [0, 5]
    assert contenders(GROUPS, samples, rounds, 1) == {"a", "b", "c"}
    # b not measured at all yet: it cannot be placed, so it contends
    del samples[("w", "b")], rounds[("w", "b")]
    assert contenders(GROUPS, samples, rounds, 1) == {"b"}


def test_a_target_contends_by_its_direct_comparison_with_the_cheapest() -> None:
    # a wanders between 0.7 and 0.9 of plain, and b is 0.95 of a in every round: their
    # intervals against plain overlap widely, but held to a directly b is 0.95 of it to a
    # thousandth: costlier. Nobody contends.
    samples = {
        ("w", "plain"): [100.0, 200.0, 50.0],
        ("w", "a"): [80.0, 180.0, 35.0],
        ("w", "b"): [76.0, 171.2, 33.2],
        ("w", "c"): [50.0, 100.0, 25.0],
    }
    rounds = {key: R3 for key in samples}
    a = estimates.paired_ratio([(80.0, 100.0), (180.0, 200.0), (35.0, 50.0)])
    b = estimates.paired_ratio([(76.0, 100.0), (171.2, 200.0), (33.2, 50.0)])
    assert a.ci_low is not None and b.ci_high is not None and b.ci_high >= a.ci_low
    assert contenders(GROUPS, samples, rounds, 1) == set()
    # b swinging about a round by round: the direct comparison cannot tell them apart
    samples[("w", "b")] = [88.0, 160.0, 38.5]
    assert contenders(GROUPS, samples, rounds, 1) == {"a", "b"}


def test_contenders_take_the_trials_first_and_ranked_targets_run_with_their_plain() -> None:
    qs = [Question("w", t, "base", "throughput", True) for t in ("a", "b", "c")]
    c = Controller(StoppingRule(0.05, 3, 10, None, None), qs, 1, GROUPS)
    c.contenders = {"b", "a"}
    for a in c.answers:
        a.halfwidth, a.samples = {"a": 0.20, "b": 0.30, "c": 0.06}[a.question.target], 3
    # c is nearest its answer (about 1.3 more trials), but a and b decide the ranking. A
    # room of 21 trials holds a's 7 more rounds of 3 targets (a, its baseline and plain);
    # then neither b's 21 nor c's 2.6 fit.
    assert c.needed(3) == {"w": {"a", "b", "c", "base", "plain"}}
    assert c.needed(3, capacity=21) == {"w": {"a", "base", "plain"}}
    # without contenders, the nearest first: c (2.6 trials, with plain 3.96), then a (7
    # rounds of 3: 21) does not fit, nor b
    c.contenders = set()
    assert c.needed(3, capacity=21) == {"w": {"c", "base", "plain"}}


def test_the_rule_and_each_answer_are_stored_under_their_names() -> None:
    """The document's `stopping` block, which `show` and the report read back."""
    rule = StoppingRule(0.05, 3, 10, 1 << 30, 300.0, 0.03, "extend")
    assert rule.to_json() == {
        "precision": 0.05,
        "min_repeats": 3,
        "max_repeats": 10,
        "max_bytes": 1 << 30,
        "max_time": 300.0,
        "equivalence": 0.03,
        "overrun": "extend",
    }
    assert StoppingRule.from_json(rule.to_json()) == rule
    a = Controller(rule, [Question("w", "t", "plain", "throughput", True)], 1).answers[0]
    assert a.to_json() == {
        "workload": "w",
        "target": "t",
        "baseline": "plain",
        "metric": "throughput",
        "stopped_by": None,
        "rounds": 0,
        "samples": 0,
        "halfwidth": None,
    }
    a.stopped_by, a.rounds, a.samples, a.halfwidth = StopReason.PRECISION, 4, 4, 0.04
    assert a.to_json() == {
        "workload": "w",
        "target": "t",
        "baseline": "plain",
        "metric": "throughput",
        "stopped_by": "precision",
        "rounds": 4,
        "samples": 4,
        "halfwidth": 0.04,
    }


LATENCY = RankingGroups({"a": "plain", "b": "plain", "c": "plain"}, {"w": "random"}, {"w": False})


def test_where_lower_is_better_the_cheapest_is_the_quickest() -> None:
    """Seconds, not bytes/s: a and b take about 1.25 times plain's time, c twice it. a and
    b contend; read as speeds, c would be the cheapest, alone."""
    times = {
        ("w", "plain"): [100.0, 200.0, 50.0],
        ("w", "a"): [125.0, 250.25, 62.45],
        ("w", "b"): [1e4 / 70, 2e4 / 90, 5e3 / 38],  # b wanders about a
        ("w", "c"): [200.0, 399.6, 100.1],
    }
    assert contenders(LATENCY, times, {key: R3 for key in times}, 1) == {"a", "b"}  # paired
    steady = {  # unpaired (no rounds): plain steady, so the intervals stay narrow
        ("w", "plain"): [100.0, 100.0, 101.0],
        ("w", "a"): [125.0, 126.0, 124.0],
        ("w", "b"): [120.0, 130.0, 128.0],
        ("w", "c"): [200.0, 201.0, 199.0],
    }
    assert contenders(LATENCY, steady, {}, 1) == {"a", "b"}
    # over two such workloads, paired: the geometric mean of speeds, not of times
    two = RankingGroups(LATENCY.plain_of, {"w": "random", "v": "random"}, {"w": False, "v": False})
    both = {**times, **{("v", t): values for (_w, t), values in times.items()}}
    assert contenders(two, both, {key: R3 for key in both}, 1) == {"a", "b"}


def test_a_tie_within_one_kind_of_work_keeps_both_contending() -> None:
    """Over both kinds a is clearly cheaper; on random work alone b is level with it, and
    the report ranks each kind too: both still contend."""
    groups = RankingGroups(
        {"a": "plain", "b": "plain", "c": "plain"}, {"s": "sequential", "r": "random"}, {"s": True, "r": True}
    )
    samples = {
        ("s", "plain"): [100.0, 200.0, 50.0],
        ("s", "a"): [90.0, 180.18, 44.96],
        ("s", "b"): [50.0, 99.9, 25.03],
        ("s", "c"): [30.0, 60.06, 14.98],  # c is costlier in each kind: decided
        ("r", "plain"): [100.0, 200.0, 50.0],
        ("r", "a"): [80.0, 160.16, 39.96],
        ("r", "b"): [70.0, 180.0, 38.0],
        ("r", "c"): [30.0, 59.94, 15.02],
    }
    rounds = {key: R3 for key in samples}
    assert contenders(groups, samples, rounds, 1) == {"a", "b"}
    one_kind = RankingGroups(groups.plain_of, {"s": "sequential", "r": "sequential"}, groups.higher_is_better)
    assert contenders(one_kind, samples, rounds, 1) == set()


def test_each_review_notes_the_contenders_paired_by_round_less_the_lost() -> None:
    qs = [Question("w", t, "plain", "throughput", True) for t in ("a", "b", "c")]
    samples, rounds = _ranked_samples([70.0, 180.0, 38.0])
    c = Controller(StoppingRule(0.05, 3, 10, None, None), qs, 1, GROUPS)
    c.review(3, samples, set(), rounds)
    assert c.contenders == {"a", "b"}  # unpaired, plain's swings would tie all three
    c.review(3, samples, {"b"}, rounds)
    assert c.contenders == {"a"}
    c.exhaust(StopReason.MAX_TIME, 3, samples, set(), rounds)  # a budget's last review pairs too
    assert c.contenders == {"a", "b"}


def _budgeted() -> Controller:
    """Four questions whose next trials cost, in trials of a target and its baseline:
    w1 2 (one more each), w2 and w3 18 (9 more each), w4 34 (105 more, but 17 rounds left)."""
    qs = [
        Question(w, t, "plain", "throughput", True)
        for w, t in zip(("w1", "w2", "w3", "w4"), "abec", strict=True)
    ]
    c = Controller(StoppingRule(0.05, 3, 20, None, None), qs, 1)
    for a, hw in zip(c.answers, (0.05, 0.1, 0.1, 0.3), strict=True):
        a.halfwidth, a.samples = hw, 3
    assert [c.remaining(a) for a in c.answers] == pytest.approx([1.0, 9.0, 9.0, 105.0])
    return c


def test_a_time_budget_holds_every_question_that_fits_in_its_room_and_no_more() -> None:
    c = _budgeted()
    # w1 and w2 fill the room exactly (2 + 18); w3 would make it 38
    assert c.needed(3, capacity=20) == {"w1": {"a", "plain"}, "w2": {"b", "plain"}}
    assert c.needed(3, capacity=37) == {"w1": {"a", "plain"}, "w2": {"b", "plain"}}
    assert c.needed(3, capacity=38) == {"w1": {"a", "plain"}, "w2": {"b", "plain"}, "w3": {"e", "plain"}}
    # a question that does not fit waits, and the next that does still gets its trials:
    # contenders first (w1, then w4 at 34, which does not fit), then w2
    c.contenders = {"a", "c"}
    assert c.needed(3, capacity=20) == {"w1": {"a", "plain"}, "w2": {"b", "plain"}}
    # w4 costs the 17 rounds left, not its 105 trials: first, it leaves room for w1
    c.contenders = {"c"}
    assert c.needed(3, capacity=36) == {"w4": {"c", "plain"}, "w1": {"a", "plain"}}


def test_remaining_trials_are_unknown_without_a_precision_an_interval_or_a_trial() -> None:
    c = _budgeted()
    a = c.answers[1]
    assert c.remaining(a) == 9.0
    a.samples = 1  # one trial of the target, the interval paired with a baseline's many
    assert c.remaining(a) == 3.0
    for reached, samples in ((None, 3), (0.1, 0)):
        a.halfwidth, a.samples = reached, samples
        assert c.remaining(a) == math.inf
    fixed = Controller(StoppingRule(None, 3, 3, None, None), [a.question], 1)
    fixed.answers[0].halfwidth, fixed.answers[0].samples = 0.1, 3
    assert fixed.remaining(fixed.answers[0]) == math.inf


def test_a_question_after_a_lost_one_is_judged_on_its_new_trials() -> None:
    c = Controller(RULE, [Question("w", "gone", "plain", "throughput", True), one_question()], 1)
    noisy = {**_samples([30.0, 70.0, 45.0]), ("w", "gone"): [50.0]}
    c.review(3, noisy, {"gone"})
    assert [a.stopped_by for a in c.answers] == [StopReason.TARGET_LOST, None]
    c.review(4, {**_samples([50.0, 50.5, 49.5, 50.0]), ("w", "gone"): [50.0]}, {"gone"})
    assert c.answers[1].stopped_by is StopReason.PRECISION


def test_unpaired_trials_contend_by_the_speeds_the_report_ranks() -> None:
    # no rounds known: every comparison is unpaired. a and b wander about 0.8 of plain and
    # cannot be told apart; c, steady at half plain's speed, is costlier, not cheapest
    samples = {
        ("w", "plain"): [100.0, 101.0, 99.0],
        ("w", "a"): [80.0, 90.0, 70.0],
        ("w", "b"): [78.0, 88.0, 72.0],
        ("w", "c"): [50.0, 51.0, 49.0],
    }
    assert contenders(GROUPS, samples, {}, 1) == {"a", "b"}


def test_each_plain_is_ranked_against_whatever_the_others_hold() -> None:
    # host1's plain ranks one target (nothing to contend for), the local plain two that
    # cannot be told apart: they contend, whichever plain comes first
    groups = RankingGroups(
        {"host1/x": "host1/plain", "a": "plain", "b": "plain"}, {"w": "sequential"}, {"w": True}
    )
    samples = {
        ("w", "host1/plain"): [100.0, 100.0, 100.0],
        ("w", "host1/x"): [50.0, 50.0, 50.0],
        ("w", "plain"): [100.0, 101.0, 99.0],
        ("w", "a"): [80.0, 90.0, 70.0],
        ("w", "b"): [78.0, 88.0, 72.0],
    }
    assert contenders(groups, samples, {}, 1) == {"a", "b"}
