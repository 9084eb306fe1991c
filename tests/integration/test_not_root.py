"""Without root, cryptbench runs what it can and says what it skipped and why."""

# Over 60 s of make test (63 s in the fresh-clone run of c2486be, 2026-11-29): a whole run,
# as a user without root, of every default backend such a user gets, with the protection
# probes; that run took 61 s of it.
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.leaks import leftovers
from tests.support.suites import READ_AND_WRITE

pytestmark = pytest.mark.integration

NOBODY = 65534


def _as_nobody(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_DATA_HOME": str(home / "data"),
    }
    return subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            "-m",
            "cryptbench",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd="/",
    )


@pytest.fixture
def nobody_dir(target_dir: Path) -> Path:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a command as an unprivileged user")
    os.chown(target_dir, NOBODY, NOBODY)
    probe = subprocess.run(
        [
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            sys.executable,
            "-c",
            "import cryptbench",
        ],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip("this Python installation cannot be run by an unprivileged user")
    return target_dir


def test_backends_explain_what_needs_root(nobody_dir: Path) -> None:
    proc = _as_nobody(["backends", "--json"], nobody_dir)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["plain"]["available"]
    for name in ("ext4-loop", "fscrypt"):
        assert not rows[name]["available"]
        assert rows[name]["reason"].startswith("needs root")


def test_run_measures_what_it_can(nobody_dir: Path) -> None:
    # Every default backend, as a user without root gets them, with two workloads (a read
    # and a write) rather than the quick suite's six, which only repeated the same kind of
    # trial (70 s in a fresh-clone run on 2026-11-28). The file is the user's own, as a suite
    # would be; selftest's own suite names root-only throttled backends.
    suite = nobody_dir / "two.toml"
    suite.write_text(READ_AND_WRITE)
    os.chown(suite, NOBODY, NOBODY)
    args = ["run", "--suite", str(suite), "--size", "4M", "--repeats", "1", "--target", str(nobody_dir)]
    proc = _as_nobody([*args, "--json"], nobody_dir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    names = [t["name"] for t in doc["targets"]]
    assert names[0] == "plain" and "ext4-loop" not in names and "fscrypt" not in names
    assert any(n.startswith("skipped ext4-loop: needs root") for n in doc["notes"])
    assert "skipped ext4-loop: needs root" in proc.stderr  # the user is told, not just the JSON
    assert "cache-drop-limited" in {w["kind"] for w in doc["warnings"]}
    assert doc["trials"]["failed"] == 0
    assert leftovers(nobody_dir) == []


def test_asking_for_a_root_backend_is_refused_with_the_reason(nobody_dir: Path) -> None:
    proc = _as_nobody(["run", "--backends", "fscrypt", "--target", str(nobody_dir)], nobody_dir)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("cryptbench: error: backend fscrypt is not available here")
    assert "needs root" in proc.stderr


def test_stack_without_root_says_what_it_could_not_read(nobody_dir: Path) -> None:
    proc = _as_nobody(["stack", str(nobody_dir), "--json"], nobody_dir)
    assert proc.returncode == 0, proc.stderr
    stack = json.loads(proc.stdout)
    assert stack["path"] == str(nobody_dir) and stack["layers"][0]["kind"] == "filesystem"
    hidden = nobody_dir / "private"
    hidden.mkdir(mode=0o700)  # root's, inside the directory nobody owns
    (hidden / "f").write_text("")
    refused = _as_nobody(["stack", str(hidden / "f")], nobody_dir)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert (
        refused.stderr.strip()
        == f"cryptbench: error: {hidden / 'f'}: this user may not reach it (permission denied)"
    )
