#!/usr/bin/env python3
"""Does the new allocation answer more per minute on a noisy machine?

A recorded run (benchmarks/data/noisy-run.json: every trial's primary figure,
its round and the seconds it took, interleaved, on this project's VM) is
replayed through cryptbench's own rounds (schedule.interleave, allocator.Controller)
under its default rule: ±5 %, 3 to 10 rounds, a 4-minute budget on a clock that
advances by each replayed trial's recorded seconds. Each simulated round draws one
recorded round, and every trial in it takes that round's figure, so what the
machine did to a round (its drift, a neighbour) stays shared within it.

  old  the allocation before pairing: unpaired intervals, no equivalence margin,
       the questions nearest their precision first
  new  today's: paired by round, equal within ±3 % answered, and the targets that
       can still change the ranking (and their plain) first

Printed per policy, over N replays: comparisons answered (to the precision, or
equal within the margin) per minute of trials, and whether the ranking's cheapest
was separated (no target tied with it). Both policies share the first-round
budget check (it is in the rounds themselves).

    .venv/bin/python benchmarks/allocation.py [--replays 20] [--seed 1]
    .venv/bin/python benchmarks/allocation.py --record DB RUN_ID   (writes the recorded run)
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from cryptbench.engines.metric_catalog import info
from cryptbench.model.vocabulary import TrialStatus
from cryptbench.planning.questions import RankingGroups
from cryptbench.planning.suite import load_suite
from cryptbench.stats.stopping import Rounds, Samples, StoppingRule, StopReason, questions
from cryptbench.store.database import MetricValue, Store, TrialRecord
from cryptbench.trial.allocator import Controller, contenders
from cryptbench.trial.context import NullProgress, TrialContext, TrialSpec
from cryptbench.trial.schedule import OneAtATime, Spend, interleave, primary_samples

RECORDED = Path(__file__).resolve().parent / "data" / "noisy-run.json"
ANSWERED = (StopReason.PRECISION, StopReason.EQUIVALENT)


class OldController(Controller):
    """The allocation before pairing: intervals unpaired, no margin, no contenders."""

    def review(
        self, rounds: int, samples: Samples, lost: set[str], sample_rounds: Rounds | None = None
    ) -> None:
        super().review(rounds, samples, lost, None)


class Replay(OneAtATime):
    """An executor whose trials are the recorded run's: round by round, on a clock of its own."""

    def __init__(self, store: Store, run_id: int, rec: dict[str, Any], rng: random.Random) -> None:
        self.ctx = TrialContext(cast(Any, None), store, run_id, 1 << 20, "psync", False)
        self.trials = rec["trials"]  # workload -> target -> {round: [value, seconds]}
        self.metric = rec["metrics"]  # workload -> its primary metric
        self.rounds = sorted({int(r) for w in self.trials.values() for t in w.values() for r in t})
        self.rng, self.now = rng, 0.0
        self.drawn: dict[int, int] = {}  # a trial's repeat -> the recorded round it replays
        self.lost: dict[str, str] = {}
        self.progress = NullProgress()
        self.count = 0

    def run(self, spec: TrialSpec) -> bool:
        recorded = self.drawn.setdefault(spec.repeat, self.rng.choice(self.rounds))
        value, seconds = self.trials[spec.workload.name][spec.target][str(recorded)]
        self.now += seconds
        self.count += 1
        row = TrialRecord(
            spec.seq, spec.block, spec.repeat, spec.workload.name, spec.target, "x", TrialStatus.OK
        )
        self.ctx.store.insert_trial(
            self.ctx.run_id, row, [MetricValue(self.metric[spec.workload.name], "", value)]
        )
        return True

    def finish(self) -> tuple[int, int]:
        return self.count, 0


