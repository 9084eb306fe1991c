#!/usr/bin/env python3
"""Does the harness distort what it measures?

For each workload of a suite, the same fio job file (rendered by cryptbench
for the plain target) is run two ways, interleaved in random order per round:

  direct   sync; drop caches; `fio --output-format=json JOB` — what a user would type
  harness  cryptbench's own trial path (cache drop and check, CPU meters, store)

and the ratio median(harness) / median(direct) of fio's bw_bytes is printed
with a 95 % bootstrap interval. Target: 1.00 ± 0.05.

That tests the trial path, given the same job and data file. `--whole-run`
tests the run instead, its data-file layout, trial order and preparation
included, interleaved in random order per round:

  run      `cryptbench run --backends plain --repeats 1` on the suite: each
           workload's throughput as the run stores it
  by hand  a data file laid out by fio once per round after a cache drop, as the run
           lays out its target's once after its own, then per workload fio with the same options on the
           command line, as a user comparing with fio would, making as many passes
           (--loops) as the run's trials of that workload made (--trial-time), and
           stopping where they stopped (--runtime); each workload runs once
           unmeasured first, as the run's calibration runs each before its trials;
           then the trials, in the order of the run's last trials, each after a
           sync and a cache drop, as the run's; the first round runs the run first,
           to learn the passes and the order

Why not a fresh layout before each workload, as this script once made: on the
development VM, fio right after its file was laid out anew measured less than the
same fio on a file laid out earlier, a state the run never measures in (it lays out
once, then calibrates), so the comparison was of two states of the machine, not of
the run and fio. The by-hand side now follows the run's order of preparation.

Why a cache drop before fio by hand lays its file out: on a tmpfs, where a file's
pages land in memory decides how fast it reads, and on the development VM a file
laid out right after a drop (as the run's is: it drops caches to prove each target
and before each trial) read faster at 1 MiB than one laid out without. Without the
drop the run measured seq1m-q8-read 1.190 [1.068, 1.257] times fio by hand (20
rounds), and 1.220 [1.086, 1.292] with fio by hand dropping caches before each
trial but not before its layout (12 rounds); with the drop before the layout too,
0.961 [0.911, 1.059] (12 rounds; each `--whole-run --ram --ioengine libaio --suite
tests/fixtures/suites/seq.toml --size 256M`).

`--ioengine libaio` with `--ram`: on the development VM's kernel, io_uring hands
every read and write on a tmpfs to a kernel worker thread, so a RAM trial at 4 KiB
measures that hand-over and what the other core is doing; with libaio fio's own
thread does each I/O (docs/methodology.md, "RAM twins").

`--whole-run --ram` puts both sides on memory-backed storage: the run's RAM twin
of plain (`--ram`, a tmpfs the run mounts in its scratch) against fio by hand on
a tmpfs of its own. The disk's noise and the host's cache are then out of the
picture, so what differs is the harness's: layout, calibration and preparation.
The run measures plain on the device too, its trials interleaved with the RAM
twin's, so fio by hand makes the same device trials in the same order, on a data
file of its own beside the run's, and only its RAM trials are compared: each RAM
trial then follows the same kind of trial on both sides. On the development VM's
kernel io_uring hands every read and write on a tmpfs to a kernel worker thread,
so what a trial there measures depends on what the other core was doing; a by-hand
side that ran its RAM trials back to back measured in a state the run never does.

Why fio by hand mounts its tmpfs afresh each round, and lays its files out with the
run's layout options (1 MiB blocks at depth 8, the file made by the job's own open):
each run mounts a tmpfs of its own and lays out with its layout job, and on the
development VM a file laid out again on a tmpfs that earlier rounds had used read
and wrote more slowly than one on a tmpfs mounted just before (benchmarks/tmpfs-state.py
measures both). The by-hand side then differs from the run in its fio invocation alone.

    .venv/bin/python benchmarks/fidelity.py [--size 64M] [--rounds 5] [--target /var/tmp]
    .venv/bin/python benchmarks/fidelity.py --whole-run [--size 256M] [--rounds 3] [--ram] [--ioengine libaio]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from cryptbench.backends import REGISTRY, TargetSpec
from cryptbench.engines.fio import parse_fio_json, probe_ioengine, run_fio
from cryptbench.engines.jobs import LAYOUT_BLOCK, LAYOUT_DEPTH, render_job, render_layout
from cryptbench.machine.session import Session
from cryptbench.measure.cache import drop_caches
from cryptbench.model.units import parse_size
from cryptbench.planning.plan import IO_ENGINES
from cryptbench.planning.suite import WorkloadSpec, load_suite
from cryptbench.stats import estimates
from cryptbench.store.database import Store
from cryptbench.trial.context import Sizing, TrialContext, TrialSpec
from cryptbench.trial.runner import job_options, run_trial

TOLERANCE = 0.05


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="64M")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--suite", default="quick")
    ap.add_argument("--target", default="/var/tmp")
    ap.add_argument("--io-mode", choices=["direct", "buffered"], default="direct")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--whole-run", action="store_true", help="a whole cryptbench run against fio by hand")
    ap.add_argument("--trial-time", default="1s", help="--whole-run: the run's --trial-time (default 1s)")
    ap.add_argument("--ram", action="store_true", help="--whole-run: both sides on a tmpfs (root)")
    ap.add_argument(
        "--ioengine",
        choices=IO_ENGINES,
        help="--whole-run: fio's engine on both sides (default: the one the run would choose here)",
    )
    args = ap.parse_args()
    if args.whole_run:
        return whole_run(args)
    size = parse_size(args.size)
    suite = load_suite(args.suite)
    rng = random.Random(args.seed)
    direct_io = args.io_mode == "direct"

    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "fidelity.sqlite")
        run_id = store.insert_run(suite.name, {"seed": args.seed}, {}, "fidelity")
        session = Session.create(Path(args.target))
        try:
            with REGISTRY["plain"].provision(session, TargetSpec("plain"), size) as target:
                engine = probe_ioengine(session.path("ioengine-probe"), session)
                ctx = TrialContext(session, store, run_id, size, engine, False)
                sizing = Sizing(size)  # not calibrated: one pass over the file as asked, both ways
                layout = session.path("layout.fio")
                layout.write_text(
                    render_layout(job_options(ctx, target, args.seed, sizing.layout_size(direct_io)))
                )
                run_fio(layout, session)
                print(
                    f"plain target on {args.target}, {args.size} per trial, {args.rounds} rounds, "
                    f"{args.io_mode} I/O, ioengine {engine}",
                    file=sys.stderr,
                )
                rows = []
                seq = 0
                for w in (w for w in suite.workloads if isinstance(w, WorkloadSpec)):
                    job = session.path(f"{w.name}.fio")
                    sized = ctx.trial_size(sizing, w, target, direct_io)
                    job.write_text(render_job(w, job_options(ctx, target, args.seed, sized)))
                    direct: list[float] = []
                    for r in range(args.rounds):
                        ways = ["direct", "harness"]
                        rng.shuffle(ways)
                        for way in ways:
                            if way == "direct":
                                drop_caches([target.path / "cryptbench.dat"])
                                out = subprocess.run(
                                    ["fio", "--output-format=json", str(job)],
                                    capture_output=True,
                                    text=True,
                                    check=True,
                                ).stdout
                                direct.append(parse_fio_json(out).throughput)
                            else:
                                spec = TrialSpec(seq, seq, r, w, target.name)
                                seq += 1
                                if not run_trial(ctx, spec, target, sized, args.seed):
                                    raise SystemExit(f"harness trial failed for {w.name}")
                    harness = [
                        v
                        for (v,) in store.db.execute(
                            "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id "
                            "WHERE t.workload = ? AND m.name = 'throughput' ORDER BY t.seq",
                            (w.name,),
                        )
                    ]
                    rows.append((w.name, direct, harness))
        finally:
            session.close()
            store.close()

    print(
        f"{'workload':18} {'direct MB/s':>12} {'harness MB/s':>13} {'ratio':>6}  95% interval     "
        "within ±5%  interval holds 1.00"
    )
    worst = 0.0
    for name, direct, harness in rows:
        q = estimates.ratio(harness, direct, seed=args.seed)
        d, h = estimates.summarize(direct).median, estimates.summarize(harness).median
        ok = abs(q.ratio - 1) <= TOLERANCE
        worst = max(worst, abs(q.ratio - 1))
        interval = f"[{q.ci_low:.3f}, {q.ci_high:.3f}]" if q.ci_low is not None else "[none]"
        holds = q.ci_low is not None and q.ci_high is not None and q.ci_low <= 1 <= q.ci_high
        print(
            f"{name:18} {d / 1e6:12.1f} {h / 1e6:13.1f} {q.ratio:6.3f}  {interval:16} "
            f"{'yes' if ok else 'NO':11} {'yes' if holds else 'NO'}"
        )
    print(f"largest deviation of a ratio from 1.00: {worst:.3f} (target ≤ {TOLERANCE:.2f})")
    return 0 if worst <= TOLERANCE else 1


@dataclass(frozen=True)
class RunTrial:
    """One fio trial of the run, as fio by hand repeats it."""

    target: str  # the run's target name: plain, or ram:plain
    workload: str
    passes: int  # passes over the data file (fio's loops)
    runtime_ms: int | None  # milliseconds after which fio stopped (runtime=); None: no cap


def run_trials(db: Path, run_id: int) -> list[RunTrial]:
    """The run's fio trials, in the order it made them, with their passes and cap."""
    store = Store.open(db)
    try:
        rows = store.db.execute(
            "SELECT target, workload, job_file FROM trials WHERE run_id=? AND status='ok' ORDER BY seq",
            (run_id,),
        ).fetchall()
    finally:
        store.close()
    found = []
    for target, workload, job in rows:
        loops = re.search(r"^loops=(\d+)$", job or "", re.M)
        runtime = re.search(r"^runtime=(\d+)ms$", job or "", re.M)
        passes = int(loops.group(1)) if loops else 1
        found.append(RunTrial(target, workload, passes, int(runtime.group(1)) if runtime else None))
    return found


