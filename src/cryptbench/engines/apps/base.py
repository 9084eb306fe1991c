"""Application workloads: real tasks (an import, a copy, a mail thread) timed
phase by phase, beside fio's synthetic patterns.

Each workload is a frozen dataclass holding its suite parameters, with four
steps the runner calls:

- `make_inputs`: once per run, outside every target and outside the clock
  (a memory card of photos, a tarball): the same bytes for every target;
- `setup`: before each trial, outside the clock, what must already be on the
  target (a mail store, a folder to copy); idempotent, since a stateful target
  may have been made anew since the last trial;
- `run`: the timed phases; between them the runner's `settle` writes back and
  drops the caches (outside the phase clocks), so no phase reads what the one
  before left in memory;
- `clean`: after the trial, outside the clock, removes what the trial wrote.

Writes are made durable inside each phase's clock with `durable()`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from cryptbench.machine.session import Session
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo

if TYPE_CHECKING:
    from cryptbench.engines.command_process import Sandbox

INPUTS_DONE = ".complete"  # marker: an input directory was written whole


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float  # wall time of the phase
    bytes: int  # bytes the phase read and wrote through the target (or copied into it)
    items: int  # units of the workload's natural measure (pictures, files, transactions)


@dataclass(frozen=True)
class AppResult:
    phases: tuple[Phase, ...]
    items: int  # the task's count in its natural unit (photos, files, messages, transactions)
    details: JsonObject = field(default_factory=dict)  # counts and sizes, stored as the trial's output
    # figures measured beside the phases, by catalog name in the catalog's unit
    # (responsiveness: probe.lat_p99 in seconds); stored as the trial's metrics
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.phases)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.phases)

    def to_json(self) -> JsonObject:
        return {
            "phases": [
                {"name": p.name, "seconds": p.seconds, "bytes": p.bytes, "items": p.items}
                for p in self.phases
            ],
            "items": self.items,
            "details": self.details,
            **({"figures": self.figures} if self.figures else {}),
        }


@dataclass
class AppEnv:
    """Where one trial of an application workload works."""

    root: Path  # the workload's own directory on the target
    inputs: Path  # the workload's inputs, outside every target, shared by all of them
    staging: Path  # a directory outside the targets, on the scratch filesystem
    size: int  # bytes: --size, the data the workload moves
    seed: int  # the workload's seed: the same inputs on every target
    settle: Callable[[], None]  # write back and drop caches; between phases, outside the clock
    trial: int = 1  # the trial's repeat, from 1: names a trial's files as a study named them
    # the run's session: a command a workload runs (tar, dd) is journaled in it
    # (engines/child.py), so `cleanup` can stop it after a SIGKILL; None in unit tests
    session: Session | None = None
    # where a workload that runs the user's commands (runs_commands) runs them for this
    # trial; the runner makes it and ends what is left in it when the trial ends
    sandbox: Sandbox | None = None


class PhaseClock:
    """Times named phases; a phase's bytes and items are counted while it runs."""

    def __init__(self) -> None:
        self.phases: list[Phase] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[PhaseCount]:
        count = PhaseCount()
        start = time.perf_counter()
        yield count
        self.phases.append(Phase(name, time.perf_counter() - start, count.bytes, count.items))


@dataclass
class PhaseCount:
    bytes: int = 0  # bytes moved so far in the phase
    items: int = 0  # natural units done so far


def durable() -> None:
    """Make every write so far durable, through every layer of the target.

    `sync()` twice: the first pass writes a FUSE filesystem's dirty pages to
    its daemon, which writes them into the filesystem below, possibly after
    that one was synced; the second pass makes those durable. A loop device
    passes the flush of the filesystem on it down to its backing file itself.
    """
    os.sync()
    os.sync()


class AppWorkload(ABC):
    """An application workload, as a suite names it; subclasses are frozen dataclasses."""

    app: ClassVar[str]  # the name suites use: app = "photo-import"
    writes: ClassVar[bool]  # writes to the target (a stateful target is made anew first)
    primary: ClassVar[str]  # the metric comparisons use
    rate_metric: ClassVar[str | None] = None  # the natural unit, per phase too (pictures_per_minute)
    runs_commands: ClassVar[bool] = False  # runs the user's shell commands: needs AppEnv.sandbox
    summary: ClassVar[str]  # one line for `cryptbench suites`, help and docs
    # The figures it reports that no other engine does (its rate, its commands' CPU), each
    # with its unit, direction and label; engines/metric_catalog.py gathers them.
    metrics: ClassVar[tuple[MetricInfo, ...]] = ()
    # Parts of a trial that are not phases of its task but run beside it, and how their
    # figures are labelled ("probe" -> "the probe's": probe.lat_p99 is "the probe's p99 …").
    beside: ClassVar[dict[str, str]] = {}

    name: str  # the workload's name in its suite

    @property
    def is_write(self) -> bool:
        return self.writes

    @property
    def cold(self) -> bool:
        """The caches are dropped before the clock starts (a warm-cache workload keeps them)."""
        return True

    @classmethod
    @abstractmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> AppWorkload:
        """The workload with its parameters from a suite table; UsageError if wrong."""

    def min_size(self) -> int:
        """The smallest --size (bytes) the workload can run with."""
        return 1 << 20

    def target_bytes(self, size: int) -> int:
        """Bytes the workload may have on a target at once, for the free-space check."""
        return size

    def input_bytes(self, size: int) -> int:
        """Bytes of inputs and staging outside the targets."""
        return 0

    def make_inputs(self, env: AppEnv) -> None:  # noqa: B027 (not every workload has inputs)
        """The inputs outside the targets, once per run; idempotent."""

    def setup(self, env: AppEnv) -> None:  # noqa: B027 (most workloads need nothing on the target)
        """What must be on the target before the clock starts; idempotent."""

    @abstractmethod
    def run(self, env: AppEnv) -> AppResult: ...

    @abstractmethod
    def clean(self, env: AppEnv) -> None:
        """Remove what the trial wrote; outside the clock."""

    def describe(self, size: int) -> JsonObject:
        """The trial's parameters as stored with each trial (its 'job file')."""
        return {"app": self.app, "name": self.name, "size": size}


def inputs_ready(folder: Path) -> bool:
    return (folder / INPUTS_DONE).exists()


def mark_inputs_ready(folder: Path) -> None:
    (folder / INPUTS_DONE).write_text("")


def remove_tree(path: Path) -> None:
    """Delete a directory tree the workload wrote, and sync the deletion."""
    if path.exists():
        shutil.rmtree(path)
        os.sync()
