"""`cryptbench selftest`: measure targets whose answer is known, and say
whether cryptbench found it.

Two ext4-on-loop targets the kernel throttles to 40 and 20 MB/s
(backends/known.py): the slower one's speed is half the faster one's, so every
comparison's 95 % interval must reach 0.50 (within what the throttle's own
slack allows), and each target's median interval its own rate. A third,
`throttle-none`, is the same stack unthrottled, measured in the same rounds:
a write job ends with its fsync, which flushes what the throttle let into the
loop device's backing file after the last throttled write, so a write's known
answer reaches down by the time the device itself takes (on a CI machine's
disk, `selftest` once wrote 38.0 MB/s [37.3, 38.2] through the 40 MB/s limit
for this reason). Where the stack is not HEADROOM times faster than a throttle,
its own pace, not the throttle's, sets the job's: that check cannot be made
here, and selftest says so and fails. The run is stored like any other.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from rich.console import Console

from cryptbench.analysis import document
from cryptbench.backends import REGISTRY
from cryptbench.backends.known import ThrottledBackend
from cryptbench.commands.common_args import add_db, add_json, add_target
from cryptbench.model.errors import UnavailableError, UsageError
from cryptbench.model.result import Document
from cryptbench.model.units import format_bytes, format_value, parse_size
from cryptbench.pipeline import execute
from cryptbench.pipeline.execute import Executed
from cryptbench.planning.request import RunRequest, request_from_args
from cryptbench.planning.suite import direction, load_suite
from cryptbench.report import screens
from cryptbench.report.json_output import print_json
from cryptbench.report.progress import RichProgress
from cryptbench.trial.context import Progress

SLOW, FAST, TWIN = "throttle-20", "throttle-40", "throttle-none"
# bytes/s the kernel lets through, as the backends set it
RATES = {name: cast(ThrottledBackend, REGISTRY[name]).rate for name in (SLOW, FAST)}
EXPECTED = RATES[SLOW] / RATES[FAST]  # 0.50
# The kernel's throttle is itself exact only to a few percent: its time
# slices let more through at the start of a job, by an amount that depends on
# the job's length and on the kernel (`cryptbench selftest` on kernel 6.18:
# 41.1 MB/s through the 40 MB/s limit and 20.6 through 20 reading 32 MiB,
# 41.2 and 20.3 with --size 64M). A check passes when the 95 % interval
# reaches into the known answer's band. The rate band is tight enough to catch
# MiB taken for MB (4.9 %).
RATE_BAND = 0.04  # fraction of the throttle's rate
# Each rate may be off by RATE_BAND, so the known ratio may be off by their
# compound: enough to catch a ratio inverted (2.00) or taken between the wrong
# targets (1.00), not a bias of a percent, which the throttle itself makes.
RATIO_BAND = (1 + RATE_BAND) / (1 - RATE_BAND) - 1  # fraction of the expected ratio: 8.3 %
# Below this a job is too short for the known answer: the throttle's start-up
# slack (up to a 100 ms slice) weighs more on a shorter job; at 8 MiB (0.2 s
# through 40 MB/s) an earlier kernel here read 39.2 MB/s through the 40 MB/s
# limit (`cryptbench selftest --size 8M`).
MIN_SIZE = 32 << 20  # bytes per target
# Times a throttle's rate the stack must move unthrottled for that rate to be the known
# answer: slower, the device's own pace sets the job's, and the check cannot be made.
HEADROOM = 2.0


@dataclass(frozen=True)
class Check:
    what: str  # "throttle-20 / throttle-40, seq1m-q8-read" or "throttle-40, seq1m-q8-read"
    measured: float  # the ratio, or bytes/s
    ci_low: float | None
    ci_high: float | None
    expected: float  # the nominal known answer: the ratio 0.50, or the throttle's bytes/s
    low: float  # the known answer's range, slack and the device's own time included (unit's)
    high: float
    unit: str  # "ratio", or "bytes/s" for a target's own rate
    # why the known answer cannot be checked here (the stack is too slow for the
    # throttle), or "" where it can
    unreachable: str = ""
    trials: int = 0  # count, on the side with fewer: 2 or more without an interval is no_spread

    @property
    def passed(self) -> bool:
        if self.unreachable:
            return False
        if self.ci_low is None or self.ci_high is None:
            # every trial read one figure (stats/estimates.no_spread): that figure is the
            # answer to hold to the known one; one trial is not enough to hold to anything
            return self.trials >= 2 and self.low <= self.measured <= self.high
        return self.ci_low <= self.high and self.ci_high >= self.low


@dataclass(frozen=True)
class SelftestOutcome:
    run: Executed
    document: Document  # the run's, read back from the store
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks) and self.run.exit_code == 0


def known_range(rate: float, unthrottled: float | None, write: bool) -> tuple[float, float]:
    """bytes/s: the range a job through a throttle of `rate` must show, before the
    throttle's slack, on a stack that moves `unthrottled` without it.

    A write's final fsync flushes, after the last throttled write, what the stack
    buffered: at worst the two take their times one after the other
    (rate·u/(rate + u)); at best the flush is free. A read at QD8 overlaps the
    device's reads with the throttle's waits: the throttle's rate."""
    if not write or unthrottled is None or unthrottled <= 0:
        return rate, rate
    return rate * unthrottled / (rate + unthrottled), rate


def _unreachable(rate: float, unthrottled: float | None, workload: str) -> str:
    if unthrottled is None or unthrottled >= HEADROOM * rate:
        return ""
    return (
        f"{TWIN} moved only {format_value(unthrottled, 'bytes/s')} on {workload}, less than "
        f"{HEADROOM:g} times {format_value(rate, 'bytes/s')}: the device, not the throttle, sets the pace"
    )


