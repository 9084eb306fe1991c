"""eCryptfs for real, on a kernel that has it: mounted over a plain directory with its
key tokens in the kernel keyring, proven encrypted, measured and torn down with the
tokens gone; a SIGKILL with it mounted, then `cryptbench cleanup`."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cryptbench.resources import KEY_SPEC_USER_KEYRING, KEYCTL_SEARCH, keyctl
from cryptbench.system import mounts
from tests.conftest import cli, leftovers
from tests.lab import run_args, run_json
from tests.reliability import count

pytestmark = [pytest.mark.lab, pytest.mark.integration]


def _in_keyring(sig: str) -> bool:
    try:
        keyctl(KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", sig.encode(), 0)
    except OSError:
        return False
    return True


def _user_keys() -> set[str]:
    """The descriptions of the "user" keys this process can see (/proc/keys)."""
    out = set()
    for line in Path("/proc/keys").read_text().splitlines():
        fields = line.split()
        if len(fields) > 8 and fields[7] == "user":
            out.add(fields[8].rstrip(":"))
    return out


def _ecryptfs_mounts(root: Path) -> list[Path]:
    return [m.mountpoint for m in mounts() if m.fstype == "ecryptfs" and m.mountpoint.is_relative_to(root)]


def test_ecryptfs_end_to_end(target_dir: Path, tmp_path: Path) -> None:
    doc = run_json(target_dir, tmp_path, ["ecryptfs"])
    targets = {t["name"]: t for t in doc["targets"]}
    assert set(targets) == {"plain", "ecryptfs"}
    t = targets["ecryptfs"]
    assert t["encryption_verified"] is True and t["baseline"] == "plain"
    print(f"ecryptfs: {t['details']['mount']}")  # the mount as the kernel lists it, in the lab's log
    assert "ecryptfs_cipher=aes" in t["details"]["mount"] and "ecryptfs_key_bytes=32" in t["details"]["mount"]
    sigs = t["details"]["signatures"].split()
    assert len(sigs) == 2
    assert doc["trials"]["failed"] == 0 and doc["trials"]["ok"] == 2 * len(targets)
    assert not any(_in_keyring(s) for s in sigs)  # no token outlives the run
    assert _ecryptfs_mounts(target_dir) == []


def test_sigkill_with_ecryptfs_mounted_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    before = _user_keys()
    args = run_args(target_dir, tmp_path, ["ecryptfs"], "--repeats", "5")
    proc = subprocess.Popen([sys.executable, "-m", "cryptbench", *args], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not _ecryptfs_mounts(target_dir):
        assert proc.poll() is None and time.monotonic() < deadline, "no eCryptfs mount came up"
        time.sleep(0.1)
    time.sleep(1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert any(m.startswith("mount ") for m in leftovers(target_dir))
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    print(f"cleanup said: {clean.stdout.strip()}")
    assert leftovers(target_dir) == [] and _ecryptfs_mounts(target_dir) == []
    assert _user_keys() - before == set()  # the run's tokens: unlinked at unmount or invalidated
    count("SIGKILLs with eCryptfs mounted, cleaned up")
