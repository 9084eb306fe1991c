"""The inner half of tests/unit/support/test_lanes.py, which runs these two in a pytest of their
own under SCHED_IDLE (the name keeps them out of every other collection)."""

from __future__ import annotations

import os

import pytest


@pytest.mark.timed
def test_inner_timed() -> None:
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_inner_untimed() -> None:
    assert os.sched_getscheduler(0) == os.SCHED_IDLE
