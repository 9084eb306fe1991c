#!/usr/bin/env python3
"""The same question, and the same verdict, on a second run?

Runs the same `cryptbench run` N times back to back into one database, then holds
each run to the next with `cryptbench compare` and reads each run's answer with
`cryptbench show --json`. Prints:

  - the share of compared cells (workload and target) that differ significantly
    between consecutive runs: honest 95 % intervals let about 5 % differ by chance;
  - the cheapest target of each run and the targets tied or equal with it, and
    whether every run names the same cheapest;
  - the workloads each run answered (ranked on, none dropped), and whether every
    run answered the same ones.

    .venv/bin/python benchmarks/between-runs.py --runs 3             # the default run, three times
    .venv/bin/python benchmarks/between-runs.py --runs 2 -- --backends plain,gocryptfs --max-time 1m

Arguments after `--` go to every `cryptbench run`. Its exit status is 1 when the runs
named different cheapest targets or answered different workloads.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-m", "cryptbench"]


def _cryptbench(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True)
    if done.returncode not in (0, 1):  # compare and check use 1 for "differs"
        sys.exit(f"cryptbench {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def _answer(db: Path, run_id: int) -> dict[str, Any]:
    doc = json.loads(_cryptbench("show", str(run_id), "--json", "--db", str(db)).stdout)
    section = doc["ranking"][0] if doc["ranking"] else {"overall": [], "workloads": []}
    overall = section["overall"]
    dropped = sorted(
        {
            a["workload"]
            for a in (doc.get("stopping") or {}).get("answers", [])
            if a["stopped_by"] == "dropped"
        }
    )
    return {
        "run": run_id,
        "cheapest": overall[0]["target"] if overall else None,
        "beside": sorted(e["target"] for e in overall[1:] if e["verdict"] in ("tied", "equal")),
        "answered": section["workloads"],
        "dropped": dropped,
    }


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3, help="runs back to back (at least 2)")
    p.add_argument("--db", type=Path, help="results database (default: a new one in a temporary directory)")
    p.add_argument("--target", help="scratch directory for the runs (passed to cryptbench run)")
    args = p.parse_args(own)
    if args.runs < 2:
        p.error("--runs must be at least 2: there is nothing to compare a single run with")
    with tempfile.TemporaryDirectory(prefix="between-runs-") as tmp:
        db = args.db or Path(tmp) / "runs.sqlite"
        where = ["--target", args.target] if args.target else []
        ids = []
        for i in range(args.runs):
            done = _cryptbench("run", "--db", str(db), *where, *extra, "--json")
            if done.returncode != 0:
                sys.exit(f"run {i + 1} of {args.runs} failed: {done.stderr.strip()[-400:]}")
            ids.append(json.loads(done.stdout)["run_id"])
            print(f"run {i + 1} of {args.runs}: run {ids[-1]}", file=sys.stderr)
        answers = [_answer(db, run_id) for run_id in ids]
        cells = differing = 0
        print("pair        cells   differ significantly")
        for a, b in itertools.pairwise(ids):
            comp = json.loads(_cryptbench("compare", str(a), str(b), "--db", str(db), "--json").stdout)
            rows = comp["rows"]
            k = sum(1 for r in rows if r["significant"])
            cells, differing = cells + len(rows), differing + k
            print(f"{a:>4} -> {b:<4} {len(rows):>6}   {k} ({k / max(1, len(rows)):.0%})")
        share = differing / max(1, cells)
        print(f"in all      {cells:>6}   {differing} ({share:.0%}); about 5% differ by chance at 95%")
        print()
        print("run   cheapest     tied or equal with it          answered (dropped)")
        for x in answers:
            gone = f" ({', '.join(x['dropped'])} dropped)" if x["dropped"] else ""
            print(
                f"{x['run']:>3}   {x['cheapest'] or '-':<12} {', '.join(x['beside']) or '-':<30} "
                f"{len(x['answered'])} workloads{gone}"
            )
        same_cheapest = len({x["cheapest"] for x in answers}) == 1
        same_workloads = len({tuple(x["answered"]) for x in answers}) == 1
        print()
        print(f"same cheapest in every run: {'yes' if same_cheapest else 'no'}")
        print(f"same workloads answered in every run: {'yes' if same_workloads else 'no'}")
        print(f"cells differing significantly: {share:.1%}")
    return 0 if same_cheapest and same_workloads else 1


if __name__ == "__main__":
    sys.exit(main())
