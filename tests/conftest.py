"""Shared fixtures: isolation of state and data dirs, and a leak check.

Every test that provisions real targets is checked afterwards: nothing it made
may still be mounted, attached to a loop device, or running.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from hypothesis import settings

from cryptbench.backends import REGISTRY, Target, TargetSpec
from cryptbench.keys import SECRET_DIR_PREFIX, secret_dirs_of
from cryptbench.pipeline.provision import recover_stale
from cryptbench.session import Session, scratch_root
from cryptbench.system import mounts
from cryptbench.throttle import BLKIO, CGROUP, THROTTLE_FILES
from tests import kernel_lab
from tests.reliability import FIGURES

# Property tests run the same examples every time (CI must not turn red by
# luck) and keep no example database in the work tree.
settings.register_profile("cryptbench", derandomize=True, deadline=None, max_examples=300, database=None)
settings.load_profile("cryptbench")

# The suite's runs use tiny data files to test behaviour, not speed: sizing their trials
# to a second each would multiply make test's time for nothing. Trial sizing has its own
# tests (unit/test_trial_sizing.py, integration/test_trial_sizing_real.py), which ask for
# it by --trial-time; a user's shell that sets the variable is left alone.
os.environ.setdefault("CRYPTBENCH_TRIAL_TIME", "0")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # On the host, each lab test is a stand-in whose outcome the guest decides.
    if not kernel_lab.IN_GUEST:
        items[:] = kernel_lab.stand_in(items)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    results = os.environ.get("CRYPTBENCH_LAB_RESULTS")
    if kernel_lab.IN_GUEST and results:
        with open(results, "a") as f:
            f.write(json.dumps(kernel_lab.report_line(report)) + "\n")


TEST_TARGET_BASE = Path(os.environ.get("CRYPTBENCH_TEST_TARGET", "/var/tmp"))
RECOVERED: list[str] = []  # what a killed earlier suite had left, recovered at start
FOUND_AT_START: list[str] = []  # machine-wide leftovers that recovery did not end


def pytest_sessionstart(session: pytest.Session) -> None:
    """A suite killed outright (SIGKILL, a job's time limit) leaves its targets mounted,
    looped and throttled in its cryptbench-test-* directories, and each test of the next
    suite would then find them and fail. Recover them first, as `cryptbench cleanup`
    does: only runs whose lock no live process holds, so a suite running beside this
    one keeps its own. The directories stay (a live suite's may hold no run yet);
    what was recovered is printed at the end."""
    if kernel_lab.IN_GUEST or os.geteuid() != 0:
        return
    with tempfile.TemporaryDirectory() as no_registry:  # never the user's own runs
        for d in sorted(TEST_TARGET_BASE.glob("cryptbench-test-*")):
            RECOVERED.extend(f"{d.name}: {m}" for m in recover_stale([d], Path(no_registry)))
    FOUND_AT_START.extend(machine_wide())


def pytest_sessionfinish(session: pytest.Session) -> None:
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
    lab = config.stash.get(kernel_lab.LAB_RUN, None)
    if lab is not None:
        terminalreporter.section("kernel lab")
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


# Every program a run may leave running if its teardown fails.
DAEMONS = frozenset({"fio", "gocryptfs", "qemu-storage-daemon", "securefs", "cryfs", "encfs"})


def loop_throttles() -> list[str]:
    """Throttle rules on loop devices (major 7), and cgroup v2 throttles'
    cgroups: only known-answer targets set them."""
    rules = []
    for name in THROTTLE_FILES:
        path = BLKIO / name
        if path.exists():
            rules += [f"{line} ({name})" for line in path.read_text().splitlines() if line.startswith("7:")]
    if (CGROUP / "cgroup.controllers").exists():
        rules += [f"cgroup {d}" for d in CGROUP.glob("cryptbench-*")]
    return rules


def leftovers(root: Path) -> list[str]:
    root = root.resolve()
    found = [f"mount {m.mountpoint}" for m in mounts() if m.mountpoint.is_relative_to(root)]
    for dev in sorted(Path("/sys/block").glob("loop*")):
        backing = dev / "loop" / "backing_file"
        if backing.exists() and backing.read_text().strip().startswith(str(root)):
            found.append(f"loop /dev/{dev.name} -> {backing.read_text().strip()}")
    for p in psutil.process_iter(["cmdline", "status"]):
        argv = p.info["cmdline"] or []
        cmd = " ".join(argv)
        if (
            argv
            and p.info["status"] != psutil.STATUS_ZOMBIE
            and Path(argv[0]).name in DAEMONS
            and str(root) in cmd
        ):
            found.append(f"process {p.pid} {cmd}")
    found.extend(_command_leftovers(root))
    found.extend(f"key directory {d}" for d in secret_dirs_of() if not _another_live_run(d, root))
    return found + [g for g in machine_wide() if g not in FOUND_AT_START]


def machine_wide() -> list[str]:
    """What no path ties to a test's directory: dm-crypt mappings, throttle rules, the
    commands' cgroups. Any of them present when the suite started (and not recovered) is
    someone else's, and is not blamed on each test in turn."""
    found = [f"dm-crypt mapping {m.name}" for m in Path("/dev/mapper").glob("cryptbench-*")]
    found.extend(f"block I/O throttle {rule}" for rule in loop_throttles())
    found.extend(f"cgroup {d}" for d in (CGROUP / "unified").glob("cryptbench-*"))
    return found


def _command_leftovers(root: Path) -> list[str]:
    """What a user's command left: a process working in the scratch space (its cwd under
    `root`, as every command's is). Its cgroups are in machine_wide() (a hybrid
    hierarchy's unified mount; on a v2-only one they sit beside the throttles')."""
    found = []
    for p in psutil.process_iter(["cwd", "status", "cmdline"]):
        cwd = p.info["cwd"]
        if cwd and p.info["status"] != psutil.STATUS_ZOMBIE and Path(cwd).is_relative_to(root):
            found.append(f"process {p.pid} {' '.join(p.info['cmdline'] or [])} (in {cwd})")
    return found


def _another_live_run(secrets: Path, root: Path) -> bool:
    """Whether a secret directory belongs to a cryptbench running now that is not this
    test's: its process (by the pid in its name) is alive, is not this one (a run made in
    the test's own process), and has no run directory under `root`. A run beside the suite
    (a user's benchmark, another checkout's tests) is not a leak of this test's; a dead
    process's directory is counted, whoever made it."""
    m = re.fullmatch(r"(run-[0-9T]+-([0-9]+))-[0-9a-f]+", secrets.name.removeprefix(SECRET_DIR_PREFIX))
    if m is None:
        return False
    pid = int(m.group(2))
    ours = pid == os.getpid() or (scratch_root(root) / m.group(1)).exists()
    return not ours and psutil.pid_exists(pid)


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the user's registry and results database out of tests."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def unplaced_loops() -> set[str]:
    """Loop devices whose backing file has no path any more (its mount is gone):
    a loop over a FUSE export that outlived the export. No path ties them to a
    run, so they are counted as new ones appearing during a test."""
    found = set()
    for dev in Path("/sys/block").glob("loop*"):
        backing = dev / "loop" / "backing_file"
        if backing.exists() and backing.read_text().strip() == "/":
            found.add(f"/dev/{dev.name}")
    return found


@contextmanager
def leak_checked_dir() -> Iterator[Path]:
    """A target directory on a real disk (/var/tmp, not a tmpfs), checked for leaks afterwards."""
    base = Path(os.environ.get("CRYPTBENCH_TEST_TARGET", "/var/tmp"))
    d = Path(tempfile.mkdtemp(prefix="cryptbench-test-", dir=base))
    before = unplaced_loops()
    yield d
    left = leftovers(d) + [
        f"loop {dev} -> / (its backing mount is gone)" for dev in unplaced_loops() - before
    ]
    if not left:
        shutil.rmtree(d, ignore_errors=True)
    assert not left, f"left behind: {left}"


@pytest.fixture
def target_dir() -> Iterator[Path]:
    with leak_checked_dir() as d:
        yield d


requires_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to attach loop devices and mount")


@contextmanager
def provisioned(
    target_dir: Path, backend: str, size: int, state: str | None = None, fs: str = "ext4"
) -> Iterator[tuple[Session, Target]]:
    """A real target in its own session; skips, with the reason, where the backend cannot run."""
    avail = REGISTRY[backend].probe()
    if not avail.ok:
        pytest.skip(f"{backend} unavailable here: {avail.reason}")
    session = Session.create(target_dir)
    try:
        spec = TargetSpec(backend, state if REGISTRY[backend].stateful else None, fs)
        with REGISTRY[backend].provision(session, spec, size) as target:
            yield session, target
    finally:
        session.close()


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the cryptbench command line as a user would, capturing both streams."""
    return subprocess.run(
        [sys.executable, "-m", "cryptbench", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env if env is not None else os.environ.copy(),
    )


def need_backend(name: str) -> None:
    """Skip with the reason `cryptbench backends` gives when the backend cannot run here."""
    avail = REGISTRY[name].probe()
    if not avail.ok:
        pytest.skip(f"{name} unavailable here: {avail.reason}")


def available(names: Iterator[str] | list[str] | tuple[str, ...]) -> list[str]:
    """The backends of `names` that can run here. A module that runs only these also
    declares `test_includes` with `includes(names)`, so each one left out shows as a
    skip with its reason instead of shrinking the list silently."""
    return [n for n in names if REGISTRY[n].probe().ok]


def includes(names: list[str] | tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A test, one case per backend, that skips with the reason where the backend is
    missing: the module's runs then cover the rest, and the report says what they lack."""

    @pytest.mark.parametrize("backend", list(names))
    def test_includes(backend: str) -> None:
        # Nothing to check where it runs: the module's tests include the backend then.
        need_backend(backend)

    return test_includes
