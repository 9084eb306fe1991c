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

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.bar.stop()

    def phase(self, text: str) -> None:
        if self.task is None:
            self.console.print(f"[dim]{text}…[/dim]")

    def start_trials(self, total: int) -> None:
        self.task = self.bar.add_task("trials", total=total)

    def trial_done(self, spec: TrialSpec, ok: bool) -> None:
        if not ok:
            self.failed += 1
        if self.task is not None:
            failed = f", [red]{self.failed} failed[/red]" if self.failed else ""
            self.bar.update(
                self.task, advance=1, description=f"{spec.workload.name} on {spec.target}{failed}"
            )
