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
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from cryptbench.engines.fio import parse_fio_json
from cryptbench.engines.jobs import LAYOUT_BLOCK, LAYOUT_DEPTH
from cryptbench.measure.cache import drop_caches
from cryptbench.stats import estimates
from fidelity import memory_backed  # beside this script: the same tmpfs as fio by hand's

KINDS = ("read", "write")
FRESH = "fresh against reused"
LAYOUT = "run's layout against fio's"


def _fio(*args: str) -> str:
    return subprocess.run(["fio", *args], capture_output=True, text=True, check=True).stdout


def lay_out(data: Path, size: str, engine: str, runs_options: bool) -> None:
    """The data file written anew, with the run's layout options or with fio's defaults."""
    data.unlink(missing_ok=True)
    drop_caches([])
    options = [f"--iodepth={LAYOUT_DEPTH}", "--create_on_open=1"] if runs_options else []
    _fio("--name=layout", f"--filename={data}", f"--size={size}", f"--ioengine={engine}",
         "--rw=write", f"--bs={LAYOUT_BLOCK}", *options, "--end_fsync=1")  # fmt: skip


def measure(data: Path, size: str, engine: str, kind: str) -> float:
    """bytes/s: fio reading or writing the whole file at 1 MiB, depth 8, after a cache drop."""
    drop_caches([data])
    sync = ["--end_fsync=1"] if kind == "write" else []
    out = _fio("--name=t", f"--filename={data}", f"--size={size}", f"--ioengine={engine}",
               f"--rw={kind}", "--bs=1M", "--iodepth=8", *sync, "--output-format=json")  # fmt: skip
    return parse_fio_json(out).throughput


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
                        lay_out(data, args.size, args.ioengine, runs_options=side != "fio's")
                        for kind in KINDS:
                            got.setdefault((comparison, side, kind), []).append(
                                measure(data, args.size, args.ioengine, kind)
                            )
    print(f"{'comparison':28} {'kind':6} {'first MB/s':>11} {'second MB/s':>12} {'ratio':>6}  95% interval")
    for comparison, first, second in (
        (FRESH, "fresh", "reused"),
        (LAYOUT, "run's", "fio's"),
    ):
        for kind in KINDS:
            a, b = got[(comparison, first, kind)], got[(comparison, second, kind)]
            q = estimates.ratio(a, b, seed=args.seed)
            interval = f"[{q.ci_low:.3f}, {q.ci_high:.3f}]" if q.ci_low is not None else "[none]"
            ma, mb = estimates.summarize(a).median, estimates.summarize(b).median
            print(f"{comparison:28} {kind:6} {ma / 1e6:11.1f} {mb / 1e6:12.1f} {q.ratio:6.3f}  {interval}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
