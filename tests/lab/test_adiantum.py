"""Adiantum, the cipher for CPUs without AES instructions, for real on a kernel that has
it: fscrypt with an Adiantum v2 policy and dm-crypt with xchacha12,aes-adiantum-plain64,
each provisioned, proven encrypted, measured and torn down; a SIGKILL with both up,
then `cryptbench cleanup`."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cli, leftovers
from tests.lab import run_args, run_json
from tests.reliability import count

pytestmark = [pytest.mark.lab, pytest.mark.integration]
ADIANTUM = ["fscrypt-adiantum", "luks-adiantum"]


def test_adiantum_targets_end_to_end(target_dir: Path, tmp_path: Path) -> None:
    doc = run_json(target_dir, tmp_path, ADIANTUM)
    targets = {t["name"]: t for t in doc["targets"]}
    assert set(targets) == {"plain", "ext4-loop", *ADIANTUM}
    for name in ADIANTUM:
        assert targets[name]["encryption_verified"] is True, name
        assert targets[name]["baseline"] == "ext4-loop"
    assert targets["fscrypt-adiantum"]["details"]["policy"].startswith("v2, contents and filenames Adiantum")
    luks = targets["luks-adiantum"]["details"]
    print(f"luks-adiantum: dm-crypt cipher {luks['dm_table_cipher']}, options {luks['dm_table_options']}")
    assert "adiantum" in luks["dm_table_cipher"] and "sector_size:4096" in luks["dm_table_options"]
    assert doc["trials"]["failed"] == 0 and doc["trials"]["ok"] == 2 * len(targets)
    # the kernel registered the algorithm when the targets asked for it
    assert "adiantum(xchacha12,aes)" in Path("/proc/crypto").read_text()
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))


def test_sigkill_with_both_adiantum_targets_up_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "cryptbench", *run_args(target_dir, tmp_path, ADIANTUM, "--repeats", "5")]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    # provisioned in run order: ext4-loop, fscrypt-adiantum, then the dm-crypt mapping
    while not list(Path("/dev/mapper").glob("cryptbench-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "no mapping came up"
        time.sleep(0.1)
    time.sleep(2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mess = leftovers(target_dir)
    assert any(m.startswith("dm-crypt mapping") for m in mess), mess
    assert any(m.startswith("mount ") for m in mess), mess  # fscrypt-adiantum's ext4 at least
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert leftovers(target_dir) == []
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))
    count("SIGKILLs with Adiantum targets up, cleaned up")
