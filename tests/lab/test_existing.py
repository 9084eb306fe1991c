"""The encryption a user already has, on the kernels users run: a LUKS2 volume made as a
user makes one (a loop device over a file on the lab's disk, formatted, opened, ext4 on
it, mounted, files on it), outside any cryptbench session. `cryptbench stack` names each
layer down to the disk, a run whose scratch space is on the volume says before its
answer that its plain target is encrypted, and counts the disk under the mapping, and
`run --existing` reads the volume through its mapping and on its device, the same
sectors, without changing a byte of either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.model.stack import LayerKind, Stack
from tests.lab import run_json
from tests.support.cli import cli
from tests.support.users_mounts import MAPPING, SMALL_VOLUME, changed, digests, run, users_luks_volume

pytestmark = [pytest.mark.lab("6.1", "6.12"), pytest.mark.integration]


def test_stack_names_every_layer_of_a_users_luks_volume(tmp_path: Path) -> None:
    with users_luks_volume(tmp_path) as home:
        proc = cli("stack", str(home / "documents"), "--json")
        assert proc.returncode == 0, proc.stderr
        stack = Stack.from_json(json.loads(proc.stdout))
        text = cli("stack", str(home / "documents"))
        table = run("dmsetup", "table", MAPPING)
    assert [(x.kind, x.depth) for x in stack.layers] == [
        (LayerKind.FILESYSTEM, 0),
        (LayerKind.DM_CRYPT, 1),
        (LayerKind.LOOP, 2),
        (LayerKind.FILESYSTEM, 3),  # the lab's xfs on its virtual disk
        (LayerKind.DISK, 4),
    ]
    ext4, crypt, loop, xfs, disk = stack.layers
    assert (ext4.name, xfs.name, disk.name) == ("ext4", "xfs", "vda")
    assert crypt.name.endswith(f"({MAPPING})") and crypt.encrypted is True
    assert dict(crypt.details) | {"data starts at": ""} == {
        "format": "LUKS2",
        "cipher": "aes-xts-plain64",
        "key": "512-bit key",
        "key held": "in the kernel keyring",
        "data starts at": "",
        "sector size": "4096 bytes",
        "flags": "none",
    }
    assert loop.detail("file") == str(tmp_path / "volume.img")
    assert stack.disks == ("vda",)
    assert stack.notes == ()
    # the table's key field (the keyring's reference) is nowhere in what is printed
    key_field = table.split()[4]
    assert key_field.startswith(":64:logon:") and key_field not in proc.stdout + text.stdout
    said = f"{home / 'documents'} is encrypted by dm-crypt (aes-xts-plain64, 512-bit key)"
    assert " ".join(text.stdout.split()).startswith(said)  # as read, whatever the width folded


def test_a_run_on_a_users_luks_volume_says_plain_is_encrypted(tmp_path: Path) -> None:
    with users_luks_volume(tmp_path) as home:
        doc = run_json(home, tmp_path, ["plain"], "--skip-protection")
        shown = cli("show", str(doc["run_id"]), "--db", str(tmp_path / "r.sqlite"))
        table = run("dmsetup", "table", MAPPING)
    assert shown.returncode == 0, shown.stderr
    stored = Stack.from_json(doc["environment"]["stack"])
    assert [x.kind for x in stored.encrypting] == [LayerKind.DM_CRYPT]
    # the counters read the disk under the mapping and its loop device, not the mapping
    assert doc["environment"]["scratch_device"] == "vda"
    flat = " ".join(shown.stdout.split())  # as read, whatever the terminal's width folded
    said = (
        "Your scratch space is on dm-crypt (aes-xts-plain64, 512-bit key): plain here is encrypted; "
        "each figure is the cost of adding a layer to it."
    )
    assert flat.startswith(f"Run {doc['run_id']} (lab suite): 1 targets")
    # under the header, the stack; then, before the answer, what it means for plain
    assert "; vda wrote " in flat.split(" Scratch space ")[0]
    assert f" Scratch space {home}: {stored.line()} {said} No encrypted target to rank." in flat
    assert table.split()[4] not in json.dumps(doc)


READS = """
name = "reads"
description = "Two reads and a write of the user's volume: the write is left out"
[[workloads]]
name = "seq1m-q8-read"
rw = "read"
bs = "1M"
iodepth = 8
[[workloads]]
name = "rnd4k-q8-read"
rw = "randread"
bs = "4K"
iodepth = 8
[[workloads]]
name = "seq1m-q8-write"
rw = "write"
bs = "1M"
iodepth = 8
"""


def test_run_existing_reads_the_mapping_and_its_device_and_changes_no_byte(tmp_path: Path) -> None:
    """study 002's protocol on the user's own volume: both views read, interleaved, the same
    sectors; the answer is decryption's cost; the write is said, not run; the mapping and
    its device checksum the same after as before, and nothing stored names a file on it."""
    suite = tmp_path / "reads.toml"
    suite.write_text(READS)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    db = tmp_path / "e.sqlite"
    with users_luks_volume(tmp_path, mounted=False, size=SMALL_VOLUME):
        loop = (tmp_path / "loop").read_text()
        before = (digests(f"/dev/mapper/{MAPPING}"), digests(loop))
        args = ("run", "--existing", f"/dev/mapper/{MAPPING}", "--suite", str(suite), "--size", "8M")
        args += ("--repeats", "2", "--trial-time", "0", "--target", str(scratch), "--db", str(db))
        proc = cli(*args)
        after = (digests(f"/dev/mapper/{MAPPING}"), digests(loop))
        doc = json.loads(cli("show", "1", "--json", "--db", str(db)).stdout)
        table = run("dmsetup", "table", MAPPING)
    assert proc.returncode == 0, proc.stderr
    # each MiB of both the same as before: the mapping's, and the device's, header included
    assert [changed(b, a) for b, a in zip(before, after, strict=True)] == [[], []]
    raw = f"raw-{Path(loop).name}"
    assert [(t["name"], t["backend"], t["baseline"]) for t in doc["targets"]] == [
        (raw, "existing-raw", None),
        (MAPPING, "existing-dm-crypt", raw),
    ]
    assert [t["encryption_verified"] for t in doc["targets"]] == [None, True]
    existing = doc["plan"]["existing"]
    offset = int(table.split()[7]) * 512
    assert existing["data_offset"] == offset
    assert [len(b) for b in before] == [(SMALL_VOLUME - offset) >> 20, SMALL_VOLUME >> 20]
    assert existing["raw_offset"] == offset + existing["region_start"]
    assert existing["left_out"] == ["seq1m-q8-write"]
    assert doc["plan"]["workloads"] == ["seq1m-q8-read", "rnd4k-q8-read"]
    results = {(r["workload"], r["target"]) for r in doc["results"]}
    assert results == {(w, t) for w in ("seq1m-q8-read", "rnd4k-q8-read") for t in (raw, MAPPING)}
    assert doc["ranking"][0]["plain"] == raw
    assert [e["target"] for e in doc["ranking"][0]["overall"]] == [MAPPING]
    flat = " ".join(proc.stdout.split())
    assert flat.startswith("Run 1 (reads suite): 2 targets, 8 trials")
    assert f"Your volume /dev/mapper/{MAPPING}: dm-crypt" in flat
    # two trials under TCG: the sentence may be a cost, none measurable, or not clear yet
    said = f"on your volume {MAPPING} (aes-xts-plain64, 512-bit key)"
    assert said in flat and f"against its raw device {Path(loop).name}, the same sectors" in flat, flat
    assert "Writes were not run (seq1m-q8-write)" in flat
    assert "seq1m-q8-write not run: writes to your volume cannot be compared" in proc.stderr
    # nothing stored names a file on the volume, nor its key
    stored = json.dumps(doc)
    assert "letter.txt" not in stored and "documents" not in stored
    assert table.split()[4] not in stored


def test_run_existing_refuses_what_it_cannot_read_in_one_line(tmp_path: Path) -> None:
    """A path on no encrypted layer, a mapping that is not crypt, a write asked for: one line
    each, exit 2, nothing stored."""
    db = tmp_path / "refused.sqlite"
    plain = cli("run", "--existing", str(tmp_path), "--db", str(db))
    assert (plain.returncode, plain.stdout) == (2, "")
    assert plain.stderr.strip().startswith(
        f"cryptbench: error: --existing {tmp_path}: xfs on vda: no dm-crypt"
    )
    image = tmp_path / "linear.img"
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    loop = run("losetup", "--find", "--show", str(image))
    try:
        run("dmsetup", "create", "users-linear", "--table", f"0 16384 linear {loop} 0")
        try:
            linear = cli("run", "--existing", "/dev/mapper/users-linear", "--db", str(db))
        finally:
            run("dmsetup", "remove", "users-linear")
    finally:
        run("losetup", "--detach", loop)
    assert (linear.returncode, linear.stdout) == (2, "")
    assert linear.stderr.strip() == (
        "cryptbench: error: --existing /dev/mapper/users-linear: mapping users-linear is not a crypt "
        "mapping (its targets: linear)"
    )
    with users_luks_volume(tmp_path, mounted=False, size=SMALL_VOLUME):
        ram = cli("run", "--existing", f"/dev/mapper/{MAPPING}", "--ram", "--try-flags", "--db", str(db))
    assert (ram.returncode, ram.stdout) == (2, "")
    assert ram.stderr.strip() == (
        "cryptbench: error: --try-flags reads your volume; --ram writes its twin: run them one at a time"
    )
    assert not db.exists()
