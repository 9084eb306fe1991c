"""pytest's hooks and the shared fixtures: isolation of state and data dirs, and a
target directory checked for leaks (tests/support/leaks.py) afterwards: nothing a test
made may still be mounted, attached to a loop device, or running. The helpers tests
share live in tests/support/.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cryptbench.pipeline.provision import recover_stale
from tests.support import fleet_hosts, kernel_lab, self_signals, time_budget
from tests.support.leaks import (
    BESIDE,
    FOUND_AT_START,
    TEST_DIR_PREFIX,
    TEST_TARGET_BASE,
    leak_checked_dir,
    machine_wide,
)
from tests.support.reliability import FIGURES

# The kernel lab's stand-ins and background boot (tests/support/lab_plugin.py); pytester runs
# the stand-ins in a pytest of their own (tests/unit/support/test_lab_stand_ins.py).
pytest_plugins = ["pytester", "tests.support.lab_plugin"]

# Property tests run the same examples every time (CI must not turn red by
# luck) and keep no example database in the work tree. The kernel lab's guest runs none,
# and its pytest leaves Hypothesis unloaded (kernel_lab.guest_script): an import of seconds
# under an emulated CPU.
if not kernel_lab.IN_GUEST:
    from hypothesis import settings

    settings.register_profile("cryptbench", derandomize=True, deadline=None, max_examples=300, database=None)
    settings.load_profile("cryptbench")

# The suite's runs use tiny data files to test behaviour, not speed: sizing their trials
# to a second each would multiply make test's time for nothing. Trial sizing has its own
# tests (unit/test_trial_sizing.py, integration/test_trial_sizing_real.py), which ask for
# it by --trial-time; a user's shell that sets the variable is left alone.
os.environ.setdefault("CRYPTBENCH_TRIAL_TIME", "0")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    results = os.environ.get("CRYPTBENCH_LAB_RESULTS")
    if kernel_lab.IN_GUEST and results:
        with open(results, "a") as f:
            f.write(json.dumps(kernel_lab.report_line(report)) + "\n")
    time_budget.add(report)


def _unwind(signum: int, _frame: object) -> None:
    self_signals.note(signum)
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    """A suite stopped by SIGTERM (a CI job's time limit, a session's end) unwinds as on
    Ctrl-C: the running test's context managers and every fixture's teardown run, and the
    kernel lab stops its qemu and removes its directory. Python's default for SIGTERM is
    to die on the spot, which left a killed suite's targets mounted, looped and throttled
    (tests/integration/test_suite_signals.py)."""
    signal.signal(signal.SIGTERM, _unwind)
    signal.signal(signal.SIGINT, _unwind)  # Python's own, but noted
    self_signals.install()
    time_budget.configure(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A SIGINT or SIGTERM that cryptbench's handler took while the test ran it in this
    process stopped only that run (tests/support/self_signals.py): the suite stops
    after the test, its teardown done, as it would have on any other test.

    A test marked `beside` runs with leaks.BESIDE naming it: the fixtures that provision
    (target_dir, the shared runs) refuse it, however they are reached."""
    beside = item.get_closest_marker("beside") is not None
    if beside:
        BESIDE.append(item.nodeid)
    try:
        result = yield
    finally:
        if beside:
            BESIDE.remove(item.nodeid)
    signum = self_signals.foreign()
    if signum is not None:
        name = signal.Signals(signum).name
        item.session.shouldstop = f"{name} arrived while a test ran cryptbench in this process"
    return result


RECOVERED: list[str] = []  # what a killed earlier suite had left, recovered at start


def pytest_collection_finish(session: pytest.Session) -> None:
    """A suite killed outright (SIGKILL, a job's time limit) leaves its targets mounted,
    looped and throttled in its cryptbench-test-* directories, and each test of the next
    suite would then find them and fail. Recover them first, as `cryptbench cleanup`
    does: only runs whose lock no live process holds, so a suite running beside this
    one keeps its own; and remove its lab guests' directories, which no live suite
    locks (kernel_lab.sweep_dead). The directories stay (a live suite's may hold no run yet);
    what was recovered is printed at the end. Only a session with integration tests
    recovers: the unit tests beside them (make test's lane 2, scripts/test_lanes.sh)
    and the integration tests marked `beside` provision nothing, and leave the other
    lane's runs to it."""
    if kernel_lab.IN_GUEST or os.geteuid() != 0:
        return
    if not any(
        item.get_closest_marker("integration") and not item.get_closest_marker("beside")
        for item in session.items
    ):
        return
    with tempfile.TemporaryDirectory() as no_registry:  # never the user's own runs
        for d in sorted(TEST_TARGET_BASE.glob(f"{TEST_DIR_PREFIX}*")):
            RECOVERED.extend(f"{d.name}: {m}" for m in recover_stale([d], Path(no_registry)))
    RECOVERED.extend(
        f"{n}: a lab guest's directory, its suite no longer alive" for n in kernel_lab.sweep_dead()
    )
    if shutil.which("ip"):  # root, as checked above; unlike unavailable(), no probe namespace
        swept = fleet_hosts.sweep_dead()
        RECOVERED.extend(f"{n}: a fleet test's host, its session no longer alive" for n in swept)
    FOUND_AT_START.extend(machine_wide())


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not kernel_lab.IN_GUEST:
        time_budget.write(session.config)
    results = os.environ.get("CRYPTBENCH_LAB_RESULTS")
    if kernel_lab.IN_GUEST and results:  # the host counts them among its own
        with open(results, "a") as f:
            f.write(json.dumps({"figures": dict(FIGURES)}) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if RECOVERED:
        terminalreporter.section("recovered at start: what an earlier, killed suite left")
        for line in RECOVERED:
            terminalreporter.write_line(line)
    if FOUND_AT_START:
        terminalreporter.section("present at start, not this suite's, left alone")
        for line in FOUND_AT_START:
            terminalreporter.write_line(line)
    if FIGURES:
        terminalreporter.section("reliability figures (docs/reliability.md)")
        for name in sorted(FIGURES):
            terminalreporter.write_line(f"{name}: {FIGURES[name]}")
    for series, lab in config.stash.get(kernel_lab.LAB_RUNS, {}).items():
        terminalreporter.section(f"kernel lab, {kernel_lab.KERNELS[series].label}")
        terminalreporter.write_line(lab.summary())
        for nodeid, o in lab.outcomes.items():  # each by name: the lab is not the host's -v
            terminalreporter.write_line(f"{o.outcome.upper()} {nodeid} ({o.seconds:.0f} s in the guest)")
        for nodeid, o in lab.outcomes.items():
            for name, value in o.figures:  # not performance figures under TCG: behaviour's evidence
                terminalreporter.write_line(f"{nodeid.rsplit('::', 1)[-1]}: {name}: {value}")
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if isinstance(r.longrepr, tuple)]
    if skipped:
        # Every skip by name, not grouped: none may hide a broken path.
        terminalreporter.section(f"{len(skipped)} skipped, each with its reason")
        for r in skipped:
            terminalreporter.write_line(f"{r.nodeid}: {r.longrepr[2].removeprefix('Skipped: ')}")


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the user's registry and results database out of tests."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def target_dir() -> Iterator[Path]:
    with leak_checked_dir() as d:
        yield d
