#!/usr/bin/env python3
"""Do the paired and the unpaired intervals both deserve "95 %"?

A/A comparisons, whose true ratio is 1.00, through both of cryptbench's interval
methods (estimates.py): unpaired (the ratio of medians, each side bootstrapped on its
own) and paired by round (Student's t on the rounds' log-ratios). Printed per
case: how often each interval contains 1.00, with that coverage's own 95 %
(Clopper-Pearson) interval, and the median half-width, for 3, 5 and 10 rounds.

  simulated  two identical targets: a per-round factor both share (the machine
             drifting) times each trial's own noise, lognormal or heavy-tailed
  recorded   benchmarks/data/aa-plain-twin.json: plain and plain-twin (two
             identical directories) measured by `cryptbench run`, interleaved;
             each comparison draws k of its rounds at random

    .venv/bin/python benchmarks/coverage.py [--comparisons 400] [--seed 1]
    .venv/bin/python benchmarks/coverage.py --record DB RUN_ID   (writes the recorded data)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.stats import beta

from cryptbench.stats import estimates
from cryptbench.store.database import Store

RECORDED = Path(__file__).resolve().parent / "data" / "aa-plain-twin.json"
ROUNDS = (3, 5, 10)
Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]  # k rounds of (a, b)


def simulated(round_sd: float, trial_sd: float, heavy: bool) -> Draw:
    def draw(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
        noise = (lambda: rng.standard_t(3, k)) if heavy else (lambda: rng.normal(0, 1, k))
        shared = round_sd * noise()
        return np.exp(shared + trial_sd * noise()), np.exp(shared + trial_sd * noise())

    return draw


def recorded(series: dict[str, list[list[float]]]) -> Draw:
    """k rounds drawn at random (without replacement) from one workload's recorded pairs."""
    a = dict((int(r), v) for r, v in series["plain-twin"])
    b = dict((int(r), v) for r, v in series["plain"])
    common = sorted(set(a) & set(b))

    def draw(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
        rounds = rng.choice(common, size=k, replace=False)
        return np.array([a[r] for r in rounds]), np.array([b[r] for r in rounds])

    return draw


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    lo = 0.0 if hits == 0 else float(beta.ppf(0.025, hits, n - hits + 1))
    hi = 1.0 if hits == n else float(beta.ppf(0.975, hits + 1, n - hits))
    return lo, hi


def coverage(draws: list[Draw], k: int, n: int, rng: np.random.Generator) -> dict[str, tuple[int, float]]:
    """Per method: (intervals containing 1.00 of n, median half-width)."""
    hits = {estimates.UNPAIRED: 0, estimates.PAIRED: 0}
    widths: dict[str, list[float]] = {estimates.UNPAIRED: [], estimates.PAIRED: []}
    for i in range(n):
        a, b = draws[i % len(draws)](rng, k)
        rounds = list(range(k))
        for method, r in (
            (estimates.UNPAIRED, estimates.speed_ratio(list(a), list(b), True, i)),
            (estimates.PAIRED, estimates.speed_ratio(list(a), list(b), True, i, rounds, rounds)),
        ):
            assert r.method == method and r.ci_low is not None and r.ci_high is not None
            hits[method] += r.ci_low <= 1.0 <= r.ci_high
            widths[method].append(estimates.halfwidth(r) or 0.0)
    return {m: (hits[m], float(np.median(widths[m]))) for m in hits}


def record(db: Path, run_id: int) -> None:
    """Write the recorded A/A data from a stored run of plain-twin (and its baseline plain)."""
    store = Store.open(db)
    try:
        run = store.run_row(run_id)
        env, plan = run.environment, run.plan
        data: dict[str, dict[str, list[tuple[int, float]]]] = {}
        for (workload, target, metric), pairs in store.samples_by_round(run_id).items():
            if metric == "throughput":
                data.setdefault(workload, {})[target] = pairs
    finally:
        store.close()
    what = "fio throughput (bytes/s) of plain-twin and plain, [round, value] in trial order"
    facts = {k: plan.get(k) for k in ("suite", "size", "repeats", "io_mode", "target_dir")}
    doc = {"what": what, "run": facts, "kernel": env.get("kernel"), "workloads": data}
    RECORDED.write_text(json.dumps(doc, indent=1) + "\n")
    trials = sum(len(v) for w in data.values() for v in w.values())
    print(f"wrote {RECORDED}: {trials} trials of {len(data)} workloads")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--comparisons", type=int, default=400, help="A/A comparisons per case and round count")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--record", nargs=2, metavar=("DB", "RUN_ID"), help="write the recorded data and stop")
    args = ap.parse_args()
    if args.record:
        record(Path(args.record[0]), int(args.record[1]))
        return 0
    rng = np.random.default_rng(args.seed)
    recorded_data = json.loads(RECORDED.read_text())["workloads"]
    cases: list[tuple[str, list[Draw]]] = [
        ("simulated: trial noise 10 %, no round effect", [simulated(0.0, 0.10, False)]),
        ("simulated: round effect 20 %, trial noise 5 %", [simulated(0.20, 0.05, False)]),
        ("simulated: heavy tails (t3), round 10 %, trial 5 %", [simulated(0.10, 0.05, True)]),
        (
            f"recorded: plain-twin vs plain, {len(recorded_data)} workloads",
            [recorded(s) for s in recorded_data.values()],
        ),
    ]
    print(f"A/A coverage of the 95 % intervals, {args.comparisons} comparisons per line (nominal 95 %)")
    print(f"{'case':52} {'rounds':>6}  {'unpaired':>26}  {'paired by round':>26}")
    for name, draws in cases:
        for k in ROUNDS:
            got = coverage(draws, k, args.comparisons, rng)
            cells = []
            for method in (estimates.UNPAIRED, estimates.PAIRED):
                hits, width = got[method]
                lo, hi = clopper_pearson(hits, args.comparisons)
                cells.append(f"{hits / args.comparisons:5.1%} [{lo:4.0%},{hi:5.0%}] ±{width:5.1%}")
            print(f"{name:52} {k:6d}  {cells[0]:>26}  {cells[1]:>26}")
    print("each cell: coverage [its own 95 % interval] ±median half-width of the ratio's interval")
    return 0


if __name__ == "__main__":
    sys.exit(main())
