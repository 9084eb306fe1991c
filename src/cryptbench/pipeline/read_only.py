"""What `run --existing` does alike on a dm-crypt volume (pipeline/existing.py) and on a
FUSE mount (pipeline/existing_fuse.py): two targets that are only read, their rows in the
store, their trials interleaved until the controller has its answers, and the run opened
in the store and the session as any run is (pipeline/execute.in_session)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Protocol

from cryptbench.backends.base import DirectIO, Target
from cryptbench.engines.fio import probe_ioengine
from cryptbench.machine.interrupts import interruptible
from cryptbench.machine.session import Session
from cryptbench.measure.device import disks_of
from cryptbench.model.json_types import JsonObject
from cryptbench.model.result import TargetInfo
from cryptbench.model.stack import Stack
from cryptbench.model.vocabulary import Medium
from cryptbench.pipeline.execute import Executed, Stored, in_session
from cryptbench.planning.questions import RankingGroups
from cryptbench.planning.suite import Suite
from cryptbench.stats.stopping import Question, StoppingRule
from cryptbench.store.database import Store
from cryptbench.trial.allocator import Controller
from cryptbench.trial.context import Progress, TrialContext, TrialSpec
from cryptbench.trial.runner import TrialJob, run_job
from cryptbench.trial.schedule import OneAtATime, Spend, interleave


class ReadPlan(Protocol):
    """What both plans of run --existing (planning/existing.py, planning/existing_fuse.py)
    hold, read-only (both are frozen dataclasses)."""

    @property
    def suite(self) -> Suite: ...

    @property
    def target_dir(self) -> Path: ...

    @property
    def rule(self) -> StoppingRule: ...

    @property
    def seed(self) -> int: ...

    @property
    def db_path(self) -> Path: ...

    @property
    def ioengine(self) -> str | None: ...

    @property
    def notes(self) -> tuple[str, ...]: ...

    @property
    def questions(self) -> tuple[Question, ...]: ...

    @property
    def ranking(self) -> RankingGroups | None: ...

    @property
    def targets(self) -> tuple[str, ...]: ...

    def to_json(self) -> JsonObject: ...


@dataclass(frozen=True)
class Reading:
    """How a run --existing reads its targets, for the store and the trials."""

    stack: Stack  # the stack under the user's data: its disks are the device counted
    targets: dict[str, Target]
    verified: bool  # the encrypted view's bytes are not the other's (the proof here)
    io_mode: str  # "direct" or "buffered"
    direct_io: DirectIO
    how: str  # how both are read, in words, for the target's record
    not_verified: str  # the note stored where `verified` is False
    size: int  # bytes a trial reads of each view


class ReadOnlyExecutor(OneAtATime):
    """Runs each trial as the read-only fio job `job` makes for it, and counts them."""

    def __init__(self, ctx: TrialContext, targets: dict[str, Target], progress: Progress) -> None:
        self.ctx, self.targets, self.progress = ctx, targets, progress
        self.ok = self.failed = 0
        self.lost: dict[str, str] = {}  # RoundExecutor's; none kept here: a lost target raises out of run_job

    def job(self, spec: TrialSpec) -> TrialJob:
        raise NotImplementedError

    def run(self, spec: TrialSpec) -> bool:
        success = run_job(self.ctx, spec, self.targets[spec.target], self.job(spec))
        self.ok += success
        self.failed += not success
        self.progress.trial_done(spec, success)
        return success

    def finish(self) -> tuple[int, int]:
        return self.ok, self.failed


def target_row(t: Target, io_mode: str, how: str) -> TargetInfo:
    """A target of run --existing as the store keeps it (`how`: how it is read, in words)."""
    return TargetInfo(
        name=t.name,
        backend=t.backend,
        baseline=t.baseline,
        encrypted=t.encrypted,
        io_mode=io_mode,
        direct_io=str(t.direct_io),
        direct_io_reason=how,
        marker_in_backing=None,
        encryption_verified=t.encryption_verified,
        details=dict(t.details),
        medium=Medium.DEVICE,
    )


def measure_reads(
    plan: ReadPlan,
    reading: Reading,
    executor: Callable[[TrialContext], ReadOnlyExecutor],
    store: Store,
    progress: Progress,
    session: Session,
    run_id: int,
    env: JsonObject,
) -> tuple[int, int]:
    """The trials of `plan`, interleaved until the controller has its answers: the engine
    probed, both targets stored, the disks under the user's data counted."""
    # the counters are the disks' under the user's data, not the scratch space's
    device = disks_of(reading.stack)
    env["scratch_device"] = device
    progress.phase("reading the ioengine fio can use")
    engine = probe_ioengine(session.path("ioengine-probe"), session, plan.ioengine)
    env["ioengine"] = engine
    store.update_environment(run_id, env)
    for t in reading.targets.values():
        t.direct_io, t.encryption_verified = reading.direct_io, reading.verified if t.encrypted else None
        store.insert_target(run_id, target_row(t, reading.io_mode, reading.how))
    if not reading.verified:
        store.add_note(run_id, reading.not_verified)
    ctx = TrialContext(session, store, run_id, reading.size, engine, False, device=device or None)
    controller = Controller(plan.rule, plan.questions, plan.seed, plan.ranking)
    # what the trials wrote counts (none): the disk's own counter counts the user's writes too
    spend = Spend(replace(ctx, device=None), set())
    return interleave(executor(ctx), controller, spend, plan.suite.workloads, list(plan.targets), plan.seed)


def run_reads(
    plan: ReadPlan,
    said: str,
    measure: Callable[[Store, Progress, Session, int, JsonObject], tuple[int, int]],
    progress: Progress,
    registry: Path | None,
) -> Executed:
    """The run of `plan` opened in its store and session as any run; `said`: the line
    that names what is read, shown before the first trial; `measure` is given the store and
    `progress`, then what in_session gives it."""
    store = Store.open(plan.db_path)
    try:
        with interruptible():
            stored = Stored(
                plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, (), False
            )
            progress.phase(said)
            return in_session(stored, store, progress, partial(measure, store, progress), registry)
    finally:
        store.close()
