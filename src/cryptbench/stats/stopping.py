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

from dataclasses import dataclass
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
        if s.ci_low is None or s.ci_high is None:  # every trial read one figure: no spread yet
            return None, len(a)
        # its own median as 1.00: the interval relative to it
        return estimates.Ratio(1.0, s.ci_low / s.median, s.ci_high / s.median), len(a)
    if not a or not samples.get((q.workload, q.baseline)):
        return None, len(a)
    r = comparison(q.workload, q.target, q.baseline, samples, rounds or {}, q.higher_is_better, run_seed)
    return r, len(a)


def comparison(
    w: str, t: str, other: str, samples: Samples, rounds: Rounds, higher: bool | None, run_seed: int
) -> estimates.Ratio:
    """t's speed over the other's at one workload, as the document's comparison of the two
    (analysis/document.py): its seed, paired by round where they pair. The allocator's
    ranking (trial/allocator.py) compares by it too."""
    return estimates.speed_ratio(
        samples[(w, t)],
        samples[(w, other)],
        higher,
        estimates.figure_seed(run_seed, w, t, other),
        rounds.get((w, t)),
        rounds.get((w, other)),
    )
