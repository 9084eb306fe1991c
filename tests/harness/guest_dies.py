"""A guest test that powers its guest off mid-call: the kernel lab's harness test
(tests/integration/test_kernel_lab_harness.py) boots it to check that such a test,
whose setup reported but whose call never did, is reported as failed.

Not named test_*.py, so pytest collects it only when named on its command line.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support import kernel_lab


def in_a_lab_guest() -> bool:
    # Two signs, so that no host ever powers itself off by running this file.
    return kernel_lab.IN_GUEST and "virtme" in Path("/proc/cmdline").read_text()


def test_the_guest_powers_off_mid_test() -> None:
    if not in_a_lab_guest():
        pytest.skip("runs only inside the kernel lab's guest: it powers the machine off")
    Path("/proc/sysrq-trigger").write_text("o")  # power off now, as a panic or the OOM killer would end it
    time.sleep(120)
