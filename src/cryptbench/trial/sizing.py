"""The run's trials sized to last the trial time of I/O (--trial-time, 1 s by default):
the data file grown before layout where trials run buffered (`grow_data_file`), then the
passes over it each fio trial makes where they run direct (`size_trials`); both within
the byte budget, noted in the run, from what the plan asks of sizing, read once
(`Asked.of`).

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
(TrialContext.trial_size). Buffered trials make one pass: instead, where the data file's
size is the tool's default (not --size, not a study's), it grows before it is laid out
(`grow`), so that one buffered pass lasts the trial time on the baselines, up to the
plan's limit (its share of the free space and of the byte budget); a workload slower
than the fastest moves only what its trial time needs of it (fio's io_size), never less
than the size asked for. What stays short is named by the short-trial warning.

Writes are wear: the write workloads' passes are cut so that the minimum rounds write
at most half the byte budget (--max-bytes), leaving the rest for the rounds that make
answers precise.

Sized on the baselines, a pass can last many times longer on a slow target (cryfs,
at a tenth of plain's speed, takes ten seconds for plain's one): every trial stops
after TRIAL_CAP times the trial time of I/O (fio's runtime=, which ends a job at its
passes or at that time, whichever comes first), and its figure is what it moved in
that time. The baselines' trials, sized to a fifth over the trial time, run whole.
Without the cap, the default run on the development VM found after its first round
that its three rounds needed 4 min 27 s more with 1 min 47 s of its budget left
(its note), and dropped workloads.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from cryptbench.backends.base import Target, cache_files
from cryptbench.engines.fio import FioMeasurement, parse_fio_json, run_fio
from cryptbench.measure.cache import make_cold
from cryptbench.model.errors import TrialError
from cryptbench.model.units import format_bytes, format_duration
from cryptbench.planning.plan import Plan
from cryptbench.planning.stopping_rule import default_max_bytes
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial.context import Progress, Sizing, Targets, TrialContext
from cryptbench.trial.runner import FioRunner, TrialJob, trial_job

MAX_PASSES = 4096  # a pass of 1 MiB at 4 GB/s lasts 0.26 ms: 4096 of them make a second
TRIAL_CAP = 2.0  # a trial stops after this many times the trial time of I/O, on any target
MARGIN = 1.2  # aim a fifth over the trial time: later passes run faster than the first
CALIBRATION_RUNS = 3  # fio runs per workload and baseline, at most
BUDGET_SHARE = 0.5  # of the byte budget, what the minimum rounds' writes may take (direct)
# Buffered, where the data file grew: laying out the grown files may write a quarter of
# the byte budget (plan.GROWTH_SHARE), and the minimum rounds' writes another quarter.
WRITE_SHARE = 0.25


@dataclass(frozen=True)
class Asked:
    """What a run asks of trial sizing, read from its plan once (`of`)."""

    workloads: tuple[WorkloadSpec, ...]  # the fio workloads sized (a study's own commands are not)
    seeds: Mapping[str, int]  # per workload, fio's random seed
    trial_time: float  # seconds of I/O a trial lasts at least; 0: one pass
    bases: frozenset[str] = frozenset()  # the targets others are compared with
    rounds: int = 1  # count: the minimum rounds every target runs
    budget: int | None = None  # bytes the run may write; None: no budget
    limit: int = 0  # bytes the data file may grow to; 0: it keeps its size

    @classmethod
    def of(cls, plan: Plan) -> Asked:
        """What `plan` asks of trial sizing: the fio workloads it applies to (a study's own
        commands run as it ran them), the targets others are compared with, the trial
        time, the minimum rounds, the byte budget and the data file's limit."""
        published = {w.name for w in plan.suite.as_published}
        workloads = tuple(
            w for w in plan.suite.workloads if isinstance(w, WorkloadSpec) and w.name not in published
        )
        bases = frozenset(b for b in plan.baselines.values() if b is not None)
        # a fixed count has no budget of its own, but what sizing multiplies its writes by
        # still needs one (the adaptive default)
        rule = plan.rule
        budget = rule.max_bytes if rule.max_bytes is not None else default_max_bytes(plan.target_dir)
        return cls(
            workloads, plan.seeds, plan.trial_time, bases, rule.min_repeats, budget, plan.data_size_limit
        )

    def baselines(self, names: Iterable[str]) -> list[str]:
        """Of `names`, the targets others are compared with; all of them when none is."""
        names = list(names)
        return [name for name in names if name in self.bases] or names


