"""How many passes over its data file each fio trial makes, so that it lasts at least
the run's trial time of I/O (--trial-time, 1 s by default).

Over a few tens of milliseconds fio measures its own start-up and the device's ramp
as much as the device. The data file stays as laid out (its size is the user's, and a
pass takes no space): a trial that one pass would finish too soon makes several,
fio's `loops`, as pyperf repeats a function too fast to time until a value lasts long
enough.

Calibration runs before the first round, on the run's baselines (the targets the others
are compared with; plain, usually the fastest), outside the results: one pass first,
stopped at the trial time if it lasts longer (runtime=); then as many passes as that
pass says the trial time needs, a fifth more, checked once more, since start-up weighs
less over more passes. A workload's passes are the most any baseline needs, and every
target makes them, so that its trials do its baseline's work.

Several passes only with direct I/O, and never for a write that makes a new file
(runner.trial_passes): those trials make one, and the short-trial warning names them
when they are short. Writes are wear: the write workloads' passes are cut so that the
minimum rounds write at most half the byte budget (--max-bytes), leaving the rest for
the rounds that make answers precise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cryptbench.backends.base import cache_files
from cryptbench.engines.fio import FioMeasurement, parse_fio_json, run_fio
from cryptbench.errors import TrialError
from cryptbench.measure.cache import drop_caches
from cryptbench.runner import FioRunner, Progress, Targets, TrialContext, trial_job
from cryptbench.suite import WorkloadSpec
from cryptbench.units import format_bytes, format_duration

MAX_PASSES = 4096  # a pass of 1 MiB at 4 GB/s lasts 0.26 ms: 4096 of them make a second
MARGIN = 1.2  # aim a fifth over the trial time: later passes run faster than the first
CALIBRATION_RUNS = 3  # fio runs per workload and baseline, at most
BUDGET_SHARE = 0.5  # of the byte budget, what the minimum rounds' writes may take


@dataclass(frozen=True)
class Calibration:
    """What one workload's calibration found."""

    workload: str
    target: str  # the baseline whose pass set the count
    pass_seconds: float  # seconds of fio's runtime one pass took, in the last calibration run
    wanted: int  # passes the trial time needs
    passes: int  # passes each trial makes: wanted, or fewer for the byte budget

    def describe(self, size: int) -> str:
        seconds = self.pass_seconds
        lasted = f"{seconds * 1e3:.0f} ms" if seconds < 1 else format_duration(seconds)
        took = f"a pass of {format_bytes(size)} took {lasted} on {self.target}"
        if self.passes == 1:
            return f"{self.workload} one pass ({took})"
        cut = (
            f", not the {self.wanted} the trial time needs: byte budget" if self.passes < self.wanted else ""
        )
        return f"{self.workload} {self.passes} passes ({took}{cut})"


def passes_for(pass_seconds: float, trial_time: float) -> int:
    """The passes that make a trial last `trial_time` (seconds), a margin over, at
    `pass_seconds` a pass; at least one, at most MAX_PASSES."""
    if trial_time <= 0:
        return 1
    if pass_seconds <= 0:
        return MAX_PASSES
    return max(1, min(MAX_PASSES, math.ceil(trial_time * MARGIN / pass_seconds)))


def within_budget(
    wanted: Mapping[str, int],
    repeating: Mapping[str, int],
    single: Mapping[str, int],
    size: int,
    rounds: int,
    budget: int | None,
) -> dict[str, int]:
    """Each write workload's passes (`wanted`), cut in proportion where the minimum
    rounds would write more than BUDGET_SHARE of `budget` (bytes; None: no budget).
    `repeating`: per write workload, the targets that make its passes; `single`: those
    that make one pass whatever (buffered, or writing a new file); `size`: bytes a pass."""
    if budget is None:
        return dict(wanted)
    fixed = rounds * size * sum(single.values())
    spent = rounds * size * sum(wanted[w] * n for w, n in repeating.items())
    room = max(0.0, budget * BUDGET_SHARE - fixed)
    if spent <= room:
        return dict(wanted)
    scale = room / spent
    return {w: max(1, math.floor(p * scale)) if w in repeating else p for w, p in wanted.items()}


