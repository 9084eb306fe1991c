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

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Protocol, TypeVar

from cryptbench.backends.base import Target, cache_files, iter_files
from cryptbench.engines.apps import AppEnv, AppWorkload
from cryptbench.engines.fio import parse_fio_json, run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.errors import CryptbenchError, DiskFull, TargetLost, TrialError
from cryptbench.measure import cpu
from cryptbench.measure.cache import drop_caches, resident_bytes
from cryptbench.measure.device import bytes_written
from cryptbench.metrics import app_metrics, trial_metrics
from cryptbench.session import Session
from cryptbench.store import Store, now_iso
from cryptbench.suite import Workload, WorkloadSpec

DATA_FILE = "cryptbench.dat"
T = TypeVar("T")


@dataclass(frozen=True)
class TrialSpec:
    seq: int  # position in the run
    block: int  # interleaving block: one (repeat, workload), every target once
    repeat: int
    workload: Workload
    target: str


def schedule(workloads: tuple[Workload, ...], targets: list[str], repeats: int, seed: int) -> list[TrialSpec]:
    rng = random.Random(seed)
    trials: list[TrialSpec] = []
    block = 0
    for repeat in range(repeats):
        order = list(workloads)
        rng.shuffle(order)
        for w in order:
            names = list(targets)
            rng.shuffle(names)
            for name in names:
                trials.append(TrialSpec(len(trials), block, repeat, w, name))
            block += 1
    return trials


class Progress(Protocol):
    def phase(self, text: str) -> None: ...
    def start_trials(self, total: int) -> None: ...
    def trial_done(self, spec: TrialSpec, ok: bool) -> None: ...


class NullProgress:
    def phase(self, text: str) -> None:
        pass

    def start_trials(self, total: int) -> None:
        pass

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
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


class Targets(Protocol):
    """The provisioned targets, by name, and how to make a stateful one anew."""

    def __getitem__(self, name: str) -> Target: ...
    def reset(self, name: str) -> Target: ...
    def lay_out(self, target: Target) -> None: ...


def job_options(
    ctx: TrialContext, target: Target, direct: bool, seed: int, new_file: bool = False
) -> JobOptions:
    return JobOptions(
        filename=ctx.session.check_inside(target.path / DATA_FILE),
        size=ctx.size,
        direct=direct,
        ioengine=ctx.ioengine,
        zero_data=ctx.zero_data,
        seed=seed,
        new_file=new_file,
    )


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
            short = datafile.stat().st_size < ctx.size
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


def _measure(
    ctx: TrialContext,
    target: Target,
    files: list[Path],
    row: dict[str, object],
    what: str,
    work: Callable[[], T],
) -> tuple[T, Meters]:
    """Drop caches, then do `work` (fio, or an app's task) between CPU and
    device-counter snapshots.

    A failure while a helper of the target died is the target's loss, not the trial's.
    """
    row["cache_method"] = str(drop_caches(files))
    # What is still resident now would be served from memory: record it.
    row["cache_resident_bytes"] = resident_bytes(files)
    written = bytes_written(ctx.device)
    before = cpu.snapshot(target.helpers)
    try:
        out = work()
    except (TrialError, OSError) as e:
        lost = target_lost(target, "during this trial")
        if lost:
            raise TargetLost(f"{lost} ({what}: {_why(e) if isinstance(e, OSError) else e})") from None
        raise
    after = cpu.snapshot(target.helpers)
    written_after = bytes_written(ctx.device)
    lost = target_lost(target, "during this trial")
    if lost:
        raise TargetLost(lost)
    device = None if written is None or written_after is None else written_after - written
    return out, Meters(cpu.usage(before, after), device)


def _trial_row(spec: TrialSpec, target: Target, job: str) -> dict[str, object]:
    return {
        "seq": spec.seq,
        "block": spec.block,
        "repeat": spec.repeat,
        "workload": spec.workload.name,
        "target": target.name,
        "started_at": now_iso(),
        "job_file": job,
    }