@dataclass(frozen=True)
class Calibration:
    """What one workload's calibration found."""

    workload: str
    target: str  # the baseline whose pass set the count
    pass_seconds: float  # seconds of fio's runtime one pass took, in the last calibration run
    wanted: int  # passes the trial time needs
    passes: int  # passes each trial makes: wanted, or fewer for the byte budget
    pass_bytes: int  # bytes a pass moves

    def describe(self) -> str:
        size = self.pass_bytes
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
    size: Mapping[str, int],
    rounds: int,
    budget: int | None,
) -> dict[str, int]:
    """Each write workload's passes (`wanted`), cut in proportion where the minimum
    rounds would write more than BUDGET_SHARE of `budget` (bytes; None: no budget).
    `repeating`: per write workload, the targets that make its passes; `single`: those
    that make one pass whatever (buffered, or writing a new file); `size`: per write
    workload, the bytes a pass moves."""
    if budget is None:
        return dict(wanted)
    fixed = rounds * sum(size[w] * n for w, n in single.items())
    spent = rounds * sum(size[w] * wanted[w] * n for w, n in repeating.items())
    room = max(0.0, budget * BUDGET_SHARE - fixed)
    if spent <= room:
        return dict(wanted)
    scale = room / spent
    return {w: max(1, math.floor(p * scale)) if w in repeating else p for w, p in wanted.items()}


def grown_size(
    rates: Mapping[str, float], trial_time: float, size: int, limit: int, align: int, caps: Mapping[str, int]
) -> int:
    """Bytes of a data file one buffered pass of the workload that needs most takes
    `trial_time` over (`rates`: bytes/s per workload; `caps`: at most what a write's share
    of the byte budget lets it move), a margin over, in whole `align`s: at least `size`,
    at most `limit`."""
    want = max((min(r * trial_time * MARGIN, caps.get(w, math.inf)) for w, r in rates.items()), default=0.0)
    return min(limit, max(size, math.ceil(want / align) * align))


