"""`run --existing /dev/mapper/NAME --ram` on the kernels users run: the user's own LUKS2
volume, opened with no_read_workqueue, is only read (its table); its twin, LUKS2 with
the same cipher, key size, sector size and flag, is made in scratch space and on RAM and
given the writes the volume never is, each against ext4 on the same medium. No byte of
the volume changes and no mapping of the run's is left."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from cryptbench.model.json_types import JsonObject
from tests.support.cli import cli
from tests.support.users_mounts import MAPPING, SMALL_VOLUME, changed, digests, users_luks_volume

pytestmark = [pytest.mark.lab("6.1", "6.12"), pytest.mark.integration]
TWIN = "luks-twin-aes256-s4096-noreadq"  # tests/support/users_mounts: 512-bit key, 4096-byte sectors
A_WRITE_AND_A_READ = """
name = "twin"
description = "A random write and a random read"
[[workloads]]
name = "rnd4k-q8-write"
rw = "randwrite"
bs = "4K"
iodepth = 8
[[workloads]]
name = "rnd4k-q8-read"
rw = "randread"
bs = "4K"
iodepth = 8
"""


def _ours() -> list[str]:
    return sorted(p.name for p in Path("/dev/mapper").glob("cryptbench-*"))


def test_the_twin_gets_the_writes_in_scratch_space_and_on_ram_and_the_volume_none(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    suite = tmp_path / "twin.toml"
    suite.write_text(A_WRITE_AND_A_READ)
    scratch, db = tmp_path / "scratch", tmp_path / "t.sqlite"
    scratch.mkdir()
    args = ["run", "--existing", f"/dev/mapper/{MAPPING}", "--ram", "--suite", str(suite), "--size", "8M"]
    args += ["--repeats", "2", "--trial-time", "0", "--skip-protection", "--target", str(scratch)]
    args += ["--db", str(db)]
    with users_luks_volume(tmp_path, mounted=False, size=SMALL_VOLUME, flags=("no_read_workqueue",)):
        loop = (tmp_path / "loop").read_text()
        before = (digests(f"/dev/mapper/{MAPPING}"), digests(loop))
        proc = cli(*args)
        after = (digests(f"/dev/mapper/{MAPPING}"), digests(loop))
        left = _ours()
    assert proc.returncode == 0, proc.stderr
    record_property("the twin's answer", " ".join(proc.stdout.split()))
    assert [changed(b, a) for b, a in zip(before, after, strict=True)] == [[], []]
    assert left == []
    doc: JsonObject = json.loads(cli("show", "1", "--json", "--db", str(db)).stdout)
    twins = {t["name"]: t for t in doc["targets"] if t["backend"] == TWIN}
    assert set(twins) == {TWIN, f"ram:{TWIN}"}
    for t in twins.values():
        assert t["encrypted"] and t["baseline"] == t["name"].replace(TWIN, "ext4-loop")
        options = t["details"]["dm_table_options"].split()
        assert "no_read_workqueue" in options and "sector_size:4096" in options
        assert t["details"]["dm_table_cipher"] == "aes-xts-plain64"
    assert {(r["workload"], r["target"]) for r in doc["results"]} >= {
        (w, t) for w in ("rnd4k-q8-write", "rnd4k-q8-read") for t in twins
    }
    assert doc["notes"][0].startswith(
        f"the twin of your volume {MAPPING} (on {Path(loop).name}): LUKS2 with its aes-xts-plain64, "
        "512-bit key, 4096-byte sectors, flags no_read_workqueue"
    )
    flat = " ".join(proc.stdout.split())
    # the answer opens with what the twin stands in for, before any figure
    assert f"{TWIN} is the twin of your volume {MAPPING} (on {Path(loop).name})" in flat
    assert flat.index(f"{TWIN} is the twin") < flat.index("On the device:")
    assert "rnd4k-q8-write" in flat
