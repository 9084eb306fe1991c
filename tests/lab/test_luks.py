"""LUKS/dm-crypt for real, on a kernel that has it: every variant provisioned,
proven encrypted, measured and torn down; its open-time flags as dm-crypt
holds them; a SIGKILL with a mapping open, then `cryptbench cleanup`."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cryptbench.backends.luks import VARIANTS
from tests.conftest import cli, leftovers, provisioned
from tests.lab import run_args, run_json
from tests.reliability import count

pytestmark = [pytest.mark.lab, pytest.mark.integration]
PERF_FLAGS = {"no_read_workqueue", "no_write_workqueue", "submit_from_crypt_cpus", "same_cpu_crypt"}


def test_every_luks_variant_end_to_end(target_dir: Path, tmp_path: Path) -> None:
    doc = run_json(target_dir, tmp_path, list(VARIANTS))
    targets = {t["name"]: t for t in doc["targets"]}
    assert set(targets) == {"plain", "ext4-loop", *VARIANTS}
    for name in VARIANTS:
        assert targets[name]["encryption_verified"] is True, name
        assert targets[name]["baseline"] == "ext4-loop"
        assert targets[name]["details"]["mapping"].startswith("/dev/mapper/cryptbench-")
    assert doc["trials"]["failed"] == 0 and doc["trials"]["ok"] == 2 * len(targets)
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))


@pytest.mark.parametrize("backend", list(VARIANTS))
def test_each_variant_holds_exactly_the_options_it_asked_for(target_dir: Path, backend: str) -> None:
    variant = VARIANTS[backend]
    with provisioned(target_dir, backend, 8 << 20) as (_session, t):
        mapping = Path(t.details["mapping"]).name
        table = subprocess.run(["dmsetup", "table", mapping], capture_output=True, text=True, check=True)
    line = table.stdout.strip()
    print(f"dmsetup table ({backend}): {line}")  # kept in the lab's log: the real line, key zeroed
    assert " crypt aes-xts-plain64 " in line, line
    shown = line.split()[9:]
    options = set(shown)
    assert options & PERF_FLAGS == set(variant.flags), line
    assert ("sector_size:4096" in options) == (variant.sector == 4096), line
    assert t.details["dm_table_options"] == (" ".join(shown) or "none")  # what the tool recorded


def test_sigkill_with_a_mapping_open_then_cleanup(target_dir: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cryptbench",
            *run_args(target_dir, tmp_path, ["luks-aes256"], "--repeats", "5"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while not list(Path("/dev/mapper").glob("cryptbench-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "no mapping came up"
        time.sleep(0.1)
    time.sleep(2)  # into the mkfs, mount or the trials
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mess = leftovers(target_dir)
    assert any(m.startswith("dm-crypt mapping") for m in mess), mess
    clean = cli("cleanup", "--target", str(target_dir))
    assert clean.returncode == 0, clean.stderr
    assert leftovers(target_dir) == []
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))
    count("SIGKILLs with a dm-crypt mapping open, cleaned up")
