"""The kernel lab's stand-ins (tests/support/kernel_lab.py, tests/support/lab_plugin.py) in a pytest of
their own, each of their branches: a guest whose tests passed, failed, skipped or never
reported; a lab that could not boot; a guest stopped at the time limit, dead before
pytest's last line, or panicking after it; and CRYPTBENCH_REQUIRE_LAB turning a skip
into a failure. The guest's boot is replaced by the LabRun it would have produced (a
real guest that powers off mid-test: tests/integration/test_kernel_lab_harness.py)."""

from __future__ import annotations

import time

import pytest

from tests.support import kernel_lab

TESTS = """
import pytest

pytestmark = pytest.mark.lab

def test_passes(): raise AssertionError("a stand-in never runs its test on the host")
def test_fails(): raise AssertionError("a stand-in never runs its test on the host")
def test_skips(): raise AssertionError("a stand-in never runs its test on the host")
def test_silent(): raise AssertionError("a stand-in never runs its test on the host")
"""
PASSED = {"setup": "passed", "call": "passed", "teardown": "passed"}


def _outcome(phases: dict[str, str], report: str = "") -> kernel_lab.Outcome:
    o = kernel_lab.Outcome(report=report, phases=dict(phases), seconds=1.0)
    o.settle()
    return o


def _guest(returncode: int | None = 0, pytest_exit: int | None = 0) -> kernel_lab.LabRun:
    """A guest in which test_passes passed, test_fails failed, test_skips skipped and
    test_silent never reported."""
    return kernel_lab.LabRun(
        kernel="/boot/vmlinuz-test",
        accel="tcg",
        accel_reason="forced",
        returncode=returncode,
        pytest_exit=pytest_exit,
        console="lab: 6.1.0-test\nthe console's last line",
        outcomes={
            "test_inner.py::test_passes": _outcome(PASSED),
            "test_inner.py::test_fails": _outcome(
                {**PASSED, "call": "failed"}, "[call] AssertionError: dm-crypt table lacks no_read_workqueue"
            ),
            "test_inner.py::test_skips": _outcome(
                {"setup": "skipped", "teardown": "passed"}, "Skipped: no adiantum module"
            ),
        },
    )


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["tests.support.lab_plugin"]')
    pytester.makepyfile(test_inner=TESTS)
    monkeypatch.setattr(kernel_lab, "REQUIRE", False)
    return pytester


def _boots(
    monkeypatch: pytest.MonkeyPatch, lab: kernel_lab.LabRun, kernels: dict[str, list[str]] | None = None
) -> list[list[str]]:
    """Boots replaced by `lab`; the node ids each boot ran, and in `kernels`, by kernel."""
    calls: list[list[str]] = []

    def boot(ids: list[str], resident: bool = True, name: str = "6.1") -> kernel_lab.LabRun:
        calls.append(list(ids))
        if kernels is not None:
            kernels[name] = list(ids)
        return lab

    monkeypatch.setattr(kernel_lab, "boot", boot)
    return calls


