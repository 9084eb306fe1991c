"""Running one trial: its job sized and written, its target prepared, fio or the task
run under the meters, its figures stored.

State: a target whose state is controlled (disk images: `fresh` or
`rewrite`) is made anew before each of its write trials, outside the clock;
and in suites that write new files, the old data file is deleted (and the
deletion synced) before a write trial. A read trial whose data file is missing
or short (its write failed) gets it laid out again first.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Protocol, TypeVar

from cryptbench.backends.base import Target, cache_files, iter_files
from cryptbench.engines.apps import AppEnv, AppResult, AppWorkload
from cryptbench.engines.command_process import Sandbox, cgroup_root
from cryptbench.engines.fio import FioMeasurement, parse_fio_json, run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine.session import Session
from cryptbench.measure import cpu, cpu_timeline
from cryptbench.measure.cache import make_cold, resident_bytes
from cryptbench.measure.device import bytes_read, bytes_written
from cryptbench.model.errors import CryptbenchError, DiskFull, TargetLost, TrialError, UsageError
from cryptbench.model.vocabulary import TrialStatus
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.store.database import TrialRecord, now_iso
from cryptbench.trial.context import (
    DATA_FILE,
    Sizing,
    Targets,
    TrialContext,
    TrialSize,
    TrialSpec,
    file_name,
)
from cryptbench.trial.figures import app_metrics, trial_metrics

T = TypeVar("T")


def job_options(ctx: TrialContext, target: Target, seed: int, sized: TrialSize) -> JobOptions:
    """A job's options on `target`, of the size `sized`."""
    name = file_name(target, sized.new_file)
    return JobOptions(
        filename=ctx.session.check_inside(target.path / name),
        size=sized.file_bytes,
        direct=sized.direct,
        ioengine=ctx.ioengine,
        zero_data=ctx.zero_data,
        seed=seed,
        new_file=sized.new_file,
        passes=sized.passes,
        io_size=sized.io_size,
        time_limit=sized.time_limit,
    )


class FioRunner(Protocol):
    """Runs one job file and returns fio's JSON text (engines/fio.run_fio, or a test's fake)."""

    def __call__(
        self,
        jobfile: Path,
        session: Session | None = None,
        *,
        readonly: bool = False,
        cgroup: Path | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> str: ...


@dataclass(frozen=True)
class TrialJob:
    text: str  # the fio job file
    filename: Path  # the file it reads or writes: the data file, or its ciphertext
    fio: FioRunner  # what runs it: read-only for the ciphertext, in the target's cgroup


def trial_job(
    ctx: TrialContext, workload: WorkloadSpec, target: Target, sized: TrialSize, seed: int, fio: FioRunner
) -> TrialJob:
    """The job a trial of `workload` on `target` runs, of the size `sized`, and how to run it."""
    opts = job_options(ctx, target, seed, sized)
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


def prepare(ctx: TrialContext, sizing: Sizing, spec: TrialSpec, targets: Targets) -> Target:
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
    if ctx.makes_new_file(spec.workload, target):
        made = ctx.session.check_inside(target.path / file_name(target, True))
        if made.exists():  # the last write's: this one writes it anew
            made.unlink()
            os.sync()  # the freed blocks are the filesystem's again before the clock starts
    elif not spec.workload.is_write:
        datafile = ctx.session.check_inside(target.path / DATA_FILE)
        try:
            short = datafile.stat().st_size < sizing.file_bytes
        except FileNotFoundError:
            short = True
        if short:
            try:
                targets.lay_out(target, ctx, sizing)
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
        row.cache_method = make_cold(target, files)
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
    row.status, row.error = TrialStatus.FAILED, str(e)
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
    sized: TrialSize,
    workload_seed: int,
    fio: FioRunner = run_fio,
) -> bool:
    """Run one trial, `sized` (TrialContext.trial_size), and store it at once, failed or not.
    Returns success.

    Raises TargetLost (after storing the failed trial) when the target's
    helper died, and DiskFull when the target filesystem filled up.
    """
    assert isinstance(spec.workload, WorkloadSpec)
    job = trial_job(ctx, spec.workload, target, sized, workload_seed, fio)
    return run_job(ctx, spec, target, job)


def run_job(ctx: TrialContext, spec: TrialSpec, target: Target, job: TrialJob) -> bool:
    """Run one trial's fio job under the meters and store it at once, failed or not
    (run_trial's, and run --existing's, whose jobs read a user's devices). Returns success;
    raises as run_trial does."""
    row = _trial_row(spec, target, job.text)
    try:
        try:
            lost = target_lost(target, "before this trial")
            if lost:
                raise TargetLost(lost)
            jobfile = ctx.session.path("jobs", f"{spec.seq:05d}-{spec.workload.name}-{target.name}.fio")
            jobfile.parent.mkdir(exist_ok=True)
            jobfile.write_text(job.text)
            end_write = target.end_write if spec.workload.is_write else None
            (raw, synced), meters = _measure(
                ctx,
                target,
                cache_files(target, job.filename),
                row,
                "fio",
                lambda: _fio_then_end(job, jobfile, ctx.session, end_write),
            )
        except OSError as e:  # the scratch filesystem full, a FUSE mount gone, …
            raise TrialError(_why(e)) from None
        row.raw_output = raw
        measurement = durable(parse_fio_json(raw), synced)
    except TrialError as e:
        _store_failure(ctx, spec, target, row, e)
        return False
    row.status = TrialStatus.OK
    metrics = trial_metrics(measurement, meters.cpu, meters.device_written, synced, meters.device_read)
    ctx.store.insert_trial(ctx.run_id, row, metrics)
    return True


def _fio_then_end(
    job: TrialJob, jobfile: Path, session: Session, end_write: Callable[[], None] | None
) -> tuple[str, float | None]:
    """fio's JSON, then the seconds the durable end of a write took where its fsync was not
    that end (Target.end_write: ZFS's zpool sync; a sync of the backing rclone's fsync did
    not reach, which in a trial only this target writes); None where there was none."""
    raw = job.fio(jobfile, session)
    if end_write is None:
        return raw, None
    started = time.perf_counter()
    end_write()
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
        # A generator: as root make_cold never reads it, so no tree is walked.
        make_cold(target, chain(target.cached, iter_files((root, inputs, staging, *target.backing))))

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
    row.status = TrialStatus.OK
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
