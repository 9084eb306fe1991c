"""How much one fio trial does, decided in one place: whether its write makes a new file,
its passes over the data file, the file's size, the bytes a pass moves and when fio stops
it. `of` decides a trial's from the run's context (the plan's size and write mode, and
what calibration found, trial/sizing.py); calibration and layout make their own, and
the job file (trial/runner.trial_job) takes the record as it is."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.backends.base import Target
from cryptbench.planning.suite import Workload, WorkloadSpec
from cryptbench.trial.context import DATA_FILE, WRITE_FILE, TrialContext


@dataclass(frozen=True)
class TrialSize:
    direct: bool  # O_DIRECT: the page cache left out
    new_file: bool  # a write makes a new data file rather than overwriting the laid-out one
    passes: int  # count: passes over the data file (fio's loops)
    file_bytes: int  # bytes: the data file's size
    io_size: int | None  # bytes a pass moves where fewer than the file; None: the whole file
    time_limit: float | None  # seconds of I/O after which fio stops the job; None: its passes end it


def writes_new_files(ctx: TrialContext, target: Target) -> bool:
    """Whether a write trial on `target` makes a new file: in a run whose writes all do
    (the suite's write_new_file, or a backend that writes only from a file's start), and
    on a target made anew before each write (a disk image's state)."""
    return ctx.write_new_file or target.state is not None


def makes_new_file(ctx: TrialContext, workload: Workload, target: Target) -> bool:
    return workload.is_write and writes_new_files(ctx, target)


def file_name(target: Target, new_file: bool) -> str:
    """The file a trial's job names: the data file, but a file of its own for a write that
    makes a new file on a target that is not made anew before it (a run whose writes all
    make one), so that the data file the reads read is laid out once, not after every
    write. On a target made anew (a disk image's state) the write's file is the data file."""
    return WRITE_FILE if new_file and target.state is None else DATA_FILE


def of(ctx: TrialContext, workload: WorkloadSpec, target: Target, direct: bool) -> TrialSize:
    """A measured trial's size. Several passes only with direct I/O, as calibrated: a
    buffered second pass would be served from the page cache; and a write that makes a
    new file measures a first write, which a second pass would turn into a rewrite."""
    new_file = makes_new_file(ctx, workload, target)
    passes = ctx.passes.get(workload.name, 1) if direct and not new_file else 1
    return TrialSize(direct, new_file, passes, ctx.file_bytes, ctx.moved.get(workload.name), ctx.time_cap)


def calibrating(
    ctx: TrialContext, workload: WorkloadSpec, direct: bool, passes: int, time_limit: float | None
) -> TrialSize:
    """A calibration run's size: over the laid-out file, `passes` of it, stopped at `time_limit`."""
    return TrialSize(direct, False, passes, ctx.file_bytes, ctx.moved.get(workload.name), time_limit)


def whole_file(ctx: TrialContext, direct: bool) -> TrialSize:
    """The layout's: one pass writing the whole data file."""
    return TrialSize(direct, False, 1, ctx.file_bytes, None, None)


def pass_bytes(ctx: TrialContext, workload: str) -> int:
    """Bytes one pass of `workload` moves: the data file, or fewer where sizing said so."""
    return ctx.moved.get(workload, ctx.file_bytes)