def test_each_stand_in_takes_its_guest_tests_outcome(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _boots(monkeypatch, _guest())
    result = inner.runpytest("-rA")
    # the lab as a whole passed too: pytest exited 0 in the guest, and vng after it
    result.assert_outcomes(passed=2, failed=2, skipped=1)
    assert calls == [[f"test_inner.py::test_{n}" for n in ("passes", "fails", "skips", "silent")]]  # one boot
    out = result.stdout.str()
    assert "in the kernel lab (vmlinuz-test, TCG):" in out and "lacks no_read_workqueue" in out
    assert "no result from the kernel lab (vng exit 0); console:" in out and "the console's last line" in out
    result.stdout.fnmatch_lines(
        ["SKIPPED*in the kernel lab (vmlinuz-test, TCG): Skipped: no adiantum module*"]
    )
    assert "a stand-in never runs its test on the host" not in out
    assert "PASSED test_inner.py::test_passes[6.1]" in out and "PASSED ::kernel-lab[6.1]" in out


ON_KERNELS = """
import pytest

@pytest.mark.lab("6.1", "6.12")
def test_both(): raise AssertionError("never on the host")

@pytest.mark.lab("6.12")
@pytest.mark.parametrize("x", ["a"])
def test_new(x): raise AssertionError("never on the host")

@pytest.mark.lab
def test_default(): raise AssertionError("never on the host")
"""


def _kernels(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Boots replaced by a guest in which every test of ON_KERNELS passed; the node ids
    each kernel's boot ran, by kernel."""
    kernels: dict[str, list[str]] = {}
    names = ("test_both", "test_new[a]", "test_default")
    outcomes = {f"test_kernels.py::{n}": _outcome(PASSED) for n in names}
    guest = kernel_lab.LabRun(kernel="/boot/vmlinuz-test", returncode=0, pytest_exit=0, outcomes=outcomes)
    _boots(monkeypatch, guest, kernels)
    return kernels


def test_each_test_runs_in_the_guest_of_each_kernel_its_marker_names(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernels = _kernels(monkeypatch)
    result = inner.runpytest(str(inner.makepyfile(test_kernels=ON_KERNELS)), "-rA")
    assert kernels == {
        "6.1": [
            "test_kernels.py::test_both",
            "test_kernels.py::test_default",
        ],  # a bare `lab`: DEFAULT_KERNELS
        "6.12": ["test_kernels.py::test_both", "test_kernels.py::test_new[a]"],
    }
    result.assert_outcomes(passed=6)  # four stand-ins, and each kernel's lab as a whole
    passed = [line.split()[1] for line in result.stdout.lines if line.startswith("PASSED ")]
    assert passed == [
        *("test_kernels.py::test_both[6.1]", "test_kernels.py::test_default[6.1]"),
        *("test_kernels.py::test_both[6.12]", "test_kernels.py::test_new[a-6.12]"),
        *("::kernel-lab[6.1]", "::kernel-lab[6.12]"),
    ]


def test_a_kernel_picked_by_its_name_in_brackets_boots_that_kernel_alone(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernels = _kernels(monkeypatch)
    result = inner.runpytest(str(inner.makepyfile(test_kernels=ON_KERNELS)), "-rA", "-k", "6.12]")
    assert kernels == {"6.12": ["test_kernels.py::test_both", "test_kernels.py::test_new[a]"]}
    result.assert_outcomes(passed=3, deselected=2)  # and no whole lab for 6.1, which did not boot
    assert "::kernel-lab[6.1]" not in result.stdout.str()


def test_one_kernels_guest_boots_after_the_others_has_ended(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two emulated guests at once take the CPU the host's tests need: the next kernel's
    boot begins only when the one before it has ended, in KERNELS' order."""
    events: list[str] = []
    names = ("test_both", "test_new[a]", "test_default")
    guest = kernel_lab.LabRun(
        kernel="/boot/vmlinuz-test", returncode=0, pytest_exit=0,
        outcomes={f"test_kernels.py::{n}": _outcome(PASSED) for n in names},
    )  # fmt: skip

    def boot(ids: list[str], resident: bool = True, name: str = "6.1") -> kernel_lab.LabRun:
        events.append(f"{name} begins")
        time.sleep(0.2 if name == "6.1" else 0)  # the first takes longer, yet the second waits
        events.append(f"{name} ends")
        return guest

    monkeypatch.setattr(kernel_lab, "boot", boot)
    result = inner.runpytest(str(inner.makepyfile(test_kernels=ON_KERNELS)))
    result.assert_outcomes(passed=6)
    assert events == ["6.1 begins", "6.1 ends", "6.12 begins", "6.12 ends"]


def test_a_boot_still_waiting_when_the_session_stops_never_begins() -> None:
    first = kernel_lab.Background([], series="6.1")
    waiting = kernel_lab.Background([], series="6.12", after=first)
    waiting.thread.start()
    waiting.cancelled = True  # as stop() marks every boot before it ends the running ones
    first.done.set()
    assert waiting.done.wait(timeout=10)
    assert waiting.result().unavailable == "the session ended before this kernel booted"


def test_a_lab_marker_naming_an_unknown_kernel_is_a_usage_error(inner: pytest.Pytester) -> None:
    tests = inner.makepyfile(test_unknown="import pytest\n@pytest.mark.lab('5.10')\ndef test_x(): pass\n")
    result = inner.runpytest(str(tests))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_unknown.py::test_x: no lab kernel 5.10 (known: 6.1, 6.12)*"])


def test_where_the_lab_must_run_a_skip_inside_it_fails(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_lab, "REQUIRE", True)
    _boots(monkeypatch, _guest())
    result = inner.runpytest("-k", "skips or passes")
    result.assert_outcomes(passed=2, failed=1, deselected=2)
    result.stdout.fnmatch_lines(["*skipped in the kernel lab (vmlinuz-test, TCG), where it must run*"])


@pytest.mark.parametrize("require", [False, True])
def test_a_lab_that_cannot_boot_skips_each_test_or_fails_it_where_it_must_run(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, require: bool
) -> None:
    monkeypatch.setattr(kernel_lab, "REQUIRE", require)
    _boots(monkeypatch, kernel_lab.LabRun(unavailable="qemu-system-x86_64 is not installed"))
    result = inner.runpytest("-rA")
    if require:
        result.assert_outcomes(failed=5)
        result.stdout.fnmatch_lines(["*the kernel lab could not run: qemu-system-x86_64 is not installed*"])
    else:
        result.assert_outcomes(skipped=5)
        result.stdout.fnmatch_lines(["*kernel lab unavailable: qemu-system-x86_64 is not installed*"])


@pytest.mark.parametrize(
    ("returncode", "pytest_exit", "why"),
    [
        (None, 0, "the lab was stopped at its time limit"),
        (0, None, "the guest never reported pytest's exit"),
        (0, 1, "pytest in the guest exited 1"),
        (1, 0, "vng exited 1 after the guest's pytest exited 0"),  # a panic after the last line
    ],
)
def test_the_lab_as_a_whole_fails_when_the_guest_did(
    inner: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    returncode: int | None,
    pytest_exit: int | None,
    why: str,
) -> None:
    _boots(monkeypatch, _guest(returncode, pytest_exit))
    result = inner.runpytest("-k", "passes")
    result.assert_outcomes(passed=1, failed=1, deselected=3)
    result.stdout.fnmatch_lines([f"*the kernel lab failed as a whole: {why}*"])


def test_collecting_boots_nothing(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _boots(monkeypatch, _guest())
    inner.runpytest("--collect-only")
    assert calls == []


OWNER = """
import pytest
from tests.support import kernel_lab

VICTIM = "tests/harness/x.py::test_victim"

def test_first(request):
    # Before the owner runs, its boot is under way: begun when the tests began.
    assert (VICTIM,) in request.config.stash.get(kernel_lab.OWN_GUESTS, {})

@pytest.mark.guest(VICTIM)
def test_owner(request):
    assert kernel_lab.own_guest(request.config, [VICTIM]).kernel == "/boot/vmlinuz-test"
"""


def test_a_host_tests_own_guest_is_booted_once_from_the_start(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _boots(monkeypatch, _guest())
    result = inner.runpytest(str(inner.makepyfile(test_owner=OWNER)))
    result.assert_outcomes(passed=2)
    assert calls == [["tests/harness/x.py::test_victim"]]  # the owner's one boot, and no lab's


def test_the_own_guest_of_a_deselected_test_is_not_booted(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _boots(monkeypatch, _guest())
    result = inner.runpytest(str(inner.makepyfile(test_owner=OWNER)), "-k", "test_first")
    result.assert_outcomes(failed=1, deselected=1)  # test_first finds no boot begun
    assert calls == []
