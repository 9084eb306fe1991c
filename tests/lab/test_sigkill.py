"""A SIGKILL with every kind of target only a distribution kernel offers up at once (dm-crypt
mappings, one of them stacked on dm-integrity, fscrypt with an Adiantum policy, eCryptfs
with its key tokens in the kernel keyring), then `cryptbench cleanup`: nothing may be left,
not even a token."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.lab import ecryptfs_mounts, run_args
from tests.support.cli import cli
from tests.support.leaks import leftovers, user_keys
from tests.support.reliability import count

pytestmark = [pytest.mark.lab, pytest.mark.integration]
UP_AT_ONCE = ["fscrypt-adiantum", "ecryptfs", "luks-adiantum", "luks-aes256-hmac-nojournal"]
# luks-adiantum's mapping, and the integrity target's crypt mapping with its NAME_dif under it
MAPPINGS_UP = 3


def _mappings() -> list[Path]:
    return list(Path("/dev/mapper").glob("cryptbench-*"))


def test_sigkill_with_every_kernel_only_kind_up_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    before = user_keys()
    argv = [sys.executable, "-m", "cryptbench", *run_args(target_dir, tmp_path, UP_AT_ONCE, "--repeats", "5")]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    # every target is provisioned before the first trial: wait for the last of them
    while not (len(_mappings()) >= MAPPINGS_UP and ecryptfs_mounts()):
        assert proc.poll() is None and time.monotonic() < deadline, "the targets did not all come up"
        time.sleep(0.1)
    time.sleep(2)  # into the mkfs, mount, proof or the trials
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mess = leftovers(target_dir)
    mapped = [m for m in mess if m.startswith("dm-crypt mapping")]
    assert len(mapped) >= MAPPINGS_UP and any(m.endswith("_dif") for m in mapped), mess
    mounted = [m for m in mess if m.startswith("mount ")]
    assert len(mounted) >= 3, mess  # ext4 (fscrypt-adiantum's and the mapping's) and eCryptfs at least
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    print(f"cleanup said: {clean.stdout.strip()}")
    assert leftovers(target_dir) == [] and ecryptfs_mounts() == [] and _mappings() == []
    assert user_keys() - before == set()  # the run's tokens: unlinked at unmount or invalidated
    count("SIGKILLs with dm-crypt (Adiantum; on dm-integrity), fscrypt-adiantum and eCryptfs up, cleaned up")


def _sysfs(path: Path) -> str | None:
    """A sysfs attribute's text, or None when its device went away after it was listed
    (a mapping being removed answers EINVAL, a detached loop device ENOENT)."""
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _stacked_on_loops_under(root: Path) -> list[str]:
    """The device-mapper devices stacked on loop devices whose image lies under `root`."""
    found = []
    for loop in Path("/sys/block").glob("loop*"):
        backing = _sysfs(loop / "loop" / "backing_file")
        if backing is not None and backing.startswith(str(root)):
            names = (_sysfs(h / "dm" / "name") for h in (loop / "holders").glob("dm-*"))
            found += [n for n in names if n is not None]
    return found


def _formatting() -> list[psutil.Process]:
    """cryptsetup luksFormat's processes, running now."""
    return [
        p
        for p in psutil.process_iter(["name", "cmdline"])
        if p.info["name"] == "cryptsetup" and "luksFormat" in (p.info["cmdline"] or [])
    ]


def test_sigkill_of_cryptsetup_while_it_wipes_for_integrity_then_cleanup(
    target_dir: Path, tmp_path: Path
) -> None:
    """luksFormat --integrity wipes the device through a temporary mapping of cryptsetup's
    own. Killed there with the run (an OOM kill, a power-user's kill -9 of the whole tree),
    it leaves that mapping holding the run's loop device: `cleanup` removes it, then detaches."""
    args = run_args(target_dir, tmp_path, ["luks-aes256-hmac"], "--size", "64M")
    proc = subprocess.Popen([sys.executable, "-m", "cryptbench", *args], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while True:
        # Seen, then frozen with cryptsetup, then seen again: a mapping that a frozen
        # cryptsetup holds stays until the kill, however briefly it would have lasted.
        assert proc.poll() is None and time.monotonic() < deadline, "no temporary mapping was seen"
        if _stacked_on_loops_under(target_dir):
            frozen = [psutil.Process(proc.pid), *_formatting()]
            for p in frozen:
                p.suspend()
            if len(frozen) > 1 and _stacked_on_loops_under(target_dir):
                break
            for p in frozen:
                p.resume()
        time.sleep(0.05)
    for p in frozen:
        p.send_signal(signal.SIGKILL)
    proc.wait()
    psutil.wait_procs(frozen[1:], timeout=10)
    stacked = _stacked_on_loops_under(target_dir)
    print(f"left stacked on the loop device: {stacked}")
    assert stacked, "the temporary mapping was gone before the kill"
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    print(f"cleanup said: {clean.stdout.strip()}")
    assert all(name in clean.stdout for name in stacked)
    assert leftovers(target_dir) == [] and _stacked_on_loops_under(target_dir) == []
    count("SIGKILLs of cryptsetup while it wiped for --integrity, its temporary mapping removed by cleanup")
