"""What every part of a trial shares: the run's context (its session, store and sizes
asked), what sizing decided (`Sizing`) and how much one fio trial does, decided from it in
one place (`TrialContext.trial_size`, from `Sizing.trial_size`; calibration and layout ask
for their own); a trial's place
in the run, the targets, and progress."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.planning.suite import Workload, WorkloadSpec
from cryptbench.store.database import Store

DATA_FILE = "cryptbench.dat"
# Where a write that makes a new file writes, on a target not made anew before it: beside
# the data file the reads read, which then stays as laid out (file_name).
WRITE_FILE = "cryptbench-write.dat"


@dataclass(frozen=True)
class TrialSpec:
    seq: int  # position in the run
    block: int  # interleaving block: one (repeat, workload), every target once
    repeat: int
    workload: Workload
    target: str


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
    """What every trial of a run shares, built once before the first of them: its session,
    store and run, the size asked and how fio writes. What sizing finds after (a grown
    data file, passes, a time cap) is a `Sizing` of its own."""

    session: Session
    store: Store
    run_id: int
    size: int  # bytes of the data file asked for (--size, a study's, or the default)
    ioengine: str
    zero_data: bool
    write_new_file: bool = False  # write trials write a new file instead of overwriting
    device: str | None = None  # the block device under the scratch space (vda), for its write counter

    def writes_new_files(self, target: Target) -> bool:
        """Whether a write trial on `target` makes a new file: in a run whose writes all do
        (the suite's write_new_file, or a backend that writes only from a file's start), and
        on a target made anew before each write (a disk image's state)."""
        return self.write_new_file or target.state is not None

    def makes_new_file(self, workload: Workload, target: Target) -> bool:
        return workload.is_write and self.writes_new_files(target)

    def trial_size(self, sizing: Sizing, workload: WorkloadSpec, target: Target, direct: bool) -> TrialSize:
        """A measured trial's size on `target`: what `sizing` decided, and whether this run
        makes the trial write a new file."""
        return sizing.trial_size(workload, direct, self.makes_new_file(workload, target))


@dataclass(frozen=True)
class Sizing:
    """How much the run's fio trials do, as trial/sizing.py decided it before the first
    round (`Sizing(size)`: as asked, before it decided anything), and each trial's size
    decided from it in one place (`trial_size`; calibration and layout ask for their own)."""

    file_bytes: int  # bytes of fio's data file on each target: as asked, or grown (sizing.grow)
    # fio workload -> passes over the data file per trial, where a trial may make
    # several; calibrated before the first round (sizing.calibrate)
    passes: Mapping[str, int] = field(default_factory=dict)
    # fio workload -> bytes a pass moves, where fewer than the data file (a slow
    # workload over a file grown for a fast one)
    moved: Mapping[str, int] = field(default_factory=dict)
    # seconds of I/O after which fio stops a trial (runtime=: its passes or this, whichever
    # ends first), so that a slow target's trial lasts no longer than a fast one's by more
    # than sizing.TRIAL_CAP; None: no cap (--trial-time 0, one whole pass)
    time_cap: float | None = None

    def pass_bytes(self, workload: str) -> int:
        """Bytes one pass of `workload` moves: the data file, or fewer where sizing said so."""
        return self.moved.get(workload, self.file_bytes)

    def trial_size(self, workload: WorkloadSpec, direct: bool, new_file: bool) -> TrialSize:
        """A measured trial's size (`new_file`: TrialContext.makes_new_file). Several passes
        only with direct I/O, as calibrated: a buffered second pass would be served from the
        page cache; and a write that makes a new file measures a first write, which a second
        pass would turn into a rewrite."""
        passes = self.passes.get(workload.name, 1) if direct and not new_file else 1
        return TrialSize(
            direct, new_file, passes, self.file_bytes, self.moved.get(workload.name), self.time_cap
        )

    def calibration_size(
        self, workload: WorkloadSpec, direct: bool, passes: int, time_limit: float | None
    ) -> TrialSize:
        """A calibration run's size: over the laid-out file, `passes` of it, stopped at `time_limit`."""
        return TrialSize(direct, False, passes, self.file_bytes, self.moved.get(workload.name), time_limit)

    def layout_size(self, direct: bool) -> TrialSize:
        """The layout's: one pass writing the whole data file."""
        return TrialSize(direct, False, 1, self.file_bytes, None, None)


@dataclass(frozen=True)
class TrialSize:
    """How much one fio trial does; the job file (trial/runner.trial_job) takes it as it is."""

    direct: bool  # O_DIRECT: the page cache left out
    new_file: bool  # a write makes a new data file rather than overwriting the laid-out one
    passes: int  # count: passes over the data file (fio's loops)
    file_bytes: int  # bytes: the data file's size
    io_size: int | None  # bytes a pass moves where fewer than the file; None: the whole file
    time_limit: float | None  # seconds of I/O after which fio stops the job; None: its passes end it


def file_name(target: Target, new_file: bool) -> str:
    """The file a trial's job names: the data file, but a file of its own for a write that
    makes a new file on a target that is not made anew before it (a run whose writes all
    make one), so that the data file the reads read is laid out once, not after every
    write. On a target made anew (a disk image's state) the write's file is the data file."""
    return WRITE_FILE if new_file and target.state is None else DATA_FILE


class Targets(Protocol):
    """The provisioned targets, by name, and how to make a stateful one anew."""

    def __getitem__(self, name: str) -> Target: ...
    def reset(self, name: str) -> Target: ...
    def lay_out(self, target: Target, ctx: TrialContext, sizing: Sizing) -> None: ...
