"""The stopping rule's parts: its questions, each question's interval as the report
prints it, the minimum rounds fitted to a time budget, and the rule as stored. The rule
applied round by round is trial/allocator's (tests/unit/trial/test_allocator.py)."""

from __future__ import annotations

import pytest

from cryptbench.stats.stopping import (
    Question,
    StoppingRule,
    fit_minimum_rounds,
    interval,
    questions,
)
from tests.support.questions import halfwidth, one_question

THROUGHPUT = ("throughput", True)


def test_questions_pair_each_target_with_its_baseline() -> None:
    qs = questions(
        [("w", THROUGHPUT)],
        {"plain": None, "ext4-loop": "plain", "fscrypt": "ext4-loop", "gocryptfs": "plain"},
    )
    assert {(q.target, q.baseline) for q in qs} == {
        ("ext4-loop", "plain"),
        ("fscrypt", "ext4-loop"),
        ("gocryptfs", "plain"),
    }


def test_a_target_that_is_nobodys_baseline_and_has_none_answers_for_itself() -> None:
    qs = questions([("a", THROUGHPUT), ("b", ("seconds", False))], {"plain": None})
    assert [(q.workload, q.target, q.baseline, q.metric) for q in qs] == [
        ("a", "plain", None, "throughput"),
        ("b", "plain", None, "seconds"),
    ]
    # a baseline outside the run (skipped) does not count
    (q,) = questions([("a", THROUGHPUT)], {"ext4-loop": "plain"})
    assert q.baseline is None


def test_halfwidth_is_in_points_of_change() -> None:
    samples = {("w", "plain"): [100.0, 100.0, 100.0], ("w", "enc"): [50.0, 50.0, 50.0]}
    assert halfwidth(one_question(), samples, 1) == (None, 3)  # one figure each: no spread yet
    samples[("w", "enc")] = [40.0, 50.0, 60.0]
    hw, n = halfwidth(one_question(), samples, 1)
    assert n == 3 and hw == pytest.approx(0.10)  # the median ratio 0.50 reaches 0.40 and 0.60
    assert halfwidth(one_question(), {("w", "plain"): [1.0]}, 1) == (None, 0)


def test_halfwidth_pairs_by_round_as_the_document_does() -> None:
    # The machine's speed swings from round to round; enc is half of plain in each, to a thousandth.
    samples = {("w", "plain"): [100.0, 200.0, 50.0], ("w", "enc"): [50.0, 100.1, 24.975]}
    rounds = {("w", "plain"): [0, 1, 2], ("w", "enc"): [0, 1, 2]}
    hw, n = halfwidth(one_question(), samples, 1, rounds)
    assert n == 3 and hw is not None and hw < 0.005
    unpaired, _ = halfwidth(one_question(), samples, 1)
    assert unpaired is not None and unpaired > 0.2


def test_own_median_is_judged_relative_to_itself() -> None:
    hw, _ = halfwidth(one_question(None), {("w", "enc"): [90.0, 100.0, 110.0]}, 1)
    assert hw == pytest.approx(0.10)


def test_only_asked_targets_ask() -> None:
    baselines = {"plain": None, "ext4-loop": "plain", "fscrypt": "ext4-loop"}
    qs = questions([("w", THROUGHPUT)], baselines, asked={"fscrypt"})
    assert [(q.target, q.baseline) for q in qs] == [("fscrypt", "ext4-loop")]


KIND = {
    "s1": ("sequential", "reads"),
    "s2": ("sequential", "writes"),
    "s3": ("sequential", "writes"),
    "r1": ("random", "reads"),
    "r2": ("random", "reads"),
    "r3": ("random", "writes"),
    "r4": ("random", "writes"),
    "a": ("application", ""),
}


# seconds in round 1: 150
PACE = {"s1": 10.0, "s2": 30.0, "s3": 5.0, "r1": 5.0, "r2": 20.0, "r3": 15.0, "r4": 25.0, "a": 40.0}


def test_minimum_rounds_that_fit_need_nothing() -> None:
    assert fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, 500.0), PACE, KIND, 150.0) is None  # 300 <= 350
    assert (
        fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, None), PACE, KIND, 150.0) is None
    )  # no time budget


