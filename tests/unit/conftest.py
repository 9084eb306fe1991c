"""Unit tests touch nothing outside their tmp_path: no key in a keyring, no mount, no loop
device, no secret directory. Each is checked against the machine before and after it; a
test that needs the machine is an integration test (tests/integration, marked so).

What a suite running beside this one makes (its targets under /var/tmp/cryptbench-test-*,
its runs' secret directories) is not counted: only what this process could have made."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cryptbench.keys import secret_dirs_of
from cryptbench.system import mounts

BESIDE = "/var/tmp/cryptbench-test-"  # integration suites' target directories
PYTEST_TMP = "/tmp/pytest-of-"  # every pytest's tmp_path base: another session's is not ours


def _user_keys() -> set[str]:
    try:
        lines = Path("/proc/keys").read_text().splitlines()
    except OSError:
        return set()
    return {" ".join(f.split()[7:9]) for f in lines if len(f.split()) > 8 and f.split()[7] == "user"}


def _another_suite_s(path: str, ours: Path) -> bool:
    return path.startswith(BESIDE) or (path.startswith(PYTEST_TMP) and not path.startswith(str(ours)))


def machine(ours: Path) -> set[str]:
    """What a test could leave on the machine; `ours`: this session's tmp_path base."""
    found = {f"key {k}" for k in _user_keys()}
    found |= {f"mount {m.mountpoint}" for m in mounts() if not _another_suite_s(str(m.mountpoint), ours)}
    for dev in Path("/sys/block").glob("loop*"):
        backing = dev / "loop" / "backing_file"
        if backing.exists() and not _another_suite_s(backing.read_text(), ours):
            found.add(f"loop {dev.name} -> {backing.read_text().strip()}")
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
