"""Unit tests touch nothing outside their tmp_path: no key in a keyring, no mount, no loop
device, no secret directory. Each is checked against the machine before and after it; a
test that needs the machine is an integration test (tests/integration, marked so).

What a suite running beside this one makes (make test's lane 1, scripts/test_lanes.sh: its
targets under /var/tmp/cryptbench-test-*, its runs' secret directories, its fleet hosts'
network namespaces, the keys its tests add to root's user keyring) is not counted: only
what this process could have made."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cryptbench.backends.base import Target
from cryptbench.machine.keys import secret_dirs_of
from cryptbench.machine.session import Session
from cryptbench.machine.system import mounts
from cryptbench.measure import cache
from tests.support.leaks import (
    TEST_DIR_PREFIX,
    TEST_KEY_PREFIX,
    TEST_TARGET_BASE,
    UNPLACED,
    leak_checked_dir,
    loop_backings,
    user_keys,
)

BESIDE = str(TEST_TARGET_BASE / TEST_DIR_PREFIX)  # integration suites' target directories
PYTEST_TMP = "/tmp/pytest-of-"  # every pytest's tmp_path base: another session's is not ours
NETNS = "/run/netns"  # `ip netns add` mounts each namespace here, and the directory on itself


def _another_suite_s(path: str, ours: Path) -> bool:
    # An unplaced loop device is over a qemu export whose daemon was killed: lane 1's
    # SIGKILL tests make them by design, until their cleanup unmounts the filesystem on
    # it (set_autoclear). A unit test runs no export; seen from lane 2 in CI at c219d64.
    return (
        path in (UNPLACED, NETNS)
        or path.startswith(BESIDE)
        or (path.startswith(PYTEST_TMP) and not path.startswith(str(ours)))
        or path.startswith(f"{NETNS}/")
    )


def machine(ours: Path) -> set[str]:
    """What a test could leave on the machine; `ours`: this session's tmp_path base."""
    found = {f"key {k}" for k in user_keys() if not k.startswith(TEST_KEY_PREFIX)}
    found |= {f"mount {m.mountpoint}" for m in mounts() if not _another_suite_s(str(m.mountpoint), ours)}
    found |= {f"loop {d} -> {p}" for d, p in loop_backings().items() if not _another_suite_s(p, ours)}
    found |= {f"secret directory {d}" for d in secret_dirs_of() if f"-{os.getpid()}-" in d.name}
    return found


@pytest.fixture(autouse=True)
def touches_nothing_outside_tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    ours = tmp_path_factory.getbasetemp().resolve()
    before = machine(ours)
    yield
    after = machine(ours)
    made, gone = after - before, before - after
    assert not made and not gone, (
        f"a unit test changed the machine: made {sorted(made)}, removed {sorted(gone)}"
    )


@pytest.fixture
def target_dir() -> Iterator[Path]:
    """A target directory on a real disk, checked for what is left in it. Not for what is
    up machine-wide: a unit test puts nothing there, and the integration tests beside
    these (make test's lane 1) may."""
    with leak_checked_dir(machine=False) as d:
        yield d


@pytest.fixture
def dir_target(tmp_path: Path) -> Iterator[tuple[Session, Target]]:
    """A target whose backing is its own directory, plain's layout, in a session of its own
    (the protection probes' tests)."""
    session = Session.create(tmp_path)
    path = session.path("targets", "plain")
    path.mkdir(parents=True)
    yield session, Target("plain", "plain", False, None, path, (path,))
    session.close()


@pytest.fixture(autouse=True)
def drops_only_its_own_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test drops the page cache of its own files (posix_fadvise, as cryptbench does
    without root), never the whole machine's: make test runs the integration tests beside
    the unit tests (scripts/test_lanes.sh), and some of them check what is resident. In the
    fresh-clone run of 834537e test_cache.py found 270,336 bytes of an 8 MiB file resident
    right after reading it through gocryptfs, while the unit tests of the protection probes
    ran beside it: one run of the unit tests dropped every cache of the machine 43 times,
    from 16 tests."""
    monkeypatch.setattr(cache, "drop_caches", cache.drop_files)


@pytest.fixture(autouse=True)
def timed_at_the_normal_policy(request: pytest.FixtureRequest) -> Iterator[None]:
    """make test's lane 2 runs the unit tests under SCHED_IDLE (scripts/test_lanes.sh),
    where a 50 ms window may get no CPU at all: a cipher timed over it read below 1 MB/s
    in the fresh-clone run of ba7523e. A test marked `timed` measures a rate or CPU time
    over such a window, so it runs at the normal policy, sharing the CPU as any host
    test does (its workers, spawned from this thread, inherit that policy)."""
    if request.node.get_closest_marker("timed") is None or os.sched_getscheduler(0) != os.SCHED_IDLE:
        yield
        return
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
