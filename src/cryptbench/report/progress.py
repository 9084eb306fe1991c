"""Progress on stderr with Rich: the current phase, then a bar with ETA over trials.

Where stderr is not a terminal (a pipe, `| tee run.log`, CI), Rich draws no
bar, so a plain line is printed instead at the start of each round and at
least once a minute: trials done, planned so far, and the time budget left."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from cryptbench.model.units import format_duration
from cryptbench.trial.context import TrialSpec

LINE_EVERY = 60.0  # seconds between plain progress lines within a long round


class RichProgress:
    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.lines = not console.is_terminal  # plain lines instead of a bar
        self.done = 0  # trials finished, failed ones included
        self.round = 0
        self.seconds_left: float | None = None  # of the time budget, at the round's start
        self.last_line = 0.0
        self.round_clock = 0.0
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self.task: TaskID | None = None
        self.failed = 0
        self.total = 0  # trials announced so far
        self.started = False

    def _start(self) -> None:
        # Only once there is something to show: a run refused at planning
        # prints its one error line and nothing else.
        if not self.started:
            if not self.lines:  # a bar Rich cannot draw would only leave a blank line
                self.bar.start()
            self.started = True

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.started and not self.lines:
            self.bar.stop()

    def phase(self, text: str) -> None:
        self._start()
        if self.task is None:
            # soft_wrap: a log keeps each line whole; a terminal wraps it itself
            self.console.print(f"[dim]{text}…[/dim]", soft_wrap=True)

    def say(self, text: str) -> None:
        """A line the user must read now, whatever is showing (above the bar, if one is)."""
        self._start()
        self.console.print(f"[yellow]note[/yellow]: {text}", soft_wrap=True)

    def add_trials(self, count: int) -> None:
        """More trials to run: all of them for a fixed count, a round at a time when adaptive."""
        self._start()
        self.total += count
        if self.task is None:
            self.task = self.bar.add_task("trials", total=self.total)
        else:
            self.bar.update(self.task, total=self.total)

    def round_started(self, number: int, seconds_left: float | None) -> None:
        self.round, self.seconds_left = number, seconds_left
        self.round_clock = self.clock()
        self._line()

    def _line(self) -> None:
        if not self.lines:
            return
        self.last_line = self.clock()
        failed = f" ({self.failed} failed)" if self.failed else ""
        left = None if self.seconds_left is None else self.seconds_left - (self.last_line - self.round_clock)
        budget = "" if left is None else f"; {format_duration(max(0.0, left))} of the time budget left"
        self.console.print(
            f"trials: round {self.round}, {self.done} done{failed} of {self.total} planned so far{budget}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
        self.done += 1
        if not ok:
            self.failed += 1
        if self.lines and self.clock() - self.last_line >= LINE_EVERY:
            self._line()
        if self.task is not None:
            failed = f", [red]{self.failed} failed[/red]" if self.failed else ""
            self.bar.update(
                self.task, advance=1, description=f"{spec.workload.name} on {spec.target}{failed}"
            )
