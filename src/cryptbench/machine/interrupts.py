"""SIGINT and SIGTERM: when they may interrupt a run, and when they must wait.

A run turns the first SIGINT/SIGTERM into `Interrupted`, which unwinds the
stack so that teardown runs; later ones are ignored so that they cannot cut
teardown short. Sections that must not be torn in half (a database
transaction, releasing a resource and journaling it, teardown itself) hold
the signals until they end.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

from cryptbench.model.errors import Interrupted

SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})

# Masking the signals is not enough on its own: a signal sent to the process
# goes to any thread that does not mask it (Rich's refresh thread, say), and
# CPython then runs the Python handler in the main thread whatever its mask.
# So the handler also checks whether the main thread is inside a held section,
# and if so only records the signal, to be raised when the section ends.
_depth = 0  # nesting of signals_blocked() sections
_pending: int | None = None  # a signal recorded while held
_fired = False  # Interrupted was raised once; later signals are ignored


def _raise_pending() -> None:
    global _pending, _fired
    if _depth == 0 and _pending is not None and not _fired:
        signum, _pending = _pending, None
        _fired = True
        raise Interrupted(signum)


@contextlib.contextmanager
def signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends (nested blocks keep them held)."""
    global _depth
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    _depth += 1
    try:
        yield
    finally:
        # Unmasked while still held: a handler CPython delayed (another thread took the
        # signal, and the main thread runs it only at its next check, which this call
        # makes) records the signal instead of raising past the section's end.
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        _depth -= 1
        _raise_pending()


@contextlib.contextmanager
def mask_lifted() -> Iterator[None]:
    """Inside a held section, lift the thread's signal mask while a child is started.

    A child inherits the mask: fio's server started under a held SIGTERM
    ignores every later SIGTERM (it was stopped only by the SIGKILL after
    five seconds). The held section's flag still defers a SIGINT/SIGTERM that
    arrives meanwhile to the end of the section.
    """
    assert _depth > 0, "only inside signals_blocked(), whose flag defers the signals"
    old = signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def take_pending() -> int | None:
    """Consume a SIGINT/SIGTERM held by `signals_blocked`; its number, or None.

    Call inside the held section: the signal is taken without raising, so the
    caller decides what it means (e.g. "arrived during teardown").
    """
    global _pending
    # Runs a handler CPython delayed (see signals_blocked), so that it records here: a
    # signal that came during teardown is taken by teardown, not raised after it.
    signal.pthread_sigmask(signal.SIG_BLOCK, ())
    signum, _pending = _pending, None
    masked = signal.sigpending() & SIGNALS
    if masked:
        info = signal.sigtimedwait(masked, 0)
        if info is not None and signum is None:
            signum = info.si_signo
    return signum


def _handler(signum: int, frame: FrameType | None) -> None:
    global _pending, _fired
    if _fired:
        return
    if _depth > 0:
        if _pending is None:
            _pending = signum
        return
    _fired = True
    raise Interrupted(signum)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT/SIGTERM raise Interrupted once (at once, or when a held section
    ends); later ones are ignored so that they cannot cut teardown short."""
    global _pending, _fired
    _pending, _fired = None, False
    old = {s: signal.signal(s, _handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