def _common(data: Path, size: str, direct: bool, engine: str) -> list[str]:
    return [f"--filename={data}", f"--size={size}", f"--direct={int(direct)}", f"--ioengine={engine}"]


def lay_out(data: Path, size: str, direct: bool, engine: str, runs_options: bool = True) -> None:
    """The data file written anew by fio, with the options of the run's layout job (depth
    and the file made by the job's own open), or with fio's defaults (tmpfs-state.py)."""
    data.unlink(missing_ok=True)
    options = [f"--iodepth={LAYOUT_DEPTH}", "--create_on_open=1"] if runs_options else []
    subprocess.run(["fio", "--name=layout", *_common(data, size, direct, engine), "--rw=write",
                    f"--bs={LAYOUT_BLOCK}", *options, "--end_fsync=1"],
                   check=True, capture_output=True)  # fmt: skip


def by_hand(
    w: WorkloadSpec, data: Path, size: str, direct: bool, engine: str, passes: int, runtime_ms: int | None
) -> float:
    """bytes/s: fio on the laid-out file, options on its command line, as a user types them."""
    drop_caches([data])
    job = [f"--name={w.name}", *_common(data, size, direct, engine), f"--rw={w.rw}", f"--bs={w.bs}"]
    job += [f"--iodepth={w.iodepth}", f"--loops={passes}"]
    job += [f"--runtime={runtime_ms}ms"] if runtime_ms is not None else []
    if w.is_write:
        job.append("--end_fsync=1")
    out = subprocess.run(
        ["fio", *job, "--output-format=json"], capture_output=True, text=True, check=True
    ).stdout
    return parse_fio_json(out).throughput


