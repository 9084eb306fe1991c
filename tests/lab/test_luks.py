"""LUKS/dm-crypt for real, on a kernel that has it: every variant provisioned,
proven encrypted, measured and torn down; its open-time flags as dm-crypt
holds them; a SIGKILL with a mapping open, then `cryptbench cleanup`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cryptbench.backends.luks import AES_XTS, VARIANTS
from cryptbench.suite import load_suite
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
    cipher = line.split()[3]
    assert cipher == "aes-xts-plain64" if variant.cipher == AES_XTS else "adiantum" in cipher, line
    assert t.details["dm_table_cipher"] == cipher
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


TUNING_TINY = """
name = "luks-tuning-tiny"
description = "luks-tuning's targets, two of its workloads, for the kernel lab"
[[workloads]]
name = "rnd4k-q1-write"
rw = "randwrite"
bs = "4K"
iodepth = 1
[[workloads]]
name = "responsiveness"
app = "responsiveness"
seconds = 1
probe_size = "4M"
"""


def test_luks_tuning_holds_each_option_to_plain_luks(target_dir: Path, tmp_path: Path) -> None:
    """The luks-tuning suite's targets with two of its workloads: each option target against
    luks-aes256 as well as ext4-loop, in the document, the report and the diagnosis; and the
    responsiveness probe under every target's bulk write."""
    backends = list(load_suite("luks-tuning").backends or [])
    suite = tmp_path / "tiny.toml"
    suite.write_text(TUNING_TINY)
    db = tmp_path / "r.sqlite"
    common = ("--target", str(target_dir), "--db", str(db))
    proc = cli("run", "--backends", ",".join(backends), "--suite", str(suite), "--size", "8M",
               "--repeats", "2", "--json", *common)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["trials"] == {"ok": 2 * 2 * (len(backends) + 2), "failed": 0}  # with plain and ext4-loop
    variants = [b for b in backends if VARIANTS[b].variant_of]
    assert len(variants) == 5
    comps = {(c["workload"], c["target"], c["kind"]): c for c in doc["comparisons"]}
    for v in variants:
        for w in ("rnd4k-q1-write", "responsiveness"):
            c = comps[(w, v, "variant")]
            assert c["baseline"] == "luks-aes256" and c["ci_low"] is not None, c
            assert comps[(w, v, "baseline")]["baseline"] == "ext4-loop"
        told = next(d for d in doc["diagnosis"] if d["target"] == v)["sentences"]
        assert any("luks-aes256" in s for s in told), told
    probes = [
        r for r in doc["results"] if r["workload"] == "responsiveness" and r["metric"] == "probe.lat_p99"
    ]
    assert {r["target"] for r in probes} == {"plain", "ext4-loop", *backends}
    assert all(r["n"] == 2 and r["median"] > 0 for r in probes)
    shown = cli("show", str(doc["run_id"]), "--details", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    print(
        shown.stdout
    )  # kept in the lab's log: the table as the lab printed it (TCG: no performance figures)
    assert "What each option changes against luks-aes256" in shown.stdout
    assert not list(Path("/dev/mapper").glob("cryptbench-*"))
