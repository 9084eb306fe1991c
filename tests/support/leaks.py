"""What a test may leave behind, and a target directory checked for it afterwards: nothing
a test made may still be mounted, attached to a loop device, mapped, throttled or running."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from cryptbench.backends import helper_programs
from cryptbench.machine.keys import SECRET_DIR_PREFIX, secret_dirs_of
from cryptbench.machine.resources import zpool_names
from cryptbench.machine.session import scratch_root
from cryptbench.machine.system import mounts
from cryptbench.machine.throttle import BLKIO, CGROUP, THROTTLE_FILES

FOUND_AT_START: list[str] = []  # machine-wide leftovers that recovery did not end
TEST_TARGET_BASE = Path(os.environ.get("CRYPTBENCH_TEST_TARGET", "/var/tmp"))  # on a real disk
TEST_DIR_PREFIX = "cryptbench-test-"  # each integration test's target directory, in TEST_TARGET_BASE
# The description of a key an integration test adds to root's user keyring itself. That
# keyring is one per UID, so make test's lane 2 sees lane 1's keys come and go; the unit
# guard leaves these alone. What cryptbench adds (eCryptfs's hex signatures) never has it.
TEST_KEY_PREFIX = "cryptbench-test-"
# The running test's id while it is marked `beside` (tests/conftest.py keeps it): make
# test's lane 2 runs such a test next to lane 1's targets, so it may ask for no target
# directory, neither its own nor a shared run's, and no machine-wide leak check
BESIDE: list[str] = []


# Every program a run may leave running if its teardown fails: fio and each backend's own.
DAEMONS = frozenset({"fio"}) | helper_programs()


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


def loop_backings() -> dict[str, str]:
    """Every attached loop device ("/dev/loopN") and the path of its backing file ("/"
    when that file has no path any more)."""
    found = {}
    for dev in sorted(Path("/sys/block").glob("loop*")):
        try:
            found[f"/dev/{dev.name}"] = (dev / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue  # not attached (or detached meanwhile)
    return found


def user_keys() -> set[str]:
    """The descriptions of the "user" keys this process can see (/proc/keys)."""
    try:
        lines = Path("/proc/keys").read_text().splitlines()
    except OSError:
        return set()
    return {f[8].rstrip(":") for f in map(str.split, lines) if len(f) > 8 and f[7] == "user"}


def leftovers(root: Path, machine: bool = True) -> list[str]:
    """What is still up of a test's in `root`, and with `machine`, what is up
    machine-wide (machine_wide()) that was not there when the suite started."""
    root = root.resolve()
    found = [f"mount {m.mountpoint}" for m in mounts() if m.mountpoint.is_relative_to(root)]
    found += [f"loop {dev} -> {path}" for dev, path in loop_backings().items() if path.startswith(str(root))]
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
    return found + ([g for g in machine_wide() if g not in FOUND_AT_START] if machine else [])


def machine_wide() -> list[str]:
    """What no path ties to a test's directory: dm-crypt mappings, throttle rules, the
    commands' cgroups. Any of them present when the suite started (and not recovered) is
    someone else's, and is not blamed on each test in turn."""
    found = [f"dm-crypt mapping {m.name}" for m in Path("/dev/mapper").glob("cryptbench-*")]
    found.extend(f"ZFS pool {name}" for name in zpool_names("cryptbench-"))  # none without zpool
    found.extend(f"block I/O throttle {rule}" for rule in loop_throttles())
    found.extend(f"cgroup {d}" for d in (CGROUP / "unified").glob("cryptbench-*"))
    # the fleet tests' hosts: this session's own, by the pid in their names
    found.extend(f"network namespace {n.name}" for n in Path("/run/netns").glob(f"cbt{os.getpid()}h*"))
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


UNPLACED = "/"  # a loop device's backing path once that file's mount is gone


def unplaced_loops() -> set[str]:
    """Loop devices whose backing file has no path any more (its mount is gone):
    a loop over a FUSE export that outlived the export. No path ties them to a
    run, so they are counted as new ones appearing during a test."""
    return {dev for dev, path in loop_backings().items() if path == UNPLACED}


@contextmanager
def leak_checked_dir(machine: bool = True) -> Iterator[Path]:
    """A target directory on a real disk (/var/tmp, not a tmpfs), checked for leaks
    afterwards; with `machine`, machine-wide too (leftovers, and loop devices whose
    backing mount went during the body)."""
    if BESIDE:
        pytest.fail(
            f"{BESIDE[0]} is marked beside: it needs nothing of the machine to itself, no target directory"
        )
    d = Path(tempfile.mkdtemp(prefix=TEST_DIR_PREFIX, dir=TEST_TARGET_BASE))
    before = unplaced_loops() if machine else set()
    # However the body ends: a shared run whose assertion failed inside it left its
    # directory behind, empty, because nothing after a bare yield runs on an exception.
    # What a failed body leaves up stays for the next suite's recover_stale.
    try:
        yield d
    finally:
        gone = unplaced_loops() - before if machine else set()
        left = leftovers(d, machine) + [f"loop {dev} -> / (its backing mount is gone)" for dev in gone]
        if not left:
            shutil.rmtree(d, ignore_errors=True)
    assert not left, f"left behind: {left}"
