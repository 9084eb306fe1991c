"""The suite's noting of signals (tests/support/self_signals.py): a test's own signal
is never taken for one sent to stop the suite, one from outside always is."""

from __future__ import annotations

import os
import signal

import pytest

from cryptbench.machine.interrupts import interruptible
from cryptbench.model.errors import Interrupted
from tests.support import self_signals


def test_a_second_session_in_one_process_still_tells_a_tests_own_signal() -> None:
    """mutmut runs two pytest sessions in one process: installed twice, every signal
    was noted twice, a test's own then foreign, and the suite stopped."""
    self_signals.install()
    with pytest.raises(Interrupted), interruptible():
        self_signals.send_self(signal.SIGTERM)
    assert self_signals.foreign() is None


def test_a_signal_the_test_did_not_send_is_foreign() -> None:
    try:
        with pytest.raises(Interrupted), interruptible():
            os.kill(os.getpid(), signal.SIGINT)
        assert self_signals.foreign() == signal.SIGINT
    finally:
        self_signals.install()  # as a new session starts (and so the suite goes on)
    assert self_signals.foreign() is None
