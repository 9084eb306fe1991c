#!/usr/bin/env python3
"""Do cryptbench's 95 % intervals deserve the name?

The null comparison: `plain-twin` against `plain`, two identical directories
on the same filesystem, whose true ratio is 1.00. cryptbench is run N times
(each a whole `run`, adaptive by default); every comparison's interval either
contains 1.00 or not. Printed: the coverage, with its own 95 % (Clopper-Pearson)
interval, and the median precision reached. Nominal: 95 %. Optional stopping
(stopping when an interval first looks narrow) and a machine whose speed
drifts between trials both pull it down; this script measures by how much.

    .venv/bin/python benchmarks/calibration.py [--runs 20] [--size 8M] [--suite quick]
        [--precision 5%] [--repeats N] [--target /var/tmp]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from scipy import stats as sps

from cryptbench.commands import run as run_cmd
from cryptbench.planning.request import RunRequest

NOMINAL = 0.95


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--size", default="8M")
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--precision", help="as for run (default: run's adaptive default)")
    ap.add_argument("--repeats", type=int, help="a fixed count instead of adaptive repetition")
    ap.add_argument("--max-time", default=None, help="as for run")
    ap.add_argument("--target", default="/var/tmp")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    hits = total = 0
    widths: list[float] = []
    # Optional stopping only bites where the precision stopped a comparison;
    # coverage is therefore also shown per stopping reason.
    by_reason: Counter[str] = Counter()
    hits_by_reason: Counter[str] = Counter()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            outcome = run_cmd.run(
                RunRequest(
                    backends="plain-twin",
                    suite=args.suite,
                    size=args.size,
                    repeats=args.repeats,
                    precision=args.precision,
                    max_time=args.max_time,
                    seed=args.seed + i,
                    target=args.target,
                    db=Path(tmp) / "calibration.sqlite",
                )
            )
            if outcome.exit_code != 0:
                print(f"run {i + 1}: exit {outcome.exit_code}; its comparisons are left out", file=sys.stderr)
                continue
            for c in outcome.document.comparisons:
                if c.ci_low is None or c.ci_high is None or c.precision is None:
                    continue
                hit = c.ci_low <= 1.0 <= c.ci_high
                total += 1
                hits += hit
                widths.append(c.precision)
                reason = c.stopped_by or "fixed-repeats"
                by_reason[reason] += 1
                hits_by_reason[reason] += hit
            print(
                f"run {i + 1}/{args.runs}: {hits} of {total} intervals contain 1.00 so far", file=sys.stderr
            )
    if not total:
        print("no comparison produced an interval")
        return 1
    ci = sps.binomtest(hits, total).proportion_ci(confidence_level=0.95)
    how = (
        f"--repeats {args.repeats}"
        if args.repeats
        else f"adaptive, --precision {args.precision or 'default'}"
    )
    print(f"null comparison plain-twin / plain, {args.suite} suite, {args.size}, {how}, {args.runs} runs")
    print(
        f"  intervals containing 1.00: {hits} of {total} = {hits / total:.1%} "
        f"(95% CI {ci.low:.1%} to {ci.high:.1%})"
    )
    print(f"  nominal {NOMINAL:.0%}; median precision reached ±{statistics.median(widths) * 100:.1f}%")
    for reason, n in by_reason.most_common():
        print(f"  stopped by {reason}: {hits_by_reason[reason]} of {n} contain 1.00")
    print(f"  wall time {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
