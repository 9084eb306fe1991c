#!/usr/bin/env python3
"""Does `cryptbench cipher` report what OpenSSL itself reports?

cryptbench's userspace AES-256-XTS figure (one core, one call per data unit,
cipher/userspace.py) beside `openssl speed -evp aes-256-xts` at the same
block size, alternating in each round, and the ratio of the medians with a 95 %
bootstrap interval. Target: 1.00 ± 0.10. Both are timed by the wall clock, as
cryptbench's loop is (`openssl speed -elapsed`): by default openssl divides by
the CPU time it was charged, which on a loaded machine can be charged as 0 s
and printed as "infk".

By default cryptbench times with the engine it uses itself: the C loop against
the system's libcrypto when it was built. `--engine cryptography` checks the
fallback instead, which is expected to miss: that wheel bundles its own OpenSSL
release (the script prints both versions), and at 512 bytes each call from
Python carries the interpreter's per-call overhead (compare the time per call
the two figures imply).

    .venv/bin/python benchmarks/cipher-vs-openssl.py [--rounds 5] [--seconds 1] [--engine E]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys

from cryptbench.cipher import userspace
from cryptbench.stats import estimates


def openssl_speed(unit: int, seconds: int) -> float:
    """bytes/s from `openssl speed -elapsed -evp aes-256-xts -bytes UNIT` (it prints
    thousands of bytes/s)."""
    size = ["-bytes", str(unit), "-seconds", str(seconds)]
    out = subprocess.run(
        ["openssl", "speed", "-elapsed", "-evp", "aes-256-xts", *size],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    last = out.strip().splitlines()[-1]
    m = re.search(r"([\d.]+)k\s*$", last)
    if m is None:
        raise SystemExit(f"cannot read openssl speed's last line: {last!r}")
    return float(m.group(1)) * 1000


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=1, help="per measurement, both tools")
    p.add_argument("--engine", choices=userspace.ENGINES, default=userspace.engine())
    args = p.parse_args()
    if shutil.which("openssl") is None:
        print("openssl is not installed (apt-get install openssl)", file=sys.stderr)
        return 2
    system = subprocess.run(["openssl", "version"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"cryptbench: {userspace.library(args.engine)}")
    print(f"openssl:    {system}")
    for unit in (4096, 512):
        c = userspace.case("aes-256-xts", unit)
        ours: list[float] = []
        theirs: list[float] = []
        for i in range(args.rounds):
            # alternate who goes first, so a slow spell of the machine falls on both
            for who in ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours"):
                if who == "ours":
                    ours.append(userspace.throughput(c, args.seconds, 1, args.engine))
                else:
                    theirs.append(openssl_speed(unit, args.seconds))
        r = estimates.ratio(ours, theirs, seed=unit)
        interval = "" if r.ci_low is None else f" [{r.ci_low:.2f}, {r.ci_high:.2f}]"
        met = "met" if 0.9 <= r.ratio <= 1.1 else "NOT met"
        a, b = statistics.median(ours), statistics.median(theirs)
        print(
            f"aes-256-xts {unit:>4} B, one core: cryptbench {a / 1e9:.2f} GB/s ({unit / a * 1e9:.0f} ns "
            f"per call), openssl speed {b / 1e9:.2f} GB/s ({unit / b * 1e9:.0f} ns), ratio "
            f"{r.ratio:.2f}{interval} ({args.rounds} rounds; target 1.00 ± 0.10: {met})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
