"""pipeline/lifecycle.py with a real session in a temporary directory: teardown on every
way out, the signal that ended the block kept, one that came during teardown taken and
reported, and the caller's `finish` run inside the held section with both known."""

from __future__ import annotations

import signal
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace

import pytest

from cryptbench.machine import interrupts
from cryptbench.machine.interrupts import interruptible
from cryptbench.model.errors import UsageError
from cryptbench.pipeline.lifecycle import Lifecycle
from tests.support.self_signals import expect, send_self


class Seen:
    """What `finish` saw: (interrupted signal, late signal, whether the run directory was gone)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int | None, int | None, bool]] = []
        self.run_dir: Path | None = None

    def __call__(self, life: Lifecycle) -> None:
        gone = self.run_dir is not None and not self.run_dir.exists()
        self.calls.append((life.interrupted and life.interrupted.signum, life.late, gone))


def test_a_block_that_ends_well_is_torn_down_then_finished(tmp_path: Path) -> None:
    seen = Seen()
    with Lifecycle(finish=seen) as life:
        session = life.open(tmp_path, tmp_path / "reg")
        seen.run_dir = session.run_dir
        assert session.run_dir.is_dir()
    assert seen.calls == [(None, None, True)] and life.interrupted is None and life.late is None


def test_a_signal_in_the_block_is_kept_not_raised_and_teardown_runs(tmp_path: Path) -> None:
    seen = Seen()
    with interruptible(), Lifecycle(finish=seen) as life:
        seen.run_dir = life.open(tmp_path, tmp_path / "reg").run_dir
        send_self(signal.SIGTERM)
        raise AssertionError("the signal should have ended the block")  # pragma: no cover
    assert life.interrupted is not None and life.interrupted.signum == signal.SIGTERM
    assert seen.calls == [(signal.SIGTERM, None, True)]


def test_an_error_goes_on_after_teardown_and_finish(tmp_path: Path) -> None:
    seen = Seen()
    with pytest.raises(UsageError, match="bad"), Lifecycle(finish=seen) as life:
        seen.run_dir = life.open(tmp_path, tmp_path / "reg").run_dir
        raise UsageError("bad")
    assert seen.calls == [(None, None, True)]


def test_a_signal_during_teardown_is_taken_and_reported_not_raised(tmp_path: Path) -> None:
    seen = Seen()
    with interruptible(), Lifecycle(finish=seen) as life:
        session = life.open(tmp_path, tmp_path / "reg")
        seen.run_dir = session.run_dir
        close = session.close

        def close_while_signalled() -> None:
            send_self(signal.SIGINT)  # held: teardown goes on to its end
            close()

        session.close = close_while_signalled  # type: ignore[method-assign]
    assert life.interrupted is None and life.late == signal.SIGINT
    assert seen.calls == [(None, signal.SIGINT, True)]


def test_a_signal_before_the_session_exists_leaves_nothing_to_tear_down(tmp_path: Path) -> None:
    seen = Seen()
    with interruptible(), Lifecycle(finish=seen) as life:
        send_self(signal.SIGINT)
        life.open(tmp_path, tmp_path / "reg")  # pragma: no cover
    assert life.session is None and seen.calls == [(signal.SIGINT, None, False)]
    assert not any(tmp_path.rglob("run-*"))


def test_status_and_exit_code_say_what_ended_the_block(tmp_path: Path) -> None:
    with Lifecycle() as done:
        done.open(tmp_path, tmp_path / "reg")
    assert (done.status(True), done.status(False), done.exit_code(1)) == ("complete", "failed", 1)
    with interruptible(), Lifecycle() as stopped:
        stopped.open(tmp_path, tmp_path / "reg")
        send_self(signal.SIGTERM)
    assert stopped.status(True) == "interrupted"
    assert stopped.exit_code(0) == 128 + signal.SIGTERM


def test_a_signal_during_teardown_decides_the_exit_code_not_the_status(tmp_path: Path) -> None:
    # The trials were done and stored; the exit status still tells a script of the signal.
    with interruptible(), Lifecycle() as life:
        session = life.open(tmp_path, tmp_path / "reg")
        close = session.close

        def close_while_signalled() -> None:
            send_self(signal.SIGINT)
            close()

        session.close = close_while_signalled  # type: ignore[method-assign]
    assert life.status(True) == "complete" and life.last_signal() == signal.SIGINT
    assert life.exit_code(0) == 128 + signal.SIGINT


def test_a_handler_cpython_ran_late_is_still_taken_by_teardown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal another thread took has its Python handler run by the main thread at its
    next check, which may be the unmask at the end of teardown's held section: it was
    then raised past teardown (an Interrupted out of a finished run) instead of taken.
    The late handler is simulated at each mask call, where CPython runs it."""
    late: list[int] = []

    def sigmask(how: int, mask: Iterable[int]) -> set[int]:
        old = signal.pthread_sigmask(how, mask)
        if late:
            interrupts._handler(late.pop(), None)
        return old

    fake = SimpleNamespace(**{n: getattr(signal, n) for n in dir(signal) if not n.startswith("_")})
    fake.pthread_sigmask = sigmask
    monkeypatch.setattr(interrupts, "signal", fake)  # interrupts' own, not every thread's
    with interruptible(), Lifecycle() as life:
        session = life.open(tmp_path, tmp_path / "reg")
        close = session.close

        def close_while_signalled() -> None:
            close()
            expect(signal.SIGINT)
            late.append(signal.SIGINT)  # tripped during teardown, its handler not yet run

        session.close = close_while_signalled  # type: ignore[method-assign]
    assert life.late == signal.SIGINT and life.status(True) == "complete"
