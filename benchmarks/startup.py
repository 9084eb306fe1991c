#!/usr/bin/env python3
"""How long does cryptbench take to start?

`cryptbench backends` and `cryptbench --help`, each beside `python3 -c pass`
(the interpreter alone), alternating in each round, with the ratio of the
medians and its 95 % bootstrap interval; and, from `python -X importtime`,
whether either command imported SciPy or Matplotlib (neither needs them; they
were most of every command's start-up before they were imported lazily).

    .venv/bin/python benchmarks/startup.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from cryptbench import stats

COMMANDS = {
    "cryptbench backends": [sys.executable, "-m", "cryptbench", "backends"],
    "cryptbench --help": [sys.executable, "-m", "cryptbench", "--help"],
}
BARE = [sys.executable, "-c", "pass"]
HEAVY = ("scipy", "matplotlib")


def seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def heavy_imports(argv: list[str]) -> list[str]:
    """The heavy packages a command imported, from -X importtime's report on stderr."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, check=True
    )
    found = {
        line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line
    }
    return sorted(found & set(HEAVY))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    print(f"{'command':22} {'median s':>9} {'python3 -c pass':>16} {'ratio':>7}  95% interval   imports")
    clean = True
    for name, argv in COMMANDS.items():
        seconds(argv)  # a first run warms the page cache for both
        mine, bare = [], []
        for _ in range(args.rounds):
            mine.append(seconds(argv))
            bare.append(seconds(BARE))
        r = stats.ratio(mine, bare)
        interval = f"[{r.ci_low:.1f}, {r.ci_high:.1f}]" if r.ci_low is not None else "[none]"
        heavy = heavy_imports(argv)
        clean = clean and not heavy
        print(
            f"{name:22} {stats.summarize(mine).median:9.3f} {stats.summarize(bare).median:16.3f} "
            f"{r.ratio:7.1f}  {interval:14} {', '.join(heavy) or 'neither SciPy nor Matplotlib'}"
        )
    return 0 if clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
