"""When to stop repeating: as soon as each question is answered precisely
enough, or a budget says stop.

A question is what the run exists to answer: for each workload, a target
against its baseline on the workload's primary metric (the 95 % interval of
their speed ratio), or, for a target that has no baseline and is nobody's
baseline, its own median (relative to itself). After `min_repeats` rounds, a
question whose interval reaches no further than ±precision from its estimate
is closed — in the report's terms, "-62% [-66, -58]" is within ±5 % —, and so is one
whose whole interval lies within ±equivalence of no change (0.97 to 1.03 by default:
no measurable cost, whatever its width); the others get
another interleaved trial of the target and of its baseline, until they are
precise, reach `max_repeats`, or the run's byte or time budget is spent.
With no precision (`--repeats N`, or a study's fixed protocol) every question
runs exactly N rounds, budgets still applying.

Stopping when an interval first looks narrow enough makes it a little less
reliable than a fixed-size one (each look is a chance to stop on a lucky
streak); `benchmarks/calibration.py` measures how often the intervals of two
identical targets contain 1.00 under this rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from cryptbench.model.json_types import JsonObject
from cryptbench.stats import estimates


class StopReason(StrEnum):
    PRECISION = "precision"  # the interval reached ±precision
    EQUIVALENT = "equivalent"  # the whole interval lies within ±equivalence of no change
    FIXED = "fixed-repeats"  # the protocol fixes the number of trials
    MAX_REPEATS = "max-repeats"  # --max-repeats rounds without reaching the precision
    MAX_BYTES = "max-bytes"  # the byte budget was spent
    MAX_TIME = "max-time"  # the time budget was spent
    TARGET_LOST = "target-lost"  # the target or its baseline can no longer be measured
    DROPPED = "dropped"  # its workload was dropped so that the minimum rounds fit the time budget


BUDGETS = (StopReason.MAX_BYTES, StopReason.MAX_TIME)
ANSWERED = (StopReason.PRECISION, StopReason.EQUIVALENT)  # closed by its interval, reopened if it widens


@dataclass(frozen=True)
class StoppingRule:
    """The rule a run repeats by."""

    precision: float | None  # ratio units (0.05: ±5 points of change); None: a fixed number of rounds
    min_repeats: int  # rounds before precision is first judged
    max_repeats: int  # rounds at most; with precision None, exactly
    max_bytes: int | None  # bytes written during the trials (device counter, else fio's count)
    max_time: float | None  # seconds of trials
    # ratio units (0.03: within 0.97 to 1.03 is "no measurable cost"); None in rules
    # stored before there was one
    equivalence: float | None = None
    # when the first round shows min_repeats rounds cannot fit max_time: "drop"
    # workloads (fit_minimum_rounds' rule) or "extend" max_time to fit them
    overrun: str = "drop"

    def to_json(self) -> JsonObject:
        return {
            "precision": self.precision,
            "min_repeats": self.min_repeats,
            "max_repeats": self.max_repeats,
            "max_bytes": self.max_bytes,
            "max_time": self.max_time,
            "equivalence": self.equivalence,
            "overrun": self.overrun,
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> StoppingRule:
        return cls(
            d["precision"],
            d["min_repeats"],
            d["max_repeats"],
            d["max_bytes"],
            d["max_time"],
            d.get("equivalence"),
            d.get("overrun", "drop"),
        )


OVERRUNS = ("drop", "extend")
EXTEND_MARGIN = 1.10  # an extended budget allows the minimum rounds a tenth more than the first round's pace


@dataclass(frozen=True)
class Fit:
    """What the first round showed of the time budget, and what was done about it."""

    needed: float  # seconds the remaining minimum rounds take at the first round's pace, all workloads
    left: float  # seconds of the time budget left after the first round
    dropped: tuple[str, ...] = ()  # workloads dropped to fit, slowest of the largest kind first
    kept_needed: float | None = None  # seconds the remaining minimum rounds take without them
    extended_to: float | None = None  # seconds: the time budget extended to, when asked to

    @property
    def fits(self) -> bool:
        """Whether the minimum rounds now fit the budget."""
        if self.extended_to is not None:
            return True
        return (self.needed if self.kept_needed is None else self.kept_needed) <= self.left


Kind = tuple[str, str]  # a workload's kind of work (suite.family) and direction (suite.direction)


def fit_minimum_rounds(
    rule: StoppingRule, first_round: dict[str, float], kinds: dict[str, Kind], elapsed: float
) -> Fit | None:
    """Whether the rounds every target must run (min_repeats) fit the time budget, at
    the pace of the first round (`first_round`: each workload's seconds in it, every
    target once); None when they fit or there is no time budget.

    When they do not: with rule.overrun "extend", the budget is extended to the
    elapsed time plus the remaining rounds at that pace, and a tenth more. With
    "drop", workloads are dropped one at a time until the rest fit, each time the
    slowest of the kind of work (`kinds`) that has the most workloads left, and never
    the last of its kind and direction: a kind keeps its reads and its writes, so that
    its ranking never rests on half its evidence. If that still does not fit, that is
    all that is dropped, and the Fit says so."""
    if rule.max_time is None or rule.min_repeats < 2:
        return None
    rounds_left = rule.min_repeats - 1
    left = rule.max_time - elapsed
    needed = rounds_left * sum(first_round.values())
    if needed <= left:
        return None
    if rule.overrun == "extend":
        return Fit(needed, left, extended_to=elapsed + needed * EXTEND_MARGIN)
    kept = dict(first_round)
    dropped: list[str] = []
    while rounds_left * sum(kept.values()) > left:
        size = {f: sum(kinds[w][0] == f for w in kept) for f in {kinds[w][0] for w in kept}}
        spare = [w for w in kept if sum(kinds[v] == kinds[w] for v in kept) > 1]
        if not spare:
            break
        worst = max(spare, key=lambda w: (size[kinds[w][0]], kept[w]))
        dropped.append(worst)
        del kept[worst]
    return Fit(needed, left, tuple(dropped), rounds_left * sum(kept.values()))


@dataclass(frozen=True)
class Question:
    workload: str
    target: str
    baseline: str | None  # None: the target's own median is the answer
    metric: str
    higher_is_better: bool | None

    @property
    def targets(self) -> tuple[str, ...]:
        return (self.target,) if self.baseline is None else (self.target, self.baseline)


@dataclass
class QuestionState:
    question: Question
    stopped_by: StopReason | None = None  # None: still open
    rounds: int = 0  # rounds run while the question was open (failed trials included)
    halfwidth: float | None = None  # ratio units (0.05: 5 points of change) the interval reached
    samples: int = 0  # the target's successful trials when judged
    equivalent: bool = False  # its interval lay within ±equivalence of no change when judged

    def to_json(self) -> JsonObject:
        q = self.question
        return {
            "workload": q.workload,
            "target": q.target,
            "baseline": q.baseline,
            "metric": q.metric,
            "stopped_by": None if self.stopped_by is None else str(self.stopped_by),
            "rounds": self.rounds,
            "samples": self.samples,
            "halfwidth": self.halfwidth,
        }


Metric = tuple[str, bool | None]  # a workload's primary metric and whether higher is better


def questions(
    workloads: list[tuple[str, Metric]], baselines: dict[str, str | None], asked: set[str] | None = None
) -> list[Question]:
    """Every question of a run: `baselines` maps each target to its baseline
    (None for none; one that is not among the targets does not count).
    Only targets in `asked` (all when None) ask: a baseline cryptbench added
    is there to be compared with, not to be measured against its own."""
    used = {b for b in baselines.values() if b in baselines}
    out = []
    for w, (metric, higher) in workloads:
        for t, b in baselines.items():
            if asked is not None and t not in asked:
                continue
            if b in baselines:
                out.append(Question(w, t, b, metric, higher))
            elif t not in used:
                out.append(Question(w, t, None, metric, higher))
    return out


Samples = dict[tuple[str, str], list[float]]  # (workload, target) -> primary metric, trial order
Rounds = dict[tuple[str, str], list[int]]  # (workload, target) -> the round of each of its samples


def interval(
    q: Question, samples: Samples, run_seed: int, rounds: Rounds | None = None
) -> tuple[estimates.Ratio | None, int]:
    """(the question's ratio and 95 % interval, or None; the target's samples).

    Seeded as the result document seeds the same figure, and paired by round as
    it pairs, so the precision a question stopped at is the one the report prints."""
    a = samples.get((q.workload, q.target), [])
    if q.baseline is None:
        if len(a) < 2:
            return None, len(a)
        s = estimates.summarize(a, seed=estimates.figure_seed(run_seed, q.workload, q.target, q.metric))
        assert s.ci_low is not None and s.ci_high is not None
        # its own median as 1.00: the interval relative to it
        return estimates.Ratio(1.0, s.ci_low / s.median, s.ci_high / s.median), len(a)
    if not a or not samples.get((q.workload, q.baseline)):
        return None, len(a)
    r = _comparison(q.workload, q.target, q.baseline, samples, rounds or {}, q.higher_is_better, run_seed)
    return r, len(a)


def _comparison(
    w: str, t: str, other: str, samples: Samples, rounds: Rounds, higher: bool | None, run_seed: int
) -> estimates.Ratio:
    """t's speed over the other's at one workload, as the document's comparison of the two
    (analysis/document.py): its seed, paired by round where they pair."""
    return estimates.speed_ratio(
        samples[(w, t)],
        samples[(w, other)],
        higher,
        estimates.figure_seed(run_seed, w, t, other),
        rounds.get((w, t)),
        rounds.get((w, other)),
    )


@dataclass(frozen=True)
class RankingGroups:
    """How the run's answer to "which costs least" is built: each encrypted target is
    ranked against a plain target, over all workloads and over each kind of work."""

    plain_of: dict[str, str]  # encrypted target -> the plain target of its medium (and host)
    family_of: dict[str, str]  # workload -> its kind of work (suite.family)
    higher_is_better: dict[str, bool | None]  # workload -> its primary metric's direction


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
        return _comparison(w, t, other, samples, rounds, groups.higher_is_better[w], seed)
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
