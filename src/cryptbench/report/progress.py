"""Progress on stderr with Rich: the current phase, then a bar with ETA over trials."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from cryptbench.runner import TrialSpec


class RichProgress:
    def __init__(self, console: Console) -> None:
        self.console = console
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
            self.bar.start()
            self.started = True

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.started:
            self.bar.stop()

    def phase(self, text: str) -> None:
        self._start()
        if self.task is None:
            self.console.print(f"[dim]{text}…[/dim]")

    def add_trials(self, count: int) -> None:
        """More trials to run: all of them for a fixed count, a round at a time when adaptive."""
        self._start()
        self.total += count
        if self.task is None:
            self.task = self.bar.add_task("trials", total=self.total)
        else:
            self.bar.update(self.task, total=self.total)

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
        if not ok:
            self.failed += 1
        if self.task is not None:
            failed = f", [red]{self.failed} failed[/red]" if self.failed else ""
            self.bar.update(
                self.task, advance=1, description=f"{spec.workload.name} on {spec.target}{failed}"
            )
