"""Trials: their order, and running each one.

State: a target whose state is controlled (disk images: `fresh` or
`rewrite`) is made anew before each of its write trials, outside the clock;
and in suites that write new files, the old data file is deleted (and the
deletion synced) before a write trial. A read trial whose data file is missing
or short (its write failed) gets it laid out again first.

Order: for every repeat, the workloads in a random order, and within each
workload a block that runs every target once, in a random order. Targets are
never run all-of-A-then-all-of-B, so slow drift of the machine (thermal
throttling, an SSD's cache filling) spreads over all targets instead of
masquerading as a difference between them. `--seed` reproduces the order.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Protocol, TypeVar

from cryptbench.adaptive import Controller, Fit, Rounds, Samples, Stopping, StopReason, fit_minimum_rounds
from cryptbench.backends.base import Target, cache_files, iter_files
from cryptbench.engines.apps import AppEnv, AppResult, AppWorkload
from cryptbench.engines.command_process import Sandbox, cgroup_root
from cryptbench.engines.fio import FioMeasurement, parse_fio_json, run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.errors import CryptbenchError, DiskFull, TargetLost, TrialError, UsageError
from cryptbench.json_types import JsonObject
from cryptbench.measure import cpu, cpu_timeline
from cryptbench.measure.cache import drop_caches, resident_bytes
from cryptbench.measure.device import bytes_read, bytes_written
from cryptbench.session import Session
from cryptbench.store import Store, TrialRecord, now_iso, split_rounds
from cryptbench.suite import Workload, WorkloadSpec, direction, family
from cryptbench.trial_metrics import app_metrics, trial_metrics
from cryptbench.units import format_duration

DATA_FILE = "cryptbench.dat"
T = TypeVar("T")


@dataclass(frozen=True)
class TrialSpec:
    seq: int  # position in the run
    block: int  # interleaving block: one (repeat, workload), every target once
    repeat: int
    workload: Workload
    target: str


def round_blocks(
    rng: random.Random,
    workloads: tuple[Workload, ...],
    targets: list[str],
    need: dict[str, set[str]] | None,
    skip: Mapping[str, Mapping[str, str]] | None = None,
) -> list[tuple[Workload, list[str]]]:
    """One round: the workloads in a random order (with `need`, in its order: the one
    nearest an answer first), and for each a block of the targets it needs (all with
    `need` None) in a random order, but those `skip` leaves out of it (workload ->
    {target: why}: the plan's trials not run)."""
    order = list(workloads)
    rng.shuffle(order)
    if need is not None:
        rank = {name: i for i, name in enumerate(need)}
        order.sort(key=lambda w: rank.get(w.name, len(rank)))
    blocks = []
    for w in order:
        if need is not None and w.name not in need:
            continue
        left_out = (skip or {}).get(w.name, {})
        names = [t for t in targets if (need is None or t in need[w.name]) and t not in left_out]
        rng.shuffle(names)
        if names:
            blocks.append((w, names))
    return blocks


class Progress(Protocol):
    def phase(self, text: str) -> None: ...
    def say(self, text: str) -> None: ...
    def add_trials(self, count: int) -> None: ...
    def trial_done(self, spec: TrialSpec, ok: bool) -> None: ...
    def round_started(self, number: int, seconds_left: float | None) -> None: ...


class NullProgress:
    def phase(self, text: str) -> None:
        pass

    def say(self, text: str) -> None:
        pass

    def add_trials(self, count: int) -> None:
        pass

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
        pass

    def round_started(self, number: int, seconds_left: float | None) -> None:
        pass


@dataclass(frozen=True)
class TrialContext:
    session: Session
    store: Store
    run_id: int
    size: int  # bytes
    ioengine: str
    zero_data: bool
    write_new_file: bool = False  # write trials write a new file instead of overwriting
    device: str | None = None  # the block device under the scratch space (vda), for its write counter
    # fio workload -> passes over the data file per trial, where a trial may make
    # several (trial_passes); calibrated before the first round (trial_sizing.py)
    passes: Mapping[str, int] = field(default_factory=dict)
    # bytes of fio's data file where it grew past `size` so that buffered trials last
    # the trial time (trial_sizing.grow); 0: `size`
    data_size: int = 0
    # fio workload -> bytes a pass moves, where fewer than the data file (a slow
    # workload over a file grown for a fast one)
    moved: Mapping[str, int] = field(default_factory=dict)
    # seconds of I/O after which fio stops a trial (runtime=: its passes or this, whichever
    # ends first), so that a slow target's trial lasts no longer than a fast one's by more
    # than trial_sizing.TRIAL_CAP; None: no cap (--trial-time 0, one whole pass)
    time_cap: float | None = None

    @property
    def file_bytes(self) -> int:
        """Bytes of fio's data file on each target."""
        return self.data_size or self.size


class Targets(Protocol):
    """The provisioned targets, by name, and how to make a stateful one anew."""

    def __getitem__(self, name: str) -> Target: ...
    def reset(self, name: str) -> Target: ...
    def lay_out(self, target: Target) -> None: ...


def job_options(
    ctx: TrialContext,
    target: Target,
    direct: bool,
    seed: int,
    new_file: bool = False,
    passes: int = 1,
    workload: str | None = None,
) -> JobOptions:
    """A job's options on `target`; with `workload`, the bytes its passes move."""
    return JobOptions(
        filename=ctx.session.check_inside(target.path / DATA_FILE),
        size=ctx.file_bytes,
        direct=direct,
        ioengine=ctx.ioengine,
        zero_data=ctx.zero_data,
        seed=seed,
        new_file=new_file,
        passes=passes,
        io_size=ctx.moved.get(workload) if workload is not None else None,
    )


def pass_bytes(ctx: TrialContext, workload: str) -> int:
    """Bytes one pass of `workload` moves: the data file, or fewer where sizing said so."""
    return ctx.moved.get(workload, ctx.file_bytes)


def trial_passes(ctx: TrialContext, workload: str, direct: bool, new_file: bool) -> int:
    """Passes over the data file a trial of `workload` makes on a target: the calibrated
    count with direct I/O, else one. A buffered second pass would be served from the page
    cache; and a write that makes a new file (a fresh image, a suite that writes new
    files) measures a first write, which a second pass would turn into a rewrite."""
    return ctx.passes.get(workload, 1) if direct and not new_file else 1


class FioRunner(Protocol):
    """Runs one job file and returns fio's JSON text (engines/fio.run_fio, or a test's fake)."""

    def __call__(
        self,
        jobfile: Path,
        session: Session | None = None,
        *,
        readonly: bool = False,
        cgroup: Path | None = None,
    ) -> str: ...


@dataclass(frozen=True)
class TrialJob:
    text: str  # the fio job file
    filename: Path  # the file it reads or writes: the data file, or its ciphertext
    fio: FioRunner  # what runs it: read-only for the ciphertext, in the target's cgroup


def trial_job(
    ctx: TrialContext,
    workload: WorkloadSpec,
    target: Target,
    direct: bool,
    seed: int,
    new_file: bool,
    fio: FioRunner,
    passes: int,
    time_limit: float | None = None,
) -> TrialJob:
    """The job a trial of `workload` on `target` runs, and how to run it; `time_limit`
    (seconds) stops it early: calibration's, or the run's cap (TrialContext.time_cap)."""
    opts = job_options(ctx, target, direct, seed, new_file, passes, workload.name)
    opts = replace(opts, time_limit=time_limit)
    if workload.view == "backing":
        opts = replace(opts, filename=backing_file(ctx.session, target))
        fio = partial(fio, readonly=True)
    if target.cgroup is not None:
        fio = partial(fio, cgroup=target.cgroup)
    return TrialJob(render_job(workload, opts), opts.filename, fio)


def backing_file(session: Session, target: Target) -> Path:
    """The file holding the target's ciphertext: its image file, or under a
    backing directory the largest file, which is the data file's encrypted twin
    (for plain, the data file itself)."""
    files = list(iter_files(target.backing))
    if not files:
        raise TargetLost(f"{target.name} has no backing file to read")
    return session.check_inside(max(files, key=lambda p: p.stat().st_size))


def writes_new_file(ctx: TrialContext, spec: TrialSpec, target: Target) -> bool:
    return spec.workload.is_write and (ctx.write_new_file or target.state is not None)


def prepare(ctx: TrialContext, spec: TrialSpec, targets: Targets) -> Target:
    """Bring the target into the state the trial needs; outside the clock.

    Raises TargetLost when a stateful target cannot be made anew.
    """
    target = targets[spec.target]
    if spec.workload.is_write and target.state is not None:
        try:
            target = targets.reset(spec.target)
        except CryptbenchError as e:
            raise TargetLost(f"{spec.target} could not be made anew ({target.state}): {e}") from None
    if isinstance(spec.workload, AppWorkload):
        return target  # its own setup runs with the trial (run_app_trial)
    datafile = ctx.session.check_inside(target.path / DATA_FILE)
    if writes_new_file(ctx, spec, target):
        if datafile.exists():
            datafile.unlink()
            os.sync()  # the freed blocks are the filesystem's again before the clock starts
    elif not spec.workload.is_write:
        try:
            short = datafile.stat().st_size < ctx.file_bytes
        except FileNotFoundError:
            short = True
        if short:
            try:
                targets.lay_out(target)
            except DiskFull:
                raise
            except CryptbenchError as e:
                raise TargetLost(f"{spec.target}: {e}") from None
    return target


ENOSPC_TEXT = "No space left on device"


def target_lost(target: Target, when: str) -> str | None:
    """Why the target can no longer be measured (a helper died), or None."""
    for h in target.helpers:
        death = h.death()
        if death is not None:
            return f"{h.name} (pid {h.pid}) {death} {when}; target {target.name} is lost"
    return None


def _why(e: OSError) -> str:
    return f"{e.strerror}: {e.filename}" if e.filename else (e.strerror or str(e))


@dataclass(frozen=True)
class Meters:
    cpu: cpu.CpuUsage
    device_written: int | None  # bytes the scratch device wrote during the work; None: no counter
    device_read: int | None = None  # bytes the scratch device read during the work; None: no counter


def _measure(
    ctx: TrialContext,
    target: Target,
    files: list[Path],
    row: TrialRecord,
    what: str,
    work: Callable[[], T],
    cold: bool = True,
) -> tuple[T, Meters]:
    """Drop caches (unless the workload asks for a warm cache), then do `work` (fio, or
    an app's task) between CPU and device-counter snapshots.

    A failure while a helper of the target died is the target's loss, not the trial's.
    """
    if cold:
        row.cache_method = str(drop_caches(files))
        # What is still resident now would be served from memory: record it.
        row.cache_resident_bytes = resident_bytes(files)
    else:
        row.cache_method = WARM
    written, read = bytes_written(ctx.device), bytes_read(ctx.device)
    before = cpu.snapshot(target.helpers)
    sampler = cpu_timeline.Sampler(target.helpers).start()
    try:
        out = work()
    except (TrialError, OSError) as e:
        lost = target_lost(target, "during this trial")
        if lost:
            raise TargetLost(f"{lost} ({what}: {_why(e) if isinstance(e, OSError) else e})") from None
        raise
    finally:
        row.cpu_timeline = sampler.stop().to_json()
    after = cpu.snapshot(target.helpers)
    written_after, read_after = bytes_written(ctx.device), bytes_read(ctx.device)
    lost = target_lost(target, "during this trial")
    if lost:
        raise TargetLost(lost)
    device = None if written is None or written_after is None else written_after - written
    device_read = None if read is None or read_after is None else read_after - read
    return out, Meters(cpu.usage(before, after), device, device_read)


WARM = "kept: the workload asks for a warm cache"  # a trial's cache_method when none was dropped


def _trial_row(spec: TrialSpec, target: Target, job: str) -> TrialRecord:
    return TrialRecord(
        seq=spec.seq,
        block=spec.block,
        repeat=spec.repeat,
        workload=spec.workload.name,
        target=target.name,
        started_at=now_iso(),
        job_file=job,
    )


def _store_failure(
    ctx: TrialContext, spec: TrialSpec, target: Target, row: TrialRecord, e: TrialError
) -> None:
    """Store the failed trial; raise DiskFull if the target filled up, TargetLost again if lost."""
    row.status, row.error = "failed", str(e)
    ctx.store.insert_trial(ctx.run_id, row, [])
    if ENOSPC_TEXT in str(e):
        raise DiskFull(
            f"the target filesystem filled up during {spec.workload.name} on {target.name} "
            f"({ENOSPC_TEXT}); the run stopped"
        ) from None
    if isinstance(e, TargetLost):
        raise e


def run_trial(
    ctx: TrialContext,
    spec: TrialSpec,
    target: Target,
    direct: bool,
    workload_seed: int,
    fio: FioRunner = run_fio,
) -> bool:
    """Run one trial and store it at once, failed or not. Returns success.

    Raises TargetLost (after storing the failed trial) when the target's
    helper died, and DiskFull when the target filesystem filled up.
    """
    assert isinstance(spec.workload, WorkloadSpec)
    new_file = writes_new_file(ctx, spec, target)
    passes = trial_passes(ctx, spec.workload.name, direct, new_file)
    job = trial_job(ctx, spec.workload, target, direct, workload_seed, new_file, fio, passes, ctx.time_cap)
    row = _trial_row(spec, target, job.text)
    try:
        try:
            lost = target_lost(target, "before this trial")
            if lost:
                raise TargetLost(lost)
            jobfile = ctx.session.path("jobs", f"{spec.seq:05d}-{spec.workload.name}-{target.name}.fio")
            jobfile.parent.mkdir(exist_ok=True)
            jobfile.write_text(job.text)
            sync = target.sync_backing and spec.workload.is_write
            (raw, synced), meters = _measure(
                ctx,
                target,
                cache_files(target, job.filename),
                row,
                "fio",
                lambda: _fio_then_sync(job, jobfile, ctx.session, sync),
            )
        except OSError as e:  # the scratch filesystem full, a FUSE mount gone, …
            raise TrialError(_why(e)) from None
        row.raw_output = raw
        measurement = durable(parse_fio_json(raw), synced)
    except TrialError as e:
        _store_failure(ctx, spec, target, row, e)
        return False
    row.status = "ok"
    metrics = trial_metrics(measurement, meters.cpu, meters.device_written, synced)
    ctx.store.insert_trial(ctx.run_id, row, metrics)
    return True


def _fio_then_sync(job: TrialJob, jobfile: Path, session: Session, sync: bool) -> tuple[str, float | None]:
    """fio's JSON, then (with `sync`) the seconds a sync of the backing took:
    the durable end of a write whose fsync did not reach the backing (Target.sync_backing)."""
    raw = job.fio(jobfile, session)
    if not sync:
        return raw, None
    started = time.perf_counter()
    # sync(2), as the application tasks' own `sync`: in a trial only this target writes
    os.sync()
    return raw, time.perf_counter() - started


def durable(m: FioMeasurement, synced: float | None) -> FioMeasurement:
    """`m` with the backing's sync (seconds; None: none) inside its clock: its rates over
    fio's runtime and the sync together, as end_fsync is inside fio's own runtime."""
    if not synced:
        return m
    seconds = m.runtime + synced
    return replace(m, throughput=m.io_bytes / seconds, iops=m.iops * m.runtime / seconds, runtime=seconds)


def app_env(ctx: TrialContext, workload: AppWorkload, target: Target, seed: int, trial: int = 1) -> AppEnv:
    """Where an application workload works: its own directory on the target,
    its inputs and staging outside the targets."""
    root = ctx.session.check_inside(target.path / "apps" / workload.name)

    def settle() -> None:
        # A generator: as root drop_caches never reads it, so no tree is walked.
        drop_caches(chain(target.cached, iter_files((root, inputs, staging, *target.backing))))

    inputs = ctx.session.path("inputs", workload.name)
    staging = ctx.session.path("staging", workload.name)
    return AppEnv(root, inputs, staging, ctx.size, seed, settle, trial, ctx.session)


def run_app_trial(ctx: TrialContext, spec: TrialSpec, target: Target, workload_seed: int) -> bool:
    """Run one application-workload trial and store it at once, failed or not.

    Set-up (what must be on the target) and clean-up (what the trial wrote)
    run outside the clock; caches are dropped after set-up and between the
    task's phases. Raises TargetLost and DiskFull like run_trial, and
    BrokenCommand when the user's command fails on the baseline in the first round.
    """
    workload = spec.workload
    assert isinstance(workload, AppWorkload)
    env = app_env(ctx, workload, target, workload_seed, spec.repeat + 1)
    row = _trial_row(spec, target, json.dumps(workload.describe(ctx.size), sort_keys=True))
    with contextlib.ExitStack() as processes:
        if workload.runs_commands:
            # Ended when the trial ends, on every way out: before any unmount.
            logs = ctx.session.path("commands", f"{spec.seq:05d}-{workload.name}-{target.name}")
            # A throttled target's limit (cgroup v2 io.max) holds its descendants too.
            root = target.cgroup or cgroup_root()
            env.sandbox = processes.enter_context(Sandbox(ctx.session, logs, root))
        try:
            result, meters = _app_trial(ctx, workload, target, env, row)
        except TrialError as e:
            _store_failure(ctx, spec, target, row, e)
            if workload.runs_commands and target.baseline is None and spec.repeat == 0:
                raise BrokenCommand(
                    f"{workload.name} failed on {target.name}, the baseline, in the first round, so the "
                    f"command is broken, not the target: {e}"
                ) from None
            return False
    row.status = "ok"
    row.raw_output = json.dumps(result.to_json(), sort_keys=True)
    metrics = app_metrics(workload, result, meters.cpu, meters.device_written, meters.device_read)
    ctx.store.insert_trial(ctx.run_id, row, metrics)
    return True


class BrokenCommand(UsageError):
    """The user's command failed where nothing but the command can be at fault."""


def _app_trial(
    ctx: TrialContext, workload: AppWorkload, target: Target, env: AppEnv, row: TrialRecord
) -> tuple[AppResult, Meters]:
    """Set-up, the timed task, clean-up; clean-up also after a failure, so that what a failed
    trial wrote does not fill the next (a target that cannot be cleaned is lost)."""
    try:
        try:
            lost = target_lost(target, "before this trial")
            if lost:
                raise TargetLost(lost)
            env.root.mkdir(parents=True, exist_ok=True)
            env.staging.mkdir(parents=True, exist_ok=True)
            workload.setup(env)
            files = cache_files(target, *iter_files((env.root, env.inputs)))
            outcome = _measure(
                ctx, target, files, row, workload.name, lambda: workload.run(env), cold=workload.cold
            )
        except OSError as e:  # the target full, a FUSE mount gone, …
            raise TrialError(_why(e)) from None
    except TrialError:
        try:
            workload.clean(env)
        except (OSError, TrialError) as clean_error:
            raise TargetLost(
                f"{target.name}: could not clean up after a failed trial: {clean_error}"
            ) from None
        raise
    try:
        workload.clean(env)
    except OSError as e:
        raise TrialError(_why(e)) from None
    return outcome


class RoundExecutor(Protocol):
    """What runs a run's trials block by block, for `interleave`: the local Executor (a
    block's targets one after another) and a fleet's Coordinator (a target's trial on
    every host that serves it, in one fio --client). `lost` (target -> why) is read as
    it grows; `finish` notes the lost targets and returns (trials that succeeded,
    trials that failed or were not run)."""

    @property
    def store(self) -> Store: ...
    @property
    def run_id(self) -> int: ...
    @property
    def lost(self) -> dict[str, str]: ...
    @property
    def progress(self) -> Progress: ...
    def run_block(self, workload: Workload, names: list[str], repeat: int, block: int) -> int: ...
    def finish(self) -> tuple[int, int]: ...


class OneAtATime:
    """A RoundExecutor's block, run as one trial per target in the block's order, each
    with the next sequence number (`run` runs one; `ctx` holds the store and run)."""

    ctx: TrialContext
    seq: int = 0  # the next trial's number in the run

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def run_id(self) -> int:
        return self.ctx.run_id

    def run(self, spec: TrialSpec) -> bool:
        raise NotImplementedError

    def run_block(self, workload: Workload, names: list[str], repeat: int, block: int) -> int:
        """Returns the next block's number."""
        for name in names:
            self.run(TrialSpec(self.seq, block, repeat, workload, name))
            self.seq += 1
        return block + 1


class Executor(OneAtATime):
    """Runs trials one by one, remembering targets that were lost: their
    remaining trials are not run (they would fail the same way); the other
    targets go on."""

    def __init__(
        self,
        ctx: TrialContext,
        targets: Targets,
        direct: dict[str, bool],
        workload_seeds: dict[str, int],
        progress: Progress,
    ) -> None:
        self.ctx, self.targets, self.direct = ctx, targets, direct
        self.workload_seeds, self.progress = workload_seeds, progress
        self.ok = self.failed = 0  # trials that succeeded; failed or not run
        self.lost: dict[str, str] = {}  # target -> why
        self.skipped: dict[str, int] = {}  # target -> trials not run

    def run(self, spec: TrialSpec) -> bool:
        if spec.target in self.lost:
            self.skipped[spec.target] = self.skipped.get(spec.target, 0) + 1
            success = False
        else:
            try:
                target = prepare(self.ctx, spec, self.targets)
                seed = self.workload_seeds[spec.workload.name]
                if isinstance(spec.workload, AppWorkload):
                    success = run_app_trial(self.ctx, spec, target, seed)
                else:
                    success = run_trial(self.ctx, spec, target, self.direct[target.name], seed)
            except TargetLost as e:
                self.lost[spec.target] = str(e)
                success = False
        self.ok += success
        self.failed += not success
        self.progress.trial_done(spec, success)
        return success

    def finish(self) -> tuple[int, int]:
        """Note the lost targets; return (succeeded, failed or not run)."""
        note_lost(self.ctx.store, self.ctx.run_id, self.lost, self.skipped)
        return self.ok, self.failed


def note_lost(store: Store, run_id: int, lost: dict[str, str], skipped: dict[str, int]) -> None:
    """A run note per lost target: why, and how many of its trials were not run."""
    for name, why in lost.items():
        store.add_note(run_id, f"{why}: its {skipped.get(name, 0)} remaining trial(s) were not run")


class Ledger(Protocol):
    """Where a run's trials are counted: its store and run, and the device whose
    write counter to read (None: what the workloads wrote, from the store)."""

    @property
    def store(self) -> Store: ...
    @property
    def run_id(self) -> int: ...
    @property
    def device(self) -> str | None: ...


class Spend:
    """What the trials have cost so far: bytes written (the device's own
    counter where there is one, else what fio and the tasks wrote) and seconds."""

    def __init__(self, ctx: Ledger, write_workloads: set[str], clock: Callable[[], float] = time.monotonic):
        self.ctx, self.write_workloads, self.clock = ctx, write_workloads, clock
        self.device_start = bytes_written(ctx.device)
        self.started = clock()

    def bytes(self) -> int:
        if self.device_start is not None:
            now = bytes_written(self.ctx.device)
            if now is not None:
                return now - self.device_start
        return int(self.ctx.store.metric_sum(self.ctx.run_id, "io_bytes", self.write_workloads))

    def seconds(self) -> float:
        return self.clock() - self.started

    def over(self, rule: Stopping) -> StopReason | None:
        if rule.max_bytes is not None and self.bytes() >= rule.max_bytes:
            return StopReason.MAX_BYTES
        if rule.max_time is not None and self.seconds() >= rule.max_time:
            return StopReason.MAX_TIME
        return None


def primary_samples(store: Store, run_id: int, metric_of: dict[str, str]) -> tuple[Samples, Rounds]:
    """Each (workload, target)'s values of the workload's primary metric, in trial order,
    and the round each ran in."""
    by_round = {(w, t): v for (w, t, m), v in store.samples_by_round(run_id).items() if metric_of.get(w) == m}
    return split_rounds(by_round)


def interleave(
    executor: RoundExecutor,
    controller: Controller,
    spend: Spend,
    workloads: tuple[Workload, ...],
    targets: list[str],
    seed: int,
    skip: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[int, int]:
    """Interleaved rounds until the controller has every answer or a budget is spent:
    each round, the workloads in a random order (`seed`), each a block of its targets in
    a random order, run by `executor`. Budgets (`spend`) are checked before each block,
    so a block is never split. The stopping record is stored whenever the answers
    change. `skip` (workload -> {target: why}) leaves the plan's trials not run out of every
    block. Returns (trials that succeeded, failed or not run), once the executor has
    noted its lost targets, also when a signal or an error ends the rounds."""
    try:
        _rounds(executor, controller, spend, workloads, targets, seed, skip)
    finally:
        counts = executor.finish()
    return counts


def _rounds(
    executor: RoundExecutor,
    controller: Controller,
    spend: Spend,
    workloads: tuple[Workload, ...],
    targets: list[str],
    seed: int,
    skip: Mapping[str, Mapping[str, str]] | None,
) -> None:
    store, run_id, lost, progress = executor.store, executor.run_id, executor.lost, executor.progress
    seconds = spend.seconds

    def on_change() -> None:
        store.set_stopping(run_id, stopping_record(controller, spend))

    metric_of = {a.question.workload: a.question.metric for a in controller.answers}
    rng = random.Random(seed)
    block = rounds = trials = 0
    first_round: dict[str, float] = {}  # seconds each workload's block took in round 1
    while True:
        samples, sample_rounds = primary_samples(store, run_id, metric_of)
        controller.review(rounds, samples, set(lost), sample_rounds)
        if rounds == 1:
            fit = fit_minimum_rounds(
                controller.rule,
                first_round,
                {w.name: (family(w), direction(w)) for w in workloads},
                seconds(),
            )
            if fit is not None:
                workloads = _refit(fit, controller, workloads, rounds)
                note = fit_note(fit, controller.rule)
                store.add_note(run_id, note)
                progress.say(note)
        on_change()
        # Every target gets the first min_repeats rounds (all of a fixed
        # count) even when a lost target closed every question early.
        if controller.done and rounds >= controller.rule.min_repeats:
            return
        limit = controller.rule.max_time
        left = None if limit is None else max(0.0, limit - seconds())
        # the trials the time left has room for, at the pace so far
        capacity = None if left is None or not trials else left / (seconds() / trials)
        blocks = round_blocks(rng, workloads, targets, controller.needed(rounds, capacity), skip)
        progress.add_trials(sum(len(names) for _w, names in blocks))
        progress.round_started(rounds + 1, left)
        for w, names in blocks:
            reason = spend.over(controller.rule)
            # The first round runs whole, whatever the clock: it is what the run learns
            # its pace from (fit_minimum_rounds). The byte budget still binds: it is wear.
            if reason is StopReason.MAX_TIME and rounds == 0:
                reason = None
            if reason is not None:
                samples, sample_rounds = primary_samples(store, run_id, metric_of)
                controller.exhaust(reason, rounds, samples, set(lost), sample_rounds)
                on_change()
                return
            started = seconds()
            block = executor.run_block(w, names, rounds, block)
            if rounds == 0:
                first_round[w.name] = seconds() - started
            trials += len(names)
        rounds += 1


def _refit(
    fit: Fit, controller: Controller, workloads: tuple[Workload, ...], rounds: int
) -> tuple[Workload, ...]:
    """Apply what the first round showed: a longer budget, or fewer workloads."""
    if fit.extended_to is not None:
        controller.rule = replace(controller.rule, max_time=fit.extended_to)
    controller.drop(set(fit.dropped), rounds)
    return tuple(w for w in workloads if w.name not in fit.dropped)


def fit_note(fit: Fit, rule: Stopping) -> str:
    """What the first round showed of the time budget, and what the run did, in one sentence."""
    left = format_duration(max(fit.left, 0))
    pace = (
        f"at the first round's pace the {rule.min_repeats} rounds every target needs take "
        f"{format_duration(fit.needed)} more, and {left} of the time budget is left"
    )
    if fit.extended_to is not None:
        return f"{pace}: the budget is extended to {format_duration(fit.extended_to)} (--overrun extend)"
    if not fit.dropped:
        return (
            f"{pace}, and no workload can be dropped without losing a kind of work's reads or writes: "
            "the budget will stop "
            "some comparisons short of their minimum (more time: --max-time, or --overrun extend)"
        )
    drop = (
        f"dropped {', '.join(fit.dropped)} "
        "(the slowest of the kind of work that had the most; each kind keeps its reads and its writes)"
    )
    if fit.fits:
        return f"{pace}: {drop} to fit (--overrun extend keeps them and takes longer)"
    return (
        f"{pace}: {drop}, and even so the budget will stop some comparisons short of their minimum "
        "(more time: --max-time, or --overrun extend)"
    )


def workload_seeds(seed: int, workloads: Sequence[Workload]) -> dict[str, int]:
    """Each workload's own seed (fio's random offsets, an app's inputs), from the run's."""
    return {w.name: (seed + i) % 2**32 for i, w in enumerate(workloads)}


def stopping_record(controller: Controller, spend: Spend) -> JsonObject:
    """What decided how many trials ran, as the store keeps it (the document's `stopping`)."""
    return {
        "rule": controller.rule.to_json(),
        "answers": controller.to_json(),
        "stopped_by": None if controller.stopped_by is None else str(controller.stopped_by),
        "bytes_written": spend.bytes(),
        "bytes_source": "device" if spend.device_start is not None else "workloads",
        "seconds": spend.seconds(),
    }
