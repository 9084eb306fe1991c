"""The kernel lab's harness against a real guest that dies mid-test: the test
must be reported failed, and the lab as a whole too, though every line the
guest wrote before it died says "passed"."""

# Its guest, a second Debian kernel under qemu's TCG (this VM's KVM cannot run one), boots
# when the session's tests begin, beside the lab's (the `guest` marker): in the fresh-clone
# run of 9229b03 the test found it finished and took 0.002 s, against 164 s when it booted
# in its turn (c16f9d0). Alone it waits for the whole boot, about a minute.
from __future__ import annotations

import pytest

from tests.support import kernel_lab
from tests.support.reliability import count

VICTIM = "tests/harness/guest_dies.py::test_the_guest_powers_off_mid_test"

pytestmark = pytest.mark.integration


@pytest.mark.guest(VICTIM)
def test_a_guest_powered_off_mid_test_fails_the_test_and_the_lab(request: pytest.FixtureRequest) -> None:
    kernel_lab.need_lab()
    lab = kernel_lab.own_guest(request.config, [VICTIM])
    print(lab.summary())
    got = lab.outcomes.get(VICTIM)
    assert got is not None, f"the setup phase never arrived; console:\n{lab.console[-3000:]}"
    assert got.phases == {"setup": "passed"}, got.phases  # the call began and never reported
    assert got.outcome == "failed" and "phases reported: setup)" in got.report
    assert lab.returncode is not None and lab.pytest_exit is None
    assert "never reported pytest's exit" in (lab.failure() or "")
    count("lab guests powered off mid-test, reported failed (tests/harness/guest_dies.py)")
