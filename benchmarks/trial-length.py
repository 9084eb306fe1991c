#!/usr/bin/env python3
"""What does sizing trials to a second change in the figures?

The same `cryptbench run --backends plain` on the quick suite, two ways, run in
alternating order (A B, B A, …) so that the disk's drift falls on both:

  one pass   --trial-time 0: each trial one pass over the --size data file, as
             before trials were sized (tens of milliseconds for the sequential
             workloads on a fast disk)
  sized      --trial-time 1s (or --trial-time T): each trial at least that long

Per workload: each way's median throughput and its spread (coefficient of
variation over every trial of every run), each way's median trial length (fio's
runtime), and the ratio one pass / sized with its 95 % bootstrap interval. A
ratio away from 1.00 is what short trials did to the figure; a wider spread is
what they did to its precision.

    .venv/bin/python benchmarks/trial-length.py [--pairs 3] [--repeats 3] [--io-mode direct]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from cryptbench.stats import estimates

Trials = dict[str, list[tuple[float, float]]]  # workload -> each trial's (bytes/s, seconds)


def _run(args: argparse.Namespace, trial_time: str, seed: int, tmp: str) -> Trials:
    """Per workload, each trial's (bytes/s, seconds of fio runtime)."""
    argv = [sys.executable, "-m", "cryptbench", "run", "--backends", "plain", "--suite", args.suite]
    argv += ["--repeats", str(args.repeats), "--io-mode", args.io_mode, "--trial-time", trial_time]
    argv += ["--seed", str(seed), "--target", tmp, "--db", str(Path(tmp) / "runs.sqlite"), "--json"]
    if args.size:
        argv += ["--size", args.size]
    doc = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    by = {(r["workload"], r["metric"]): r["samples"] for r in doc["results"] if r["target"] == "plain"}
    out: Trials = {}
    for w in doc["plan"]["workload_specs"]:
        rates, moved = by.get((w, "throughput"), []), by.get((w, "io_bytes"), [])
        out[w] = [(r, b / r) for r, b in zip(rates, moved, strict=True) if r > 0]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=3, help="runs of each way (default 3)")
    ap.add_argument("--repeats", type=int, default=3, help="trials per workload in each run (default 3)")
    ap.add_argument("--trial-time", default="1s", help="the sized way's --trial-time (default 1s)")
    ap.add_argument("--io-mode", choices=["direct", "buffered"], default="direct")
    ap.add_argument("--size", default=None, help="as for run (default: run's, 64M)")
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--target", default="/var/tmp")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ways = {"one pass": "0", "sized": args.trial_time}
    got: dict[str, Trials] = {way: {} for way in ways}
    with tempfile.TemporaryDirectory(dir=args.target) as tmp:
        for i in range(args.pairs):
            order = list(ways) if i % 2 == 0 else list(reversed(ways))
            for way in order:
                for w, trials in _run(args, ways[way], args.seed + i, tmp).items():
                    got[way].setdefault(w, []).extend(trials)
    print(
        f"plain, {args.io_mode} I/O, {args.pairs} runs of each way, {args.repeats} trials a run "
        f"(sized: --trial-time {args.trial_time})"
    )
    print(
        f"{'workload':16} {'one pass MB/s':>13} {'cv':>5} {'ms':>6}  {'sized MB/s':>10} {'cv':>5} {'ms':>6}"
        "  one pass / sized  95% interval"
    )
    for w in got["sized"]:
        short, long = got["one pass"].get(w, []), got["sized"][w]
        if not short or not long:
            continue
        cells = []
        for trials in (short, long):
            rates = [r for r, _s in trials]
            cv = statistics.stdev(rates) / statistics.mean(rates) if len(rates) > 1 else float("nan")
            cells.append((statistics.median(rates), cv, statistics.median(s for _r, s in trials)))
        r = estimates.ratio([x for x, _ in short], [x for x, _ in long], seed=args.seed)
        interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if r.ci_low is not None else "[none]"
        (a, acv, ams), (b, bcv, bms) = cells
        print(
            f"{w:16} {a / 1e6:13.1f} {acv:5.2f} {ams * 1e3:6.0f}  {b / 1e6:10.1f} {bcv:5.2f} {bms * 1e3:6.0f}"
            f"  {r.ratio:16.3f}  {interval}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
