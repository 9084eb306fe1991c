"""One way into a run's session and one way out, shared by run (and selftest), serve,
fleet and cipher's RAM stack.

In: the scratch lock and the session are made while SIGINT/SIGTERM wait, so a
signal finds something to tear down; then what crashed runs left on the scratch
is recovered. Out, on every way (done, an error, SIGINT/SIGTERM): the session is
closed with the signals held to its end, a signal that came during teardown is
taken (not raised) and reported, and the caller's `finish` runs inside that same
held section, so a run's final status is stored before a late signal can cut in.

An `Interrupted` raised in the block is kept in `interrupted` and not raised
further: teardown has run, and the caller says what it means (a run stores what it
finished; cipher raises it again).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from cryptbench.machine.interrupts import signals_blocked, take_pending
from cryptbench.machine.session import Session
from cryptbench.model.errors import Interrupted
from cryptbench.model.vocabulary import RunStatus
from cryptbench.pipeline.provision import recover_stale
from cryptbench.trial.context import NullProgress, Progress


class Lifecycle:
    def __init__(
        self, progress: Progress | None = None, finish: Callable[[Lifecycle], None] | None = None
    ) -> None:
        self.progress = progress or NullProgress()
        self._finish = finish
        self.session: Session | None = None
        self.recovered: list[str] = []  # what crashed runs left on the scratch, removed
        self.interrupted: Interrupted | None = None  # the signal that ended the block early
        self.late: int | None = None  # the number of a signal that arrived during teardown

    def open(self, target_dir: Path, registry: Path | None = None, *, recover: bool = True) -> Session:
        """The session, its scratch lock taken first: a second run must not recover (or
        disturb) anything. A signal meanwhile waits until the session exists."""
        with signals_blocked():
            self.session = Session.create(target_dir, registry)
        if recover:
            self.recovered = recover_stale([target_dir], registry)
        return self.session

    def __enter__(self) -> Lifecycle:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if isinstance(error, Interrupted):
            self.interrupted = error  # before teardown: `finish` reads it
        # Teardown holds SIGINT/SIGTERM to its end, whenever they arrive.
        with signals_blocked():
            try:
                if self.session is not None:
                    self.progress.phase("tearing down")
                    self.session.close()
            finally:
                self.late = take_pending()
                if self._finish is not None:
                    self._finish(self)
        return self.interrupted is not None

    def status(self, completed: bool) -> RunStatus:
        """The status a run stores: interrupted, else complete or failed."""
        if self.interrupted is not None:
            return RunStatus.INTERRUPTED
        return RunStatus.COMPLETE if completed else RunStatus.FAILED

    def last_signal(self) -> int | None:
        """The signal the exit status reports: the later one when two came."""
        if self.late is not None:
            return self.late
        return self.interrupted.signum if self.interrupted is not None else None

    def exit_code(self, otherwise: int) -> int:
        """128 + the last signal's number, or `otherwise` when no signal came."""
        signum = self.last_signal()
        return otherwise if signum is None else 128 + signum