def test_the_slowest_of_the_largest_kind_is_dropped_first_and_reads_and_writes_kept() -> None:
    # 300 s more needed, 230 - 150 = 80 s left: 2 rounds of at most 40 s
    fit = fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, 230.0), PACE, KIND, 150.0)
    assert fit is not None and (fit.needed, fit.left) == (300.0, 80.0)
    # random has four: its slowest, r4 (25 s), goes; then sequential and random have three
    # each, and the slower of their slowest spare goes, s2 (30 s); then random's r2 (20 s).
    # s1, s3, r1, r3 and a stay: each the last reads or writes of its kind. r3 (15 s) is
    # slower than r2 was, but it is random's last writes.
    assert fit.dropped == ("r4", "s2", "r2")
    assert fit.kept_needed == 2 * (10.0 + 5.0 + 5.0 + 15.0 + 40.0) and not fit.fits  # 150 s: still over
    fit = fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, 380.0), PACE, KIND, 150.0)
    assert fit is not None and fit.dropped == ("r4", "s2") and fit.fits  # 2 * 95 = 190 <= 230
    # a kind whose reads and writes are one workload each is never dropped from
    fit = fit_minimum_rounds(
        StoppingRule(0.05, 3, 10, None, 100.0),
        {"s1": 10.0, "s2": 30.0},
        {w: KIND[w] for w in ("s1", "s2")},
        40.0,
    )
    assert fit is not None and fit.dropped == () and not fit.fits


def test_asked_to_extend_the_budget_is_extended_instead() -> None:
    rule = StoppingRule(0.05, 3, 10, None, 200.0, 0.03, "extend")
    fit = fit_minimum_rounds(rule, PACE, KIND, 150.0)
    assert fit is not None and fit.dropped == () and fit.fits
    assert fit.extended_to == pytest.approx(150.0 + 300.0 * 1.1)


def test_the_time_budgets_boundaries_hold_exactly() -> None:
    """Rounds that fill the time left exactly fit; two minimum rounds still leave one to fit;
    dropping stops once the rest fill it exactly; an extension says what it needed."""
    assert fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, 450.0), PACE, KIND, 150.0) is None  # 300 of 300
    two = fit_minimum_rounds(StoppingRule(0.05, 2, 10, None, 200.0), PACE, KIND, 150.0)
    assert two is not None and (two.needed, two.left) == (150.0, 50.0)  # one round of 150 s, 50 s left
    exact = fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, 400.0), PACE, KIND, 150.0)
    assert exact is not None and exact.dropped == ("r4",) and exact.kept_needed == 250.0 == exact.left
    extend = fit_minimum_rounds(StoppingRule(0.05, 3, 10, None, 200.0, 0.03, "extend"), PACE, KIND, 150.0)
    assert extend is not None and (extend.needed, extend.left) == (300.0, 50.0)


def test_a_rule_stored_before_equivalence_and_overrun_reads_back_with_their_defaults() -> None:
    old = {"precision": 0.05, "min_repeats": 3, "max_repeats": 10, "max_bytes": None, "max_time": None}
    assert StoppingRule.from_json(old) == StoppingRule(0.05, 3, 10, None, None, None, "drop")


def test_a_targets_own_median_is_judged_from_two_trials_relative_to_itself() -> None:
    q = Question("w", "t", None, "throughput", True)
    assert interval(q, {("w", "t"): [100.0]}, 1) == (None, 1)
    r, n = interval(q, {("w", "t"): [100.0, 200.0]}, 1)
    assert n == 2 and r is not None and (r.ratio, r.ci_low, r.ci_high) == (1.0, 100.0 / 150.0, 200.0 / 150.0)


def test_a_time_is_compared_as_a_speed() -> None:
    # enc takes twice plain's time: half its speed, -50 %, not +100 %
    (q,) = questions([("w", ("seconds", False))], {"plain": None, "enc": "plain"})
    assert (q.target, q.higher_is_better) == ("enc", False)
    r, _ = interval(q, {("w", "enc"): [2.0] * 3, ("w", "plain"): [1.0] * 3}, 1)
    assert r is not None and r.ratio == 0.5
    (own,) = questions([("w", ("seconds", False))], {"plain": None})
    assert own.higher_is_better is False
