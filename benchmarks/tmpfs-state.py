#!/usr/bin/env python3
"""Does a tmpfs's past change what fio measures on it? (docs/methodology.md, "What the
harness adds")

The whole-run fidelity check on RAM (fidelity.py --whole-run --ram) compares the run's
RAM twin, a tmpfs each run mounts anew, with fio by hand on a tmpfs of the script's own.
Two ways that side could differ from the run's, each measured here with fio alone,
interleaved in random order per round, the same fio trials on both sides (lay out the
data file after a cache drop, then drop caches and read it at 1 MiB, depth 8, then
write it the same way with end_fsync):

  fresh against reused   a tmpfs mounted just before the layout, against one tmpfs
                         mounted once and used every round (its file removed and laid
                         out again), as fio by hand's was before 5be5624
  run's layout against   on a fresh tmpfs each: the layout with the run's options (1 MiB
  fio's                  at depth 8, the file made by the job's own open) against fio's
                         defaults (depth 1, fio's own layout of the file first)

and prints, per comparison, the ratio median(first) / median(second) of fio's bw_bytes
for the read and the write, with a 95 % bootstrap interval. Root: it mounts tmpfs.

    .venv/bin/python benchmarks/tmpfs-state.py [--size 256M] [--rounds 40] [--ioengine libaio]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from cryptbench.engines.fio_workload import WorkloadSpec
from cryptbench.measure.cache import drop_caches
from cryptbench.stats import estimates
from fidelity import by_hand, lay_out, memory_backed  # beside this script: fio by hand's own

# the whole file at 1 MiB, depth 8: the sequential workloads of the fidelity check
TRIALS = {kind: WorkloadSpec(f"seq1m-q8-{kind}", kind, 1 << 20, 8) for kind in ("read", "write")}

FRESH = "fresh against reused"
LAYOUT = "run's layout against fio's"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--ioengine", default="libaio")
    ap.add_argument("--target", default="/var/tmp", help="where the tmpfs mount points go")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # (comparison, side, kind) -> bytes/s per round
    got: dict[tuple[str, str, str], list[float]] = {}
    print(f"{args.size}, {args.rounds} rounds, ioengine {args.ioengine}", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=args.target) as tmp:
        used, fresh = Path(tmp) / "used", Path(tmp) / "fresh"
        with memory_backed(used, args.size):  # the tmpfs every round reuses
            for _ in range(args.rounds):
                sides = [(FRESH, "fresh"), (FRESH, "reused"), (LAYOUT, "run's"), (LAYOUT, "fio's")]
                rng.shuffle(sides)
                for comparison, side in sides:
                    with memory_backed(fresh, args.size) if side != "reused" else nullcontext(used) as folder:
                        data = folder / "data.dat"
                        drop_caches([data])
                        lay_out(data, args.size, False, args.ioengine, runs_options=side != "fio's")
                        for kind, w in TRIALS.items():
                            got.setdefault((comparison, side, kind), []).append(
                                by_hand(w, data, args.size, False, args.ioengine, 1, None)
                            )
    print(f"{'comparison':28} {'kind':6} {'first MB/s':>11} {'second MB/s':>12} {'ratio':>6}  95% interval")
    for comparison, first, second in (
        (FRESH, "fresh", "reused"),
        (LAYOUT, "run's", "fio's"),
    ):
        for kind in TRIALS:
            a, b = got[(comparison, first, kind)], got[(comparison, second, kind)]
            q = estimates.ratio(a, b, seed=args.seed)
            interval = f"[{q.ci_low:.3f}, {q.ci_high:.3f}]" if q.ci_low is not None else "[none]"
            ma, mb = estimates.summarize(a).median, estimates.summarize(b).median
            print(f"{comparison:28} {kind:6} {ma / 1e6:11.1f} {mb / 1e6:12.1f} {q.ratio:6.3f}  {interval}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
