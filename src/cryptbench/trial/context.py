"""What every part of a trial shares: the run's context (its session, store, sizes and
calibration), a trial's place in the run, the targets, and progress."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cryptbench.backends.base import Target
from cryptbench.machine.session import Session
from cryptbench.planning.suite import Workload
from cryptbench.store.database import Store

DATA_FILE = "cryptbench.dat"
# Where a write that makes a new file writes, on a target not made anew before it: beside
# the data file the reads read, which then stays as laid out (amount.file_name).
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
    session: Session
    store: Store
    run_id: int
    size: int  # bytes
    ioengine: str
    zero_data: bool
    write_new_file: bool = False  # write trials write a new file instead of overwriting
    device: str | None = None  # the block device under the scratch space (vda), for its write counter
    # fio workload -> passes over the data file per trial, where a trial may make
    # several (trial_passes); calibrated before the first round (trial/sizing.py)
    passes: Mapping[str, int] = field(default_factory=dict)
    # bytes of fio's data file where it grew past `size` so that buffered trials last
    # the trial time (sizing.grow); 0: `size`
    data_size: int = 0
    # fio workload -> bytes a pass moves, where fewer than the data file (a slow
    # workload over a file grown for a fast one)
    moved: Mapping[str, int] = field(default_factory=dict)
    # seconds of I/O after which fio stops a trial (runtime=: its passes or this, whichever
    # ends first), so that a slow target's trial lasts no longer than a fast one's by more
    # than sizing.TRIAL_CAP; None: no cap (--trial-time 0, one whole pass)
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