def unthrottled(doc: Document) -> dict[str, float]:
    """bytes/s: each workload's median on TWIN, the throttles' stack unthrottled."""
    return {r.workload: r.median for r in doc.results if r.target == TWIN and r.metric == "throughput"}


def checks(doc: Document) -> list[Check]:
    """Each workload's ratio of the two throttled targets, and each target's own rate."""
    writes = {w.name: direction(w) == "writes" for w in load_suite("selftest").workloads}
    twin = unthrottled(doc)

    def span(name: str, w: str) -> tuple[float, float]:
        return known_range(RATES[name], twin.get(w), writes.get(w, False))

    trials = {(r.workload, r.target): r.n for r in doc.results if r.metric == "throughput"}
    found = []
    for c in doc.comparisons:
        if c.target == SLOW and c.baseline == FAST:
            (slow_low, slow_high), (fast_low, fast_high) = span(SLOW, c.workload), span(FAST, c.workload)
            found.append(
                Check(
                    f"{SLOW} / {FAST}, {c.workload}",
                    c.ratio,
                    c.ci_low,
                    c.ci_high,
                    EXPECTED,
                    slow_low / fast_high * (1 - RATIO_BAND),
                    slow_high / fast_low * (1 + RATIO_BAND),
                    "ratio",
                    _unreachable(RATES[FAST], twin.get(c.workload), c.workload),
                    min(trials.get((c.workload, SLOW), 0), trials.get((c.workload, FAST), 0)),
                )
            )
    for r in doc.results:
        if r.target in RATES and r.metric == "throughput":
            low, high = span(r.target, r.workload)
            found.append(
                Check(
                    f"{r.target}, {r.workload}",
                    r.median,
                    r.ci_low,
                    r.ci_high,
                    RATES[r.target],
                    low * (1 - RATE_BAND),
                    high * (1 + RATE_BAND),
                    "bytes/s",
                    _unreachable(RATES[r.target], twin.get(r.workload), r.workload),
                    r.n,
                )
            )
    return found


@dataclass(frozen=True)
class SelftestRequest:
    """What `selftest` was asked, as given (request.request_from_args builds it)."""

    target: str = "/var/tmp"  # the directory the scratch space goes in
    db: Path | None = None  # None: the default database
    size: str = "32M"  # bytes per target's data file, as typed
    precision: str | None = None  # percent, as typed ("5%")
    seed: int | None = None  # None: a random one


def run(request: SelftestRequest, *, progress: Progress | None = None) -> SelftestOutcome:
    r = request
    target, db, size, precision, seed = r.target, r.db, r.size, r.precision, r.seed
    if parse_size(size) < MIN_SIZE:
        raise UsageError(
            f"selftest needs --size of at least {format_bytes(MIN_SIZE)}: shorter jobs bias the "
            "known rates by more than their ±4% band"
        )
    avail = REGISTRY[SLOW].probe()
    if not avail.ok:
        raise UnavailableError(f"selftest cannot run here: {avail.reason}")
    # What the targets hide is no part of the known answer: its probes would only write
    # through the throttles (and, under a TCG guest, cost minutes).
    asked = RunRequest(
        backends=f"{SLOW},{TWIN}",
        suite="selftest",
        size=size,
        precision=precision,
        seed=seed,
        target=target,
        db=db,
        skip_protection=True,
    )
    done = execute.run(asked, progress=progress)
    doc = document.read(done.db_path, done.run_id)
    return SelftestOutcome(done, doc, checks(doc))


# What exit status 1 means for this command (its --help lists every status).
EXIT_ONE = "the known answer was not measured (a check failed, or its run did)"

HELP = "measure two throttled targets (40 and 20 MB/s) and check that cryptbench reports 0.50"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_target(p)
    p.add_argument(
        "--size",
        default="32M",
        help="data file per target (default and least 32M: shorter jobs bias the ratio)",
    )
    p.add_argument("--precision", metavar="P", help="as for run (default 5%%)")
    p.add_argument("--seed", type=int)
    add_db(p)
    add_json(p)


def _check_value(value: float, unit: str) -> str:
    return f"{value:.3f}" if unit == "ratio" else format_value(value, unit)


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    with RichProgress(err) as progress:
        result = run(request_from_args(SelftestRequest, args), progress=progress)
    if args.json:
        print_json(result.document.to_json())
    else:
        screens.render(result.document, out)
        out.print()
    for c in result.checks:
        interval = (
            ("no interval" if c.trials < 2 else f"no interval, every one of {c.trials} trials alike")
            if c.ci_low is None or c.ci_high is None
            else f"[{_check_value(c.ci_low, c.unit)}, {_check_value(c.ci_high, c.unit)}]"
        )
        verdict = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"
        err.print(
            f"{verdict} {c.what}: {_check_value(c.measured, c.unit)} {interval}; known answer "
            f"{_check_value(c.expected, c.unit)}, "
            f"{_check_value(c.low, c.unit)} to {_check_value(c.high, c.unit)}"
            + (f"; cannot be checked here: {c.unreachable}" if c.unreachable else "")
        )
    twin = unthrottled(result.document)
    if twin:
        moved = ", ".join(f"{w} {format_value(v, 'bytes/s')}" for w, v in twin.items())
        err.print(
            f"(the ranges: the throttle's slack, ±{RATE_BAND:.0%}; a write's, down to the time its "
            f"final flush takes on the same stack unthrottled, {TWIN}: {moved})"
        )
    if result.passed:
        err.print(f"selftest passed: cryptbench found the known answer (run {result.run.run_id})")
        return 0
    err.print(
        "selftest FAILED: a known answer is outside its interval, or trials failed "
        f"(run {result.run.run_id}; cryptbench show {result.run.run_id})"
    )
    return 1
