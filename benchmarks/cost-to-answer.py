#!/usr/bin/env python3
"""What does an answer cost? Study 004's fixed protocol against cryptbench's
adaptive default, on the same targets, in one sitting.

  fixed     `run --suite study-004`: 10 trials of each data kind (dd-zero,
            dd-random) on every target, as the study did (its drop-min-max
            summary is printed beside the medians by run itself)
  adaptive  the same suite with `--precision 5%`: 3 to 10 trials, each
            comparison stopping once its 95 % interval is within ±5 %

Targets: fscrypt and its baselines (ext4-loop, plain), added by cryptbench
as in every run. Printed per protocol: bytes the device wrote during the
trials (its own counter), wall time of the whole run, and for fscrypt against
each baseline and data kind, the precision of the overhead's interval. Goal:
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
from cryptbench.plan import RunRequest
from cryptbench.units import format_bytes

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
                    f"    {c['target']} vs {c['baseline']}, {c['workload']}: overhead "
                    f"{c['overhead_percent']:.1f}% {width}"
                    + (f" ({c['stopped_by']})" if c["stopped_by"] else "")
                )
    share = runs[1]["bytes"] / runs[0]["bytes"] if runs[0]["bytes"] else float("nan")
    time_share = runs[1]["wall"] / runs[0]["wall"]
    verdict = "met" if share <= GOAL_BYTES else "not met"
    print(
        f"adaptive / fixed: bytes {share:.2f}, wall time {time_share:.2f} "
        f"(goal: bytes <= {GOAL_BYTES}: {verdict})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
