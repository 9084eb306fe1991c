"""What the next round runs: the allocator that reads, after every round, which questions
are still open (stats/stopping's rule judges each) and which targets can still change the
ranking, and gives the next round's trials to them.

The ranking the run answers with (analysis/ranking.py: which way costs least, and which
are tied with it) is mirrored here as the trials arrive, on the very intervals the report
ranks by (`contenders`): the cheapest in each scope (overall, and each kind of work) and
every target its direct comparison with the cheapest does not yet show costlier. Their
questions take the trials first; a target shown costlier everywhere is decided, and its
questions wait behind the others.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from cryptbench.model.json_types import JsonObject
from cryptbench.planning.questions import RankingGroups
from cryptbench.stats import estimates
from cryptbench.stats.stopping import (
    ANSWERED,
    Fit,
    Question,
    QuestionState,
    Rounds,
    Samples,
    StoppingRule,
    StopReason,
    comparison,
    interval,
)


def _speed_pairs(
    w: str, target: str, plain: str, samples: Samples, rounds: Rounds, higher: bool | None
) -> list[tuple[float, float]] | None:
    a, b = samples.get((w, target), []), samples.get((w, plain), [])
    pairs = estimates.round_pairs(a, rounds.get((w, target)), b, rounds.get((w, plain)))
    if pairs is None or higher is not False:
        return pairs
    return [(y, x) for x, y in pairs]


def _sides(
    w: str, target: str, plain: str, samples: Samples, higher: bool | None
) -> tuple[list[float], list[float]]:
    a, b = samples[(w, target)], samples[(w, plain)]
    return (b, a) if higher is False else (a, b)


# a ranking's scope as the report names it ("overall", or a family), and its workloads
Scope = tuple[str, list[str]]


def _geometric_mean(
    groups: RankingGroups, scope: Scope, t: str, other: str, samples: Samples, rounds: Rounds, seed: int
) -> estimates.Ratio | None:
    """t's speed over the other's over the scope's workloads, as the report ranks
    (analysis/ranking.py), seeded as it seeds: at one workload, the comparison of the two;
    over several, paired where every workload pairs, else unpaired; None while either
    lacks a trial at one of them."""
    name, workloads = scope
    if not all(samples.get((w, t)) and samples.get((w, other)) for w in workloads):
        return None
    if len(workloads) == 1:
        (w,) = workloads
        return comparison(w, t, other, samples, rounds, groups.higher_is_better[w], seed)
    per = [_speed_pairs(w, t, other, samples, rounds, groups.higher_is_better[w]) for w in workloads]
    if all(p is not None for p in per):
        return estimates.paired_geometric_mean([p for p in per if p is not None])
    sides = [_sides(w, t, other, samples, groups.higher_is_better[w]) for w in workloads]
    return estimates.geometric_mean_ratio(sides, estimates.figure_seed(seed, "ranking", name, t, other))


def contenders(groups: RankingGroups, samples: Samples, rounds: Rounds, run_seed: int) -> set[str]:
    """The targets whose trials can still change the ranking: in the overall ranking or a
    family's, the cheapest and every target that its direct comparison with the cheapest
    does not yet show costlier (estimates.standing, as the report ranks; or that has no
    interval yet). A target shown costlier in every scope is decided: more trials cannot
    change where it stands."""
    found: set[str] = set()
    for plain in sorted(set(groups.plain_of.values())):  # in one order, run after run
        ranked = [t for t, p in groups.plain_of.items() if p == plain]
        if len(ranked) < 2:
            continue
        scopes: list[Scope] = [("overall", list(groups.family_of)), *_by_family(groups.family_of).items()]
        for scope in scopes:
            entries: dict[str, estimates.Ratio] = {}
            for t in ranked:
                r = _geometric_mean(groups, scope, t, plain, samples, rounds, run_seed)
                if r is None:
                    found.add(t)  # not measured at every workload yet: its trials may change it all
                else:
                    entries[t] = r
            if not entries:
                continue
            best = max(entries, key=lambda t: entries[t].ratio)
            tied = []
            for t in entries:
                direct = (
                    None if t == best else _geometric_mean(groups, scope, t, best, samples, rounds, run_seed)
                )
                if direct is not None and estimates.standing(direct, None) == estimates.TIED:
                    tied.append(t)
            if tied:
                found.update([best, *tied])
    return found


def _by_family(family_of: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for w, f in family_of.items():
        out.setdefault(f, []).append(w)
    return out if len(out) > 1 else {}


class Controller:
    """Which targets each workload still needs, round after round."""

    def __init__(
        self, rule: StoppingRule, qs: Sequence[Question], run_seed: int, ranking: RankingGroups | None = None
    ) -> None:
        self.rule = rule
        self.answers = [QuestionState(q) for q in qs]
        self.run_seed = run_seed
        self.ranking = ranking
        self.stopped_by: StopReason | None = None  # a budget that ended the run
        self.contenders: set[str] = set()  # the targets that can still change the ranking, at the last review

    @property
    def open(self) -> list[QuestionState]:
        return [a for a in self.answers if a.stopped_by is None]

    @property
    def done(self) -> bool:
        return not self.open

    def review(
        self, rounds: int, samples: Samples, lost: set[str], sample_rounds: Rounds | None = None
    ) -> None:
        """After `rounds` rounds: close what is answered, lost or out of rounds, and note
        which targets can still change the ranking."""
        rule = self.rule
        if self.ranking is not None:
            self.contenders = contenders(self.ranking, samples, sample_rounds or {}, self.run_seed) - lost
        for a in self.answers:
            if a.stopped_by is not None and a.stopped_by not in ANSWERED:
                continue
            r, a.samples = interval(a.question, samples, self.run_seed, sample_rounds)
            a.halfwidth = None if r is None else estimates.halfwidth(r)
            # a target's own median (no baseline) has no change to be equivalent to
            a.equivalent = (
                a.question.baseline is not None
                and r is not None
                and estimates.equivalent(r, rule.equivalence)
            )
            # A baseline run on for another question changes a closed answer's
            # interval: judged again, and reopened if no longer answered.
            if a.stopped_by in ANSWERED and not (a.equivalent or self._precise(a)):
                a.stopped_by = None
        for a in self.open:
            a.rounds = rounds
            if any(t in lost for t in a.question.targets):
                a.stopped_by = StopReason.TARGET_LOST
            elif rule.precision is None:
                if rounds >= rule.max_repeats:
                    a.stopped_by = StopReason.FIXED
            elif rounds >= rule.min_repeats and a.equivalent:
                a.stopped_by = StopReason.EQUIVALENT
            elif rounds >= rule.min_repeats and self._precise(a):
                a.stopped_by = StopReason.PRECISION
            elif rounds >= rule.max_repeats:
                a.stopped_by = StopReason.MAX_REPEATS

    def refit(self, fit: Fit, rounds: int) -> None:
        """Apply what the first round showed (fit_minimum_rounds): a longer time budget, or
        the questions of the workloads dropped to fit it closed."""
        if fit.extended_to is not None:
            self.rule = replace(self.rule, max_time=fit.extended_to)
        for a in self.open:
            if a.question.workload in fit.dropped:
                a.stopped_by, a.rounds = StopReason.DROPPED, rounds

    def _precise(self, a: QuestionState) -> bool:
        p = self.rule.precision
        return p is not None and a.halfwidth is not None and a.halfwidth <= p

    def exhaust(
        self,
        reason: StopReason,
        rounds: int,
        samples: Samples,
        lost: set[str],
        sample_rounds: Rounds | None = None,
    ) -> None:
        """A budget is spent: every open question stops where it is (and a
        precise one that more baseline trials made imprecise again); one whose
        target was lost says so rather than blame the budget."""
        self.stopped_by = reason
        self.review(rounds, samples, lost, sample_rounds)
        for a in self.open:
            a.stopped_by = reason

    def remaining(self, a: QuestionState) -> float:
        """Trials the question's target is estimated to need before its interval reaches the
        precision: a half-width shrinks about as 1/sqrt(trials). Infinite without an estimate."""
        if self.rule.precision is None or a.halfwidth is None or a.samples < 1:
            return math.inf
        return max(1.0, a.samples * (a.halfwidth / self.rule.precision) ** 2 - a.samples)

    def _targets(self, a: QuestionState) -> tuple[str, ...]:
        """What a question's next trial needs: its target and baseline, and for a ranked
        target the plain it is ranked against too, so that its rounds keep pairing with
        plain's (a round without plain would leave its ranking unpaired for good)."""
        t = a.question.target
        if self.ranking is None or t not in self.ranking.plain_of:
            return a.question.targets
        return tuple(dict.fromkeys([*a.question.targets, self.ranking.plain_of[t]]))

    def needed(self, rounds: int, capacity: float | None = None) -> dict[str, set[str]] | None:
        """Per workload, the targets the open questions need in the next round; None (every
        target) for the first min_repeats rounds, so that every target is measured, asked
        about or not.

        First come the questions of targets that can still change the ranking (contenders:
        the cheapest and those tied with it), then the rest, each group nearest its answer
        first. With `capacity` (the trials the time budget has left room for), the
        questions that would not be answered within it wait, in that order, so a
        budget-bound run spends its time where the answer is still open. The others stay
        open, and get trials as soon as the chosen ones close."""
        if rounds < self.rule.min_repeats:
            return None
        chosen = sorted(
            self.open, key=lambda a: (a.question.target not in self.contenders, self.remaining(a))
        )
        if capacity is not None and self.rule.precision is not None:
            kept: list[QuestionState] = []
            cost = 0.0
            for a in chosen:
                c = min(self.remaining(a), self.rule.max_repeats - rounds) * len(self._targets(a))
                if kept and cost + c > capacity:
                    continue
                kept.append(a)
                cost += c
            chosen = kept
        out: dict[str, set[str]] = {}
        for a in chosen:
            out.setdefault(a.question.workload, set()).update(self._targets(a))
        return out

    def to_json(self) -> list[JsonObject]:
        return [a.to_json() for a in self.answers]