def replay(rec: dict[str, Any], policy: str, seed: int, tmp: Path) -> tuple[int, int, float, bool]:
    """(questions answered, questions, minutes of trials, cheapest separated) for one replay."""
    quick = {w.name: w for w in load_suite("quick").workloads}
    workloads = tuple(quick[w] for w in rec["workloads"])
    higher = {w: info(rec["metrics"][w]).higher_is_better for w in rec["workloads"]}
    targets = rec["targets"]
    asked = {t for t, d in targets.items() if d["asked"]}
    qs = questions(
        [(w, (rec["metrics"][w], higher[w])) for w in rec["workloads"]],
        {t: d["baseline"] for t, d in targets.items()},
        asked,
    )
    new = policy == "new"
    rule = StoppingRule(0.05, 3, 10, None, 240.0, 0.03 if new else None)
    plain = next(t for t in targets if t == "plain")
    groups = RankingGroups(
        {t: plain for t, d in targets.items() if d["encrypted"]}, dict(rec["families"]), higher
    )
    controller = Controller(rule, qs, seed, groups) if new else OldController(rule, qs, seed)
    store = Store.open(tmp / f"{policy}-{seed}.sqlite")
    run_id = store.insert_run("quick", {}, {}, "0")
    ex = Replay(store, run_id, rec, random.Random(seed))
    spend = Spend(ex.ctx, set(), lambda: ex.now)
    interleave(ex, controller, spend, workloads, list(targets), seed)
    answered = sum(a.stopped_by in ANSWERED for a in controller.answers)
    # the ranking's cheapest is separated when no target can still change it (both policies alike)
    samples, rounds = primary_samples(store, run_id, rec["metrics"])
    separated = not contenders(groups, samples, rounds, seed)
    store.close()
    return answered, len(controller.answers), ex.now / 60, separated


def record(db: Path, run_id: int) -> None:
    """Write the recorded run: each trial's primary figure, its round and its seconds (to the next start)."""
    store = Store.open(db)
    try:
        run = store.run_row(run_id)
        plan = run.plan
        trials = [t for t in store.trial_rows(run_id) if t.status == "ok"]
        values = store.trial_metrics(run_id)
        targets = {t.name: t for t in store.target_rows(run_id)}
    finally:
        store.close()
    starts = [datetime.fromisoformat(t.started_at).timestamp() for t in trials]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for i, t in enumerate(trials):
        metric = plan["primary_metrics"][t.workload]
        seconds = gaps[i] if i < len(gaps) else statistics.median(gaps)
        out.setdefault(t.workload, {}).setdefault(t.target, {})[str(t.repeat)] = [
            values[t.id][metric][0],
            seconds,
        ]
    added = set(plan.get("added_baselines", []))
    doc = {
        "what": "a cryptbench run's trials: [primary figure, seconds to the next trial's start] by round",
        "run": {k: plan.get(k) for k in ("suite", "size", "repeats", "io_mode")},
        "workloads": plan["workloads"],
        "metrics": plan["primary_metrics"],
        "families": {
            w: ("random" if s["rw"].startswith("rand") else "sequential")
            for w, s in plan["workload_specs"].items()
        },
        "targets": {
            n: {"baseline": t.baseline, "encrypted": t.encrypted, "asked": n not in added}
            for n, t in targets.items()
        },
        "trials": out,
    }
    RECORDED.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {RECORDED}: {len(trials)} trials")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", nargs=2, metavar=("DB", "RUN_ID"), help="write the recorded run and stop")
    args = ap.parse_args()
    if args.record:
        record(Path(args.record[0]), int(args.record[1]))
        return 0
    rec = json.loads(RECORDED.read_text())
    print(f"replaying {RECORDED.name} ({rec['run']}), {args.replays} replays per policy, 4 min budget each")
    rates: dict[str, list[float]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for policy in ("old", "new"):
            separated = 0
            for i in range(args.replays):
                answered, total, minutes, clear = replay(rec, policy, args.seed + i, Path(tmp))
                rates[policy].append(answered / minutes)
                separated += clear
            med = statistics.median(rates[policy])
            print(
                f"{policy}: {med:.2f} comparisons answered per minute (median; {min(rates[policy]):.2f} to "
                f"{max(rates[policy]):.2f}; {total} comparisons); the ranking's cheapest separated in "
                f"{separated} of {args.replays}"
            )
    ratios = [n / o for n, o in zip(rates["new"], rates["old"], strict=True) if o > 0]
    if ratios:
        print(f"new / old, replay by replay (same seeds): median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