def moved_bytes(
    rates: Mapping[str, float],
    blocks: Mapping[str, int],
    trial_time: float,
    size: int,
    file_bytes: int,
    caps: Mapping[str, int],
) -> dict[str, int]:
    """Per workload that moves less than the whole file, the bytes its pass moves (fio
    io_size): what the trial time needs at its rate, within its cap (`caps`: the write
    workloads' share of the byte budget), in whole blocks, at least `size` (what was asked)."""
    out = {}
    for w, rate in rates.items():
        b = blocks[w]
        want = math.ceil(rate * trial_time * MARGIN / b) * b
        if w in caps:
            want = min(want, caps[w] // b * b)
        want = max(size, want)
        if want < file_bytes:
            out[w] = want
    return out


@dataclass(frozen=True)
class Growth:
    """What calibrating buffered trials did to the data file."""

    size: int  # bytes of the data file now
    limit: int  # bytes it could have grown to
    rates: dict[str, float]  # bytes/s of one buffered pass per workload, the fastest baseline's
    moved: dict[str, int]  # bytes a pass moves where fewer than the file
    sized_by: str  # the workload whose pass the file was sized for (a read, where writes are capped)

    def describe(self, asked: int, trial_time: float) -> str:
        lasting = format_duration(trial_time)
        if self.size <= asked:
            return (
                f"the {format_bytes(asked)} data file already lasts {lasting} of buffered I/O "
                "for the slowest workloads; it was not grown"
            )
        fast = self.sized_by
        rate = self.rates[fast]
        each = ", ".join(f"{w} {format_bytes(n)}" for w, n in self.moved.items())
        tail = f"; a trial of a slower workload or a write (wear) moves less of it: {each}" if each else ""
        grown = f"data file grown from {format_bytes(asked)} to {format_bytes(self.size)}"
        if self.size >= self.limit:
            need = format_bytes(int(rate * trial_time))
            return (
                f"{grown}, its limit (its share of the byte budget: a larger --max-bytes or --size "
                "lengthens the trials); one buffered pass "
                f"of {fast} ({rate / 1e6:.0f} MB/s) would need {need} to last {lasting}{tail}"
            )
        pace = f"{fast} ({rate / 1e6:.0f} MB/s)"
        return f"{grown}, so that one buffered pass of {pace} lasts about {lasting}{tail}"


def grow(
    ctx: TrialContext,
    as_asked: Sizing,
    targets: Targets,
    asked: Asked,
    baselines: list[str],
    write_cap: int,
    progress: Progress,
    fio: FioRunner = run_fio,
) -> tuple[Growth | None, list[str]]:
    """The data file's size (at most asked.limit bytes) and each workload's bytes a pass (a
    write workload's at most `write_cap`), from one buffered pass of each workload over
    the file as asked (`as_asked`, already laid out on `baselines`, buffered targets); None when
    nothing could be measured. Also what failed, in words."""
    rates: dict[str, float] = {}
    blocks: dict[str, int] = {}
    failed: list[str] = []
    workloads, seeds, trial_time, limit = asked.workloads, asked.seeds, asked.trial_time, asked.limit
    for w in workloads:
        progress.phase(f"sizing the data file for {w.name}")
        for name in baselines:
            target = targets[name]
            sized = as_asked.calibration_size(w, False, 1, trial_time * MARGIN)
            job = trial_job(ctx, w, target, sized, seeds[w.name], fio)
            try:
                m = _measure_job(ctx, target, job, f"grow-{w.name}-{name}")
            except (TrialError, OSError) as e:
                failed.append(f"{w.name} on {name}: {e}")
                continue
            rate = m.io_bytes / max(_seconds(m), 1e-6)
            rates[w.name] = max(rates.get(w.name, 0.0), rate)
            blocks[w.name] = w.bs
    if not rates:
        return None, failed
    align = max(1 << 20, *blocks.values())
    caps = {w.name: write_cap for w in workloads if w.is_write}
    least = as_asked.file_bytes
    size = grown_size(rates, trial_time, least, max(limit, least), align, caps)
    moved = moved_bytes(rates, blocks, trial_time, least, size, caps)
    sized_by = max(rates, key=lambda w: min(rates[w], caps.get(w, math.inf) / trial_time / MARGIN))
    return Growth(size, limit, rates, moved, sized_by), failed


def _measure_job(ctx: TrialContext, target: Target, job: TrialJob, name: str) -> FioMeasurement:
    """One calibration run: its job file written as `name`.fio, caches dropped as before
    a trial, fio's measurement."""
    jobfile = ctx.session.path("jobs", f"{name}.fio")
    jobfile.parent.mkdir(exist_ok=True)
    jobfile.write_text(job.text)
    make_cold(target, cache_files(target, job.filename))
    return parse_fio_json(job.fio(jobfile, ctx.session))


def _seconds(m: FioMeasurement) -> float:
    """fio's runtime of the moved bytes, finer than its whole milliseconds."""
    return m.io_bytes / m.throughput if m.throughput > 0 else m.runtime


def _pass_seconds(
    ctx: TrialContext,
    sizing: Sizing,
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
        job = trial_job(ctx, w, target, sizing.calibration_size(w, True, passes, limit), seed, fio)
        m = _measure_job(ctx, target, job, f"calibrate-{w.name}-{name}-{run}")
        one = sizing.pass_bytes(w.name)
        if m.io_bytes < passes * one:  # stopped at the limit: one pass is long enough
            return _seconds(m) * passes * one / max(m.io_bytes, 1), 1
        per_pass = _seconds(m) / passes
        needed = passes_for(per_pass, trial_time)
        if per_pass * passes >= trial_time or needed <= passes:
            return per_pass, passes
        passes = needed
    return per_pass, passes


def calibrate(
    ctx: TrialContext,
    sizing: Sizing,
    targets: Targets,
    direct: Mapping[str, bool],
    asked: Asked,
    baselines: list[str],
    new_file: Mapping[str, bool],
    progress: Progress,
    fio: FioRunner = run_fio,
) -> tuple[dict[str, int], list[Calibration], list[str]]:
    """Each fio workload's passes per trial, what calibration found, and what failed.

    `baselines`: the targets to calibrate on; `new_file`: per target, whether its write
    trials write a new file (and so make one pass); asked.rounds (the minimum every
    target runs) and asked.budget bound the writes' passes."""
    found: dict[str, tuple[str, float, int]] = {}
    failed: list[str] = []
    workloads, seeds, trial_time = asked.workloads, asked.seeds, asked.trial_time
    for w in workloads:
        names = [b for b in baselines if direct[b] and not (w.is_write and new_file[b])]
        if trial_time <= 0 or not names:
            continue
        progress.phase(f"sizing the trials of {w.name}")
        for name in names:
            try:
                per_pass, needed = _pass_seconds(
                    ctx, sizing, w, name, targets, seeds[w.name], trial_time, fio
                )
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
    size = {w.name: sizing.pass_bytes(w.name) for w in writes}
    passes = within_budget(wanted, repeating, single, size, asked.rounds, asked.budget)
    calibrations = [
        Calibration(w, t, s, p, passes[w], sizing.pass_bytes(w)) for w, (t, s, p) in found.items()
    ]
    return passes, calibrations, failed


def grow_data_file(
    asked: Asked,
    ctx: TrialContext,
    targets: Targets,
    direct: dict[str, bool],
    progress: Progress,
) -> Sizing:
    """The data file's size as asked (ctx.size), or where trials run buffered and it may
    grow (asked.limit), the size that makes a buffered pass last the trial time on the
    baselines, and the bytes each slower workload moves; noted in the run."""
    as_asked = Sizing(ctx.size)
    buffered = [name for name, d in direct.items() if not d]
    if asked.limit <= ctx.size or not buffered or not asked.workloads:
        return as_asked
    baselines = asked.baselines(buffered)
    for name in baselines:
        targets.lay_out(targets[name], ctx, as_asked)
    # the minimum rounds' writes, on every target, take at most their share of the byte budget
    writes = max(1, sum(w.is_write for w in asked.workloads))
    trials = len(direct) * asked.rounds * writes
    write_cap = int((asked.budget or 0) * WRITE_SHARE / trials)
    growth, failed = grow(ctx, as_asked, targets, asked, baselines, write_cap, progress)
    for why in failed:
        ctx.store.add_note(ctx.run_id, f"could not size the data file for {why}")
    if growth is None:
        return as_asked
    ctx.store.add_note(ctx.run_id, growth.describe(ctx.size, asked.trial_time))
    return Sizing(growth.size, moved=growth.moved)  # grown_size: never below the size asked


def size_trials(
    asked: Asked,
    ctx: TrialContext,
    sizing: Sizing,
    targets: Targets,
    direct: dict[str, bool],
    progress: Progress,
) -> Sizing:
    """`sizing` (the data file's, from `grow_data_file`) with each fio workload's passes
    per trial, calibrated on the baselines (every target where there is none) so that
    trials last the trial time, and the cap on every trial's time; noted in the run."""
    if asked.trial_time <= 0 or not asked.workloads:
        return sizing
    # a slow target's trial stops at the cap: its figure is what it moved in that time
    sizing = replace(sizing, time_cap=asked.trial_time * TRIAL_CAP)
    new_file = {name: ctx.writes_new_files(targets[name]) for name in direct}
    passes, found, failed = calibrate(
        ctx, sizing, targets, direct, asked, asked.baselines(direct), new_file, progress
    )
    if found:
        each = "; ".join(c.describe() for c in found)
        last = format_duration(asked.trial_time)
        cap = format_duration(sizing.time_cap or 0)
        ctx.store.add_note(
            ctx.run_id,
            f"trials sized to last {last} of I/O (--trial-time), at most {cap} on any target: {each}",
        )
    for why in failed:
        ctx.store.add_note(ctx.run_id, f"could not size the trials of {why}; they make one pass")
    return replace(sizing, passes=passes)