@contextmanager
def memory_backed(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of its own for fio by hand, twice the data file, unmounted however this ends."""
    folder.mkdir(exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={2 * parse_size(size)}", "tmpfs", str(folder)], check=True
    )
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def whole_run(args: argparse.Namespace) -> int:
    suite = load_suite(args.suite)
    direct = args.io_mode == "direct"
    rng = random.Random(args.seed)
    specs = [w for w in suite.workloads if isinstance(w, WorkloadSpec)]
    run: dict[str, list[float]] = {w.name: [] for w in specs}
    hand: dict[str, list[float]] = {w.name: [] for w in specs}
    target = "ram:plain" if args.ram else "plain"  # the run's target compared with fio by hand
    with tempfile.TemporaryDirectory(dir=args.target) as tmp:
        hand_dir = Path(tmp) / "ram" if args.ram else Path(tmp)
        with memory_backed(hand_dir, args.size) if args.ram else nullcontext(hand_dir):
            engine = probe_ioengine(hand_dir / "probe", wanted=args.ioengine)
        print(
            f"whole run on {target} at {args.target}{' (both sides on tmpfs)' if args.ram else ''}, "
            f"{args.size}, {args.rounds} rounds, {args.io_mode} I/O, ioengine {engine}",
            file=sys.stderr,
        )
        trials: list[RunTrial] = []  # the run's last trials, in its order
        by_name = {w.name: w for w in specs}
        # one data file per target the run measures, laid out as the run lays out its
        # targets', in the same order: plain's on the disk, then the RAM twin's
        data = {target: hand_dir / "by-hand.dat"}
        if args.ram:
            data = {"plain": Path(tmp) / "by-hand-device.dat", **data}
        for r in range(args.rounds):
            ways = ["run", "by hand"]
            if r > 0:
                rng.shuffle(ways)
            for way in ways:
                if way == "by hand":
                    # a tmpfs mounted for this round only, as each run mounts its own
                    with memory_backed(hand_dir, args.size) if args.ram else nullcontext(hand_dir):
                        for f in data.values():
                            drop_caches([f])
                            lay_out(f, args.size, direct, engine)
                        # each target's trial of each workload (one a round: --repeats 1)
                        sized = {(t.target, t.workload): t for t in trials}
                        for w in specs:  # unmeasured, as the run's calibration on its baselines
                            for name, f in data.items():
                                if (t := sized.get((name, w.name))) is not None:  # a failed trial: none
                                    by_hand(w, f, args.size, direct, engine, t.passes, t.runtime_ms)
                        for t in trials:
                            w = by_name[t.workload]
                            bw = by_hand(w, data[t.target], args.size, direct, engine, t.passes, t.runtime_ms)
                            if t.target == target:
                                hand[t.workload].append(bw)
                    continue
                argv = [
                    "run",
                    "--backends",
                    "plain",
                    "--suite",
                    args.suite,
                    "--size",
                    args.size,
                    "--repeats",
                    "1",
                ]
                argv += ["--io-mode", args.io_mode, "--seed", str(args.seed + r), "--target", tmp]
                argv += ["--ram"] if args.ram else []
                argv += ["--ioengine", args.ioengine] if args.ioengine else []
                argv += ["--trial-time", args.trial_time, "--db", str(Path(tmp) / "run.sqlite"), "--json"]
                cmd = [sys.executable, "-m", "cryptbench", *argv]
                done = subprocess.run(cmd, capture_output=True, text=True, check=True)
                doc = json.loads(done.stdout)
                trials = run_trials(Path(tmp) / "run.sqlite", doc["run_id"])
                for res in doc["results"]:
                    if res["metric"] == "throughput" and res["workload"] in run and res["target"] == target:
                        run[res["workload"]].extend(res["samples"])
    print(f"{'workload':18} {'run MB/s':>9} {'by hand MB/s':>13} {'ratio':>6}  95% interval     within ±5%")
    worst = 0.0
    for name in run:
        q = estimates.ratio(run[name], hand[name], seed=args.seed)
        a, b = estimates.summarize(run[name]).median, estimates.summarize(hand[name]).median
        worst = max(worst, abs(q.ratio - 1))
        interval = f"[{q.ci_low:.3f}, {q.ci_high:.3f}]" if q.ci_low is not None else "[none]"
        ok = "yes" if abs(q.ratio - 1) <= TOLERANCE else "NO"
        print(f"{name:18} {a / 1e6:9.1f} {b / 1e6:13.1f} {q.ratio:6.3f}  {interval:16} {ok}")
    print(f"largest deviation of a ratio from 1.00: {worst:.3f} (target ≤ {TOLERANCE:.2f})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main())