def _seconds(m: FioMeasurement) -> float:
    """fio's runtime of the moved bytes, finer than its whole milliseconds."""
    return m.io_bytes / m.throughput if m.throughput > 0 else m.runtime


def _pass_seconds(
    ctx: TrialContext,
    w: WorkloadSpec,
    name: str,
    targets: Targets,
    seed: int,
    trial_time: float,
    fio: FioRunner,
) -> tuple[float, int]:
    """Seconds one pass of `w` takes on target `name`, and the passes the trial time needs."""
    target = targets[name]
    passes = 1
    per_pass = 0.0
    for run in range(CALIBRATION_RUNS):
        # The first run stops at the trial time: a pass that lasts longer needs no more.
        limit = trial_time * MARGIN if run == 0 else None
        job = trial_job(ctx, w, target, True, seed, False, fio, passes, limit)
        jobfile = ctx.session.path("jobs", f"calibrate-{w.name}-{name}-{run}.fio")
        jobfile.parent.mkdir(exist_ok=True)
        jobfile.write_text(job.text)
        drop_caches(cache_files(target, job.filename))
        m = parse_fio_json(job.fio(jobfile, ctx.session))
        if m.io_bytes < passes * ctx.size:  # stopped at the limit: one pass is long enough
            return _seconds(m) * passes * ctx.size / max(m.io_bytes, 1), 1
        per_pass = _seconds(m) / passes
        needed = passes_for(per_pass, trial_time)
        if per_pass * passes >= trial_time or needed <= passes:
            return per_pass, passes
        passes = needed
    return per_pass, passes


def calibrate(
    ctx: TrialContext,
    targets: Targets,
    direct: Mapping[str, bool],
    workloads: Iterable[WorkloadSpec],
    seeds: Mapping[str, int],
    baselines: list[str],
    trial_time: float,
    new_file: Mapping[str, bool],
    progress: Progress,
    *,
    rounds: int,
    budget: int | None,
    fio: FioRunner = run_fio,
) -> tuple[dict[str, int], list[Calibration], list[str]]:
    """Each fio workload's passes per trial, what calibration found, and what failed.

    `baselines`: the targets to calibrate on; `new_file`: per target, whether its write
    trials write a new file (and so make one pass); `rounds` (the minimum every target
    runs) and `budget` (bytes; None: none) bound the writes' passes."""
    found: dict[str, tuple[str, float, int]] = {}
    failed: list[str] = []
    workloads = list(workloads)
    for w in workloads:
        names = [b for b in baselines if direct[b] and not (w.is_write and new_file[b])]
        if trial_time <= 0 or not names:
            continue
        progress.phase(f"sizing the trials of {w.name}")
        for name in names:
            try:
                per_pass, needed = _pass_seconds(ctx, w, name, targets, seeds[w.name], trial_time, fio)
            except (TrialError, OSError) as e:
                failed.append(f"{w.name} on {name}: {e}")
                continue
            if w.name not in found or needed > found[w.name][2]:
                found[w.name] = (name, per_pass, needed)
    wanted = {w: p for w, (_t, _s, p) in found.items()}
    writes = [w for w in workloads if w.is_write]
    repeating = {
        w.name: sum(direct[t] and not new_file[t] for t in direct) for w in writes if w.name in wanted
    }
    single = {w.name: len(direct) - repeating.get(w.name, 0) for w in writes}
    passes = within_budget(wanted, repeating, single, ctx.size, rounds, budget)
    calibrations = [Calibration(w, t, s, p, passes[w]) for w, (t, s, p) in found.items()]
    return passes, calibrations, failed
