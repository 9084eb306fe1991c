#!/usr/bin/env python3
"""What does an answer cost? Study 004's fixed protocol against cryptbench's
adaptive default, on the same targets, in one sitting.

  fixed     `run --suite study-004`: 10 trials of each data kind (dd-zero,
            dd-random) on every target, as the study did (its drop-min-max
            summary is printed beside the medians by run itself)
  adaptive  the same suite with `--precision 5%`: 3 to 10 trials, each
            comparison stopping once its 95 % interval is within ±5 %

Then the fixed run's own trials are replayed, round by round, through the
adaptive rule (paired by round where both sides ran in it, the same rule a
live run stops by): each comparison closes at the first round from the
minimum on where it is answered, and each target's trials are counted up to
the last round any comparison it takes part in needed, and at least the
minimum rounds every target runs. Bytes are what the write trials moved
(their io_bytes), on both sides of the ratio. That is the cost of
the same answers on the same recorded trials, with no second run's noise.

Targets: fscrypt and its baselines (ext4-loop, plain), added by cryptbench
as in every run. Printed per protocol: bytes the device wrote during the
trials (its own counter), wall time of the whole run, and for fscrypt against
each baseline and data kind, the precision of the change's interval. Goal:
the adaptive default reaches ±5 % with at most a quarter of the fixed
protocol's bytes.

    .venv/bin/python benchmarks/cost-to-answer.py [--size 128M] [--backends fscrypt] [--target /var/tmp]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptbench.commands import run as run_cmd
from cryptbench.engines.metric_catalog import info
from cryptbench.model.units import format_bytes, parse_percent
from cryptbench.planning.quantities import DEFAULT_EQUIVALENCE
from cryptbench.planning.request import RunRequest
from cryptbench.planning.stopping_rule import DEFAULT_MAX_REPEATS, DEFAULT_MIN_REPEATS
from cryptbench.stats.stopping import StoppingRule, questions
from cryptbench.store.database import Store, split_rounds
from cryptbench.trial.allocator import Controller

GOAL_BYTES = 0.25  # adaptive bytes at most this share of the fixed protocol's


def _one(label: str, args: argparse.Namespace, db: Path, precision: str | None) -> dict[str, Any]:
    started = time.monotonic()
    outcome = run_cmd.run(
        RunRequest(
            backends=args.backends,
            suite="study-004",
            size=args.size,
            precision=precision,
            seed=args.seed,
            target=args.target,
            db=db,
        )
    )
    wall = time.monotonic() - started
    doc = outcome.document.to_json()
    if outcome.exit_code != 0:
        print(f"{label}: exit {outcome.exit_code}: {doc['notes']}", file=sys.stderr)
    return {"label": label, "doc": doc, "wall": wall, "bytes": doc["stopping"]["bytes_written"]}


def replay(db: Path, doc: dict[str, Any], precision: str) -> tuple[int, int, dict[str, int]]:
    """The fixed run's trials through the adaptive rule: (bytes its write trials moved,
    bytes the adaptive rule would have used of them, each question's closing round)."""
    plan = doc["plan"]
    rule = StoppingRule(
        parse_percent(precision, what="--precision", low=0.1, high=50),
        DEFAULT_MIN_REPEATS,
        DEFAULT_MAX_REPEATS,
        None,
        None,
        parse_percent(DEFAULT_EQUIVALENCE, what="--equivalence", low=0.1, high=50),
    )
    workloads = [(w, (m, info(m).higher_is_better)) for w, m in plan["primary_metrics"].items()]
    baselines = {t["name"]: t["baseline"] for t in doc["targets"]}
    asked = {t for t in baselines if t not in plan["added_baselines"]}
    qs = questions(workloads, baselines, asked)
    store = Store.open(db)
    try:
        by_round = store.samples_by_round(doc["run_id"])
    finally:
        store.close()
    metric_of = dict(plan["primary_metrics"])
    moved = {(w, t): pairs for (w, t, m), pairs in by_round.items() if m == "io_bytes"}
    primary = {(w, t): pairs for (w, t, m), pairs in by_round.items() if metric_of.get(w) == m}
    controller = Controller(rule, qs, plan["seed"])
    closed: dict[str, int] = {}
    last = max((r for pairs in primary.values() for r, _v in pairs), default=-1) + 1
    for k in range(1, last + 1):
        samples, rounds = split_rounds(
            {key: [(r, v) for r, v in pairs if r < k] for key, pairs in primary.items()}
        )
        controller.review(k, samples, set(), rounds)
        for a in controller.answers:
            label = f"{a.question.target} vs {a.question.baseline}, {a.question.workload}"
            if a.stopped_by is not None and label not in closed:
                closed[label] = k
    # every target runs the minimum rounds, asked about or not (an added baseline too)
    needed = {key: min(rule.min_repeats, last) for key in primary}
    for a in controller.answers:
        k = closed.get(f"{a.question.target} vs {a.question.baseline}, {a.question.workload}", last)
        for t in a.question.targets:
            key = (a.question.workload, t)
            needed[key] = max(needed.get(key, 0), k)
    writes = {w for w, spec in plan["workload_specs"].items() if spec["rw"] in ("write", "randwrite")}
    writes |= {w for w in plan["apps"]}  # study 004's tasks are dd writes
    total = sum(v for (w, _t), pairs in moved.items() if w in writes for _r, v in pairs)
    used = sum(
        v for key, pairs in moved.items() if key[0] in writes for r, v in pairs if r < needed.get(key, 0)
    )
    return int(total), int(used), closed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default=None, help="as for run (default: the suite's, 128M)")
    ap.add_argument("--backends", default="fscrypt")
    ap.add_argument("--precision", default="5%")
    ap.add_argument("--target", default="/var/tmp")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "cost.sqlite"
        runs = [
            _one("fixed (study 004)", args, db, None),
            _one(f"adaptive ±{args.precision}", args, db, args.precision),
        ]
        total, used, closed = replay(db, runs[0]["doc"], args.precision)
    encrypted = {t["name"] for t in runs[0]["doc"]["targets"] if t["encrypted"]}
    print(f"study-004 suite, targets {', '.join(t['name'] for t in runs[0]['doc']['targets'])}")
    for r in runs:
        doc = r["doc"]
        trials = doc["trials"]["ok"] + doc["trials"]["failed"]
        print(
            f"{r['label']:<20} {trials:4d} trials, device wrote {format_bytes(r['bytes']):>10}, "
            f"wall {r['wall']:6.1f} s"
        )
        for c in doc["comparisons"]:
            if c["target"] in encrypted:
                width = "no interval" if c["precision"] is None else f"±{c['precision'] * 100:.1f}%"
                print(
                    f"    {c['target']} vs {c['baseline']}, {c['workload']}: change in speed "
                    f"{c['change_percent']:+.1f}% {width}"
                    + (f" ({c['stopped_by']})" if c["stopped_by"] else "")
                )
    share = runs[1]["bytes"] / runs[0]["bytes"] if runs[0]["bytes"] else float("nan")
    time_share = runs[1]["wall"] / runs[0]["wall"]
    verdict = "met" if share <= GOAL_BYTES else "not met"
    print(
        f"adaptive / fixed: bytes {share:.2f}, wall time {time_share:.2f} "
        f"(goal: bytes <= {GOAL_BYTES}: {verdict})"
    )
    print("replayed on the fixed run's own trials, round by round through the adaptive rule:")
    for key, k in closed.items():
        print(f"    {key}: answered after {k} rounds")
    replayed = used / total if total else float("nan")
    print(f"replayed adaptive / fixed: bytes {replayed:.2f} ({format_bytes(used)} of {format_bytes(total)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
