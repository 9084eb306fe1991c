#!/usr/bin/env python3
"""What does a fleet run cost as hosts are added?

The quick suite through `cryptbench fleet run` on 1, 2 and 4 hosts, each a
network namespace on this machine with its own `cryptbench serve` (the test
hosts of tests/support/fleet_hosts.py), with a fixed trial count so every fleet runs
the same blocks. Printed: each fleet's wall time (the fleet run alone, not the
serves' provisioning), its trials, and the wall time as a ratio to one host's.

One fio --client invocation carries a block's trial to every host at once, so
on a real fleet (a machine per host) the ratio should stay near 1.0; here the
namespace hosts share this machine's cores and disk, so the ratio also shows
how their trials contend, and is an upper bound for a real fleet.

    .venv/bin/python benchmarks/fleet-scaling.py [--hosts 1,2,4] [--size 8M] [--repeats 3]
        [--backends plain,fscrypt] [--suite quick] [--target /var/tmp]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.fleet_hosts

from tests.support import fleet_hosts

from cryptbench.commands.fleet import run as fleet_run
from cryptbench.model.vocabulary import RunStatus
from cryptbench.pipeline.fleet_run import FleetRequest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", default="1,2,4", help="fleet sizes, comma-separated")
    ap.add_argument("--size", default="8M", help="bytes per target on each host")
    ap.add_argument("--repeats", type=int, default=3, help="trials per (workload, target, host)")
    ap.add_argument("--backends", default="plain,fscrypt")
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--target", default="/var/tmp", help="where each host's scratch space goes")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    try:
        sizes = [int(n) for n in args.hosts.split(",")]
    except ValueError:
        print(f"fleet-scaling: --hosts must be counts such as 1,2,4, not {args.hosts!r}", file=sys.stderr)
        return 2
    why = fleet_hosts.unavailable()
    if why is not None:
        print(f"fleet-scaling: cannot make namespace hosts here: {why}", file=sys.stderr)
        return 2

    rows: list[tuple[int, float, int, int]] = []
    with tempfile.TemporaryDirectory(dir=args.target, prefix="cryptbench-fleet-scaling-") as tmp:
        for n in sizes:
            root = Path(tmp) / f"fleet-{n}"
            with fleet_hosts.fleet(n, root, args.backends, args.size) as hosts:
                toml = fleet_hosts.hosts_toml(hosts, root / "hosts.toml")
                started = time.monotonic()
                outcome = fleet_run(
                    FleetRequest(
                        hosts=toml,
                        suite=args.suite,
                        repeats=args.repeats,
                        seed=args.seed,
                        db=root / "results.sqlite",
                    )
                )
                wall = time.monotonic() - started
                stops = {h.name: fleet_hosts.stop(h) for h in hosts}
            if outcome.status == RunStatus.INTERRUPTED:
                # Ctrl-C: the run tore down and kept its trials; its hosts are gone too
                print(f"fleet-scaling: interrupted during the {n}-host fleet", file=sys.stderr)
                return 130
            ok, failed = (
                outcome.document.trials.ok,
                outcome.document.trials.failed,
            )
            rows.append((n, wall, ok, ok + failed))
            print(
                f"{n} host(s): {wall:.1f} s, {ok} of {ok + failed} trials ok, "
                f"run status {outcome.status}, serves exited {sorted(set(stops.values()), key=str)}",
                file=sys.stderr,
            )

    base = next((wall for n, wall, _ok, _t in rows if n == 1), rows[0][1])
    header = f"{'hosts':>5}  {'wall (s)':>9}  {'trials ok':>9}  {'ratio to 1 host':>15}"
    print(f"{header}  {'per host-trial (s)':>18}")
    for n, wall, ok, total in rows:
        print(f"{n:>5}  {wall:>9.1f}  {ok:>4}/{total:<4}  {wall / base:>15.2f}  {wall / max(ok, 1):>18.3f}")
    print(
        f"suite {args.suite}, {args.backends} per host, {args.size} per target, {args.repeats} repeats; "
        "hosts are network namespaces sharing this machine's cores and disk"
    )
    return 0 if all(ok == total for _n, _w, ok, total in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
