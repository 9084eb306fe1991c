"""A request's sizes, durations and percentages in bytes, seconds and fractions, parsed
once where its plan begins (`run_quantities`, `stopping_quantities`), each refusal in
one line naming its flag; every helper below a planner takes the numbers, none parses
the request's text again."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from cryptbench.model.errors import UsageError
from cryptbench.model.units import format_bytes, format_duration, parse_duration, parse_percent, parse_size
from cryptbench.planning.suite import check_size_range

DEFAULT_PRECISION = "5%"
PRECISION_RANGE = (0.1, 50.0)  # percent
# the precision an adaptive run asks for when --precision does not, as a fraction
DEFAULT_PRECISION_FRACTION = parse_percent(
    DEFAULT_PRECISION, what="--precision", low=PRECISION_RANGE[0], high=PRECISION_RANGE[1]
)
# Within this much of no change, a whole interval is "no measurable cost" and two
# targets are "equal": the user would not notice, and more trials would not change it.
DEFAULT_EQUIVALENCE = "3%"
EQUIVALENCE_RANGE = (0.1, 50.0)  # percent

# Each fio trial lasts at least this much I/O where passes can make it
# (trial/sizing.py); the environment variable sets the default, 0 turns it off.
DEFAULT_TRIAL_TIME = "1s"
TRIAL_TIME_VARIABLE = "CRYPTBENCH_TRIAL_TIME"
MAX_TRIAL_TIME = 600.0  # seconds: a longer trial is a soak test, not a trial


class AsksStopping(Protocol):
    """The stopping flags of a request (RunRequest, a fleet's FleetRequest), as typed."""

    @property
    def repeats(self) -> int | None: ...
    @property
    def precision(self) -> str | None: ...
    @property
    def equivalence(self) -> str | None: ...
    @property
    def overrun(self) -> str: ...
    @property
    def min_repeats(self) -> int | None: ...
    @property
    def max_repeats(self) -> int | None: ...
    @property
    def max_time(self) -> str | None: ...


class AsksRun(AsksStopping, Protocol):
    """A run's request (RunRequest), as typed: the stopping flags and its sizes."""

    @property
    def size(self) -> str | None: ...
    @property
    def max_bytes(self) -> str | None: ...
    @property
    def trial_time(self) -> str | None: ...


@dataclass(frozen=True)
class Quantities:
    """What a request's text asked, in units."""

    precision: float | None  # a fraction (0.05): the interval's half-width asked; None: not given
    equivalence: float  # a fraction (0.03): --equivalence, else DEFAULT_EQUIVALENCE
    max_time: float | None  # seconds of trials at most; None: not given
    size: int | None = None  # bytes of the data file (or the region read) asked; None: not given
    max_bytes: int | None = None  # bytes the run may write, more than 0; None: not given
    trial_time: float = 0.0  # seconds of I/O a trial lasts at least; 0: one pass


def stopping_quantities(r: AsksStopping) -> Quantities:
    """The stopping flags' percentages and duration."""
    low, high = PRECISION_RANGE
    precision = None
    if r.precision is not None:
        precision = parse_percent(r.precision, what="--precision", low=low, high=high)
    low, high = EQUIVALENCE_RANGE
    margin = r.equivalence or DEFAULT_EQUIVALENCE
    equivalence = parse_percent(margin, what="--equivalence", low=low, high=high)
    max_time = parse_duration(r.max_time, what="--max-time") if r.max_time is not None else None
    return Quantities(precision, equivalence, max_time)


def run_quantities(r: AsksRun) -> Quantities:
    """A run's: the stopping flags', then --size, --max-bytes and the trial time."""
    q = stopping_quantities(r)
    size = None
    if r.size is not None:
        size = parse_size(r.size, what="--size")
    max_bytes = None
    if r.max_bytes is not None:
        max_bytes = parse_size(r.max_bytes, what="--max-bytes")
        if max_bytes <= 0:
            raise UsageError("--max-bytes must be more than zero")
    return Quantities(q.precision, q.equivalence, q.max_time, size, max_bytes, trial_seconds(r.trial_time))


def checked_size(size: int) -> None:
    """--size for a run that provisions targets: within the data file's range."""
    check_size_range(size, f"--size {format_bytes(size)}")


def trial_seconds(text: str | None) -> float:
    """--trial-time (`text`) in seconds: as given, else from the environment, else the
    default; 0 allowed."""
    if text is not None:
        what = "--trial-time"
    else:
        text, what = os.environ.get(TRIAL_TIME_VARIABLE, DEFAULT_TRIAL_TIME), TRIAL_TIME_VARIABLE
    if text.strip() in ("0", "0s"):
        return 0.0
    seconds = parse_duration(text, what=what)
    if seconds > MAX_TRIAL_TIME:
        raise UsageError(f"{what} {text[:40]} is longer than {format_duration(MAX_TRIAL_TIME)}")
    return seconds
