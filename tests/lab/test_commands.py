"""The user's own commands on a kernel this host's is not: a LUKS target (device-mapper)
and fscrypt, with the commands held in cgroup v2 (the only hierarchy Debian 12 mounts),
which counts their CPU and ends what they leave."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import psutil
import pytest

from tests.support.burner import write_burner
from tests.support.cli import cli
from tests.support.leaks import leftovers

pytestmark = [pytest.mark.lab, pytest.mark.integration]

BURN = 0.3  # CPU seconds the burner spends (process time: TCG's slowness does not change it)

SUITE = """
name = "lab-commands"
[[workloads]]
name = "phased"
[[workloads.phases]]
name = "write"
command = "dd if=/dev/urandom of=f bs=1M count=4 status=none && sync"
[[workloads.phases]]
name = "read"
command = "cat f > /dev/null"
[[workloads.phases]]
name = "burn"
command = "python3 {burner}"
[[workloads.phases]]
name = "leave"
command = "sleep 6131 & echo left"
"""


def test_a_command_suite_on_luks_and_fscrypt(target_dir: Path, tmp_path: Path) -> None:
    burner = write_burner(tmp_path, BURN)
    suite = tmp_path / "lab.toml"
    suite.write_text(SUITE.format(burner=burner))
    db = tmp_path / "r.sqlite"
    proc = cli(
        *("run", "--suite", str(suite), "--backends", "luks-aes256,fscrypt", "--repeats", "2"),
        "--skip-protection",  # the probes have their own lab test (test_protection.py)
        *("--size", "8M", "--target", str(target_dir), "--db", str(db), "--json"),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    targets = {t["name"] for t in doc["targets"]}
    assert {"luks-aes256", "fscrypt", "ext4-loop", "plain"} <= targets
    assert doc["trials"] == {"ok": 2 * len(targets), "failed": 0}
    # held in a cgroup v2 of its own: the lab mounts no other hierarchy
    assert any("in a cgroup v2 of its own under /sys/fs/cgroup:" in n for n in doc["notes"]), doc["notes"]
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT t.target, m.name, m.value FROM metrics m JOIN trials t ON t.id = m.trial_id "
        "WHERE m.name IN ('burn.command_cpu_seconds', 'write.seconds', 'device_bytes_written')"
    ).fetchall()
    con.close()
    burns = [v for _t, name, v in rows if name == "burn.command_cpu_seconds"]
    assert len(burns) == 2 * len(targets) and all(v >= BURN for v in burns), burns
    print(f"burn.command_cpu_seconds per trial, {BURN} s burnt: {sorted(round(v, 3) for v in burns)}")
    stray = [p.pid for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "6131"]]
    assert stray == [] and leftovers(target_dir) == []
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))
    assert not list(Path("/sys/fs/cgroup").glob("cryptbench-*"))
