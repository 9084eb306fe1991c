#!/usr/bin/env python3
"""How long does cryptbench take to start?

`cryptbench backends` and `cryptbench --help`, each beside `python3 -c pass`
(the interpreter alone), alternating in each round, with the ratio of the
medians and its 95 % bootstrap interval; and, from `python -X importtime`,
whether either command imported SciPy or Matplotlib (neither needs them; they
were most of every command's start-up before they were imported lazily).

Then each command as it starts with the project's bytecode compiled (`make setup`
compiles it) against the same command from a copy of the package without it: where
PYTHONDONTWRITEBYTECODE is set (as on this VM) or the tree is read-only (the kernel
lab's view of it), Python writes no bytecode and compiles every module anew in every
process, as each of the test suite's `cryptbench` processes did.

    .venv/bin/python benchmarks/startup.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cryptbench.stats import estimates

COMMANDS = {
    "cryptbench backends": [sys.executable, "-m", "cryptbench", "backends"],
    "cryptbench --help": [sys.executable, "-m", "cryptbench", "--help"],
}
BARE = [sys.executable, "-c", "pass"]
HEAVY = ("scipy", "matplotlib")


PACKAGE = Path(__file__).resolve().parent.parent / "src" / "cryptbench"


def seconds(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
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
        r = estimates.ratio(mine, bare)
        interval = f"[{r.ci_low:.1f}, {r.ci_high:.1f}]" if r.ci_low is not None else "[none]"
        heavy = heavy_imports(argv)
        clean = clean and not heavy
        print(
            f"{name:22} {estimates.summarize(mine).median:9.3f} {estimates.summarize(bare).median:16.3f} "
            f"{r.ratio:7.1f}  {interval:14} {', '.join(heavy) or 'neither SciPy nor Matplotlib'}"
        )
    compiled = bytecode(args.rounds)
    return 0 if clean and compiled else 1


def bytecode(rounds: int) -> bool:
    """Each command with the package's bytecode against a copy of the package without it
    (PYTHONPATH puts the copy first; PYTHONDONTWRITEBYTECODE keeps it without), alternating
    in each round. False if the package has no bytecode to compare (run `make setup`)."""
    if not any(PACKAGE.rglob("__pycache__/*.pyc")):
        print("\nno bytecode under src/cryptbench: `make setup` compiles it")
        return False
    print(f"\n{'command':22} {'compiled s':>10} {'anew s':>9} {'anew / compiled':>16}  95% interval")
    with tempfile.TemporaryDirectory(prefix="cryptbench-startup-") as tmp:
        shutil.copytree(PACKAGE, Path(tmp) / "cryptbench", ignore=shutil.ignore_patterns("__pycache__"))
        anew_env = {**os.environ, "PYTHONPATH": tmp, "PYTHONDONTWRITEBYTECODE": "1"}
        for name, argv in COMMANDS.items():
            seconds(argv, anew_env)  # the copy's files in the page cache too
            have, anew = [], []
            for _ in range(rounds):
                have.append(seconds(argv))
                anew.append(seconds(argv, anew_env))
            r = estimates.ratio(anew, have)
            interval = f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.ci_low is not None else "[none]"
            print(
                f"{name:22} {estimates.summarize(have).median:10.3f} {estimates.summarize(anew).median:9.3f} "
                f"{r.ratio:16.2f}  {interval}"
            )
    return True


if __name__ == "__main__":
    raise SystemExit(main())