def _store_failure(
    ctx: TrialContext, spec: TrialSpec, target: Target, row: dict[str, object], e: TrialError
) -> None:
    """Store the failed trial; raise DiskFull if the target filled up, TargetLost again if lost."""
    row.update(status="failed", error=str(e))
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
    fio: Callable[[Path, Session], str] = run_fio,
) -> bool:
    """Run one trial and store it at once, failed or not. Returns success.

    Raises TargetLost (after storing the failed trial) when the target's
    helper died, and DiskFull when the target filesystem filled up.
    """
    assert isinstance(spec.workload, WorkloadSpec)
    opts = job_options(ctx, target, direct, workload_seed, writes_new_file(ctx, spec, target))
    if spec.workload.view == "backing":
        opts = replace(opts, filename=backing_file(ctx.session, target))
        fio = partial(fio, readonly=True)
    job_text = render_job(spec.workload, opts)
    row = _trial_row(spec, target, job_text)
    try:
        try:
            lost = target_lost(target, "before this trial")
            if lost:
                raise TargetLost(lost)
            jobfile = ctx.session.path("jobs", f"{spec.seq:05d}-{spec.workload.name}-{target.name}.fio")
            jobfile.parent.mkdir(exist_ok=True)
            jobfile.write_text(job_text)
            raw, meters = _measure(
                ctx, target, cache_files(target, opts.filename), row, "fio", lambda: fio(jobfile, ctx.session)
            )
        except OSError as e:  # the scratch filesystem full, a FUSE mount gone, …
            raise TrialError(_why(e)) from None
        row["raw_output"] = raw
        measurement = parse_fio_json(raw)
    except TrialError as e:
        _store_failure(ctx, spec, target, row, e)
        return False
    row["status"] = "ok"
    ctx.store.insert_trial(ctx.run_id, row, trial_metrics(measurement, meters.cpu, meters.device_written))
    return True


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
    task's phases. Raises TargetLost and DiskFull like run_trial.
    """
    workload = spec.workload
    assert isinstance(workload, AppWorkload)
    env = app_env(ctx, workload, target, workload_seed, spec.repeat + 1)
    row = _trial_row(spec, target, json.dumps(workload.describe(ctx.size), sort_keys=True))
    try:
        try:
            lost = target_lost(target, "before this trial")
            if lost:
                raise TargetLost(lost)
            env.root.mkdir(parents=True, exist_ok=True)
            env.staging.mkdir(parents=True, exist_ok=True)
            workload.setup(env)
            files = cache_files(target, *iter_files((env.root, env.inputs)))
            result, meters = _measure(ctx, target, files, row, workload.name, lambda: workload.run(env))
            workload.clean(env)
        except OSError as e:  # the target full, a FUSE mount gone, …
            raise TrialError(_why(e)) from None
    except TrialError as e:
        _store_failure(ctx, spec, target, row, e)
        try:
            workload.clean(env)  # what a failed trial wrote must not fill the next
        except OSError as clean_error:
            raise TargetLost(
                f"{target.name}: could not clean up after a failed trial: {clean_error}"
            ) from None
        return False
    row["status"] = "ok"
    row["raw_output"] = json.dumps(result.to_json(), sort_keys=True)
    ctx.store.insert_trial(ctx.run_id, row, app_metrics(workload, result, meters.cpu, meters.device_written))
    return True


def run_all(
    ctx: TrialContext,
    trials: list[TrialSpec],
    targets: Targets,
    direct: dict[str, bool],
    workload_seeds: dict[str, int],
    progress: Progress,
) -> tuple[int, int]:
    """Run every trial in order; return (succeeded, failed or not run).

    A lost target's remaining trials are not run (they would fail the same
    way); the other targets go on.
    """
    ok = failed = 0
    lost: dict[str, str] = {}
    skipped: dict[str, int] = {}
    progress.start_trials(len(trials))
    for spec in trials:
        if spec.target in lost:
            skipped[spec.target] = skipped.get(spec.target, 0) + 1
            success = False
        else:
            try:
                target = prepare(ctx, spec, targets)
                seed = workload_seeds[spec.workload.name]
                if isinstance(spec.workload, AppWorkload):
                    success = run_app_trial(ctx, spec, target, seed)
                else:
                    success = run_trial(ctx, spec, target, direct[target.name], seed)
            except TargetLost as e:
                lost[spec.target] = str(e)
                success = False
        ok += success
        failed += not success
        progress.trial_done(spec, success)
    for name, why in lost.items():
        ctx.store.add_note(ctx.run_id, f"{why}: its {skipped.get(name, 0)} remaining trial(s) were not run")
    return ok, failed
