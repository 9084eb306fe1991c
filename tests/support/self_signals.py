"""A test's own SIGINT/SIGTERM told from one sent to the suite.

While a test runs cryptbench in this process, cryptbench's handler (machine/interrupts.py)
takes SIGINT and SIGTERM: a run tears down and returns 130 or 143. A signal meant for
the suite (Ctrl-C, a CI job's time limit, a session's end) then stopped only that run,
and the suite went on to its next test. So every signal cryptbench's handler takes is
noted here, as is each the suite's own handler takes (conftest._unwind: cryptbench's
main turns the KeyboardInterrupt it raises into exit status 130), bar those a test
sent itself through send_self(); conftest.py stops the suite after the test in which
one was noted (tests/integration/test_suite_signals.py).
"""

from __future__ import annotations

import signal
import threading
from collections import Counter
from types import FrameType

from cryptbench.machine import interrupts
from cryptbench.pipeline import lifecycle

_expected: Counter[int] = Counter()  # signals a test sent itself, not yet taken
_foreign: list[int] = []  # signals from outside, taken by cryptbench's handler
_noted = 0  # signals noted so far: take_pending's wrapper tells whether a handler ran within it
_installed = False  # whether install() has wrapped cryptbench's handler


def expect(sig: int) -> None:
    """A test is about to hand `sig` to cryptbench's handler itself: not the suite's."""
    _expected[sig] += 1


def send_self(sig: int) -> None:
    """Send `sig` to the main thread as a test of cryptbench's handling, not to stop the suite.

    To the main thread, not the process: a signal sent to the process goes to any thread
    that does not mask it, so inside a held section (main thread masked) a thread an
    earlier test left running took it, and CPython ran the handler in the main thread at
    a later check, after the section and interruptible() had ended: the test's own
    signal then reached the suite's handler as a KeyboardInterrupt (seen once in a full
    run of test_lifecycle). Sent to the main thread it stays pending there until taken.
    That a handler run late is still taken by teardown has its own test, which
    simulates it (test_lifecycle)."""
    expect(sig)
    main = threading.main_thread().ident
    assert main is not None
    signal.pthread_kill(main, sig)


def note(signum: int) -> None:
    """A SIGINT/SIGTERM taken: the test's own, or one to stop the suite."""
    global _noted
    _noted += 1
    if _expected[signum] > 0:
        _expected[signum] -= 1
    else:
        _foreign.append(signum)


def install() -> None:
    """Note each signal cryptbench takes: by its handler, or (held until teardown's
    end, with no other thread to run the handler) by take_pending's sigtimedwait.
    Once per process: a second pytest session in it (mutmut runs one for its statistics,
    then another) would otherwise note every signal twice, a test's own then foreign."""
    global _installed
    _expected.clear()
    _foreign.clear()
    if _installed:
        return
    _installed = True
    handler, take = interrupts._handler, interrupts.take_pending

    def noting_handler(signum: int, frame: FrameType | None) -> None:
        note(signum)
        handler(signum, frame)

    def noting_take() -> int | None:
        # noted already if the handler recorded it, before or during take_pending
        held, noted = interrupts._pending, _noted
        signum = take()
        if held is None and _noted == noted and signum is not None:
            note(signum)  # taken by sigtimedwait, no handler ran
        return signum

    interrupts._handler = noting_handler
    interrupts.take_pending = noting_take
    lifecycle.take_pending = noting_take


def foreign() -> int | None:
    """The first signal from outside that cryptbench took, or None."""
    return _foreign[0] if _foreign else None
