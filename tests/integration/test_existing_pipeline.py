"""run --existing's pipeline (pipeline/existing.py) with real fio, on this machine, whose
kernel has no device-mapper: the volume's two block devices stand in as two files, the
"device" holding the "mapping"'s bytes XORed, past a header of the data offset's length.
What is tested is the rest: each trial's job reads its own view at its own offset,
read-only, interleaved and stored; the answer says decryption's cost; neither file
changes. The real volume (a LUKS2 mapping and its loop device) is tests/lab/test_existing.py's."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from rich.console import Console

from cryptbench.analysis import document
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.pipeline.execute import Stored, in_session
from cryptbench.pipeline.existing import measure
from cryptbench.planning.existing import existing_plan
from cryptbench.planning.request import RunRequest
from cryptbench.report import screens
from cryptbench.store.database import Store
from cryptbench.trial.context import NullProgress

pytestmark = pytest.mark.integration
MIB = 1 << 20
OFFSET = 2 * MIB  # bytes: where the "mapping"'s data starts on the "device"


def stand_ins(where: Path) -> CryptVolume:
    """A "mapping" of 8 MiB of random bytes and its "device": a header, then those bytes XORed."""
    plain = os.urandom(8 * MIB)
    mapping, device = where / "mapping", where / "device"
    mapping.write_bytes(plain)
    device.write_bytes(os.urandom(OFFSET) + bytes(b ^ 0x5A for b in plain))
    crypt = Layer(
        LayerKind.DM_CRYPT,
        "dm-0 (users-volume)",
        True,
        0,
        (("format", "LUKS2"), ("cipher", "aes-xts-plain64"), ("key", "512-bit key"), ("flags", "none")),
    )
    disk = Layer(LayerKind.DISK, "vdz", False, 1)
    return CryptVolume(
        mapping="users-volume",
        mapping_node=mapping,
        device="vdz",
        device_node=device,
        data_offset=OFFSET,
        size=8 * MIB,
        sector=4096,
        device_block=512,
        layer=crypt,
        stack=Stack("/dev/mapper/users-volume", (crypt, disk)),
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_both_views_are_read_at_their_offsets_interleaved_and_the_answer_is_decryptions_cost(
    target_dir: Path, tmp_path: Path
) -> None:
    volume = stand_ins(tmp_path)
    before = digest(volume.mapping_node), digest(volume.device_node)
    db = tmp_path / "e.sqlite"
    request = RunRequest(
        existing="x", target=str(target_dir), db=db, size="4M", repeats=3, seed=11, trial_time="0"
    )
    plan = existing_plan(request, volume)
    assert plan.region_start in (0, MIB, 2 * MIB, 3 * MIB, 4 * MIB)
    stored = Stored(plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, (), False)
    store = Store.open(db)
    progress = NullProgress()
    try:
        done = in_session(stored, store, progress, partial(measure, plan, store, progress))
    finally:
        store.close()
    assert (done.status, done.exit_code) == ("complete", 0)
    assert (digest(volume.mapping_node), digest(volume.device_node)) == before
    doc = document.read(db, done.run_id)
    raw, mapping = "raw-vdz", "users-volume"
    assert [(t.name, t.encrypted, t.encryption_verified) for t in doc.targets] == [
        (raw, False, None),
        (mapping, True, True),  # the stand-in's bytes differ from the "device"'s: XORed
    ]
    # three rounds of the quick suite's three reads on both, each block both targets
    with sqlite3.connect(db) as con:
        trials = con.execute(
            "SELECT target, block, status, job_file FROM trials WHERE run_id = ?", (done.run_id,)
        )
        rows = trials.fetchall()
    assert len(rows) == 3 * 3 * 2 and all(status == "ok" for _t, _b, status, _j in rows)
    for target, _block, _status, job in rows:
        on_raw = target == raw
        node = volume.device_node if on_raw else volume.mapping_node
        assert f"filename={node}\n" in job
        assert (
            f"offset={plan.raw_offset}\n" in job
            if on_raw
            else (f"offset={plan.region_start}\n" in job if plan.region_start else "offset=" not in job)
        )
        assert "direct=1\n" in job and f"size={4 * MIB}\n" in job
    blocks: dict[int, set[str]] = {}
    for target, block, _status, _job in rows:
        blocks.setdefault(block, set()).add(target)
    assert all(names == {raw, mapping} for names in blocks.values())
    assert doc.ranking[0].plain == raw and [e.target for e in doc.ranking[0].overall] == [mapping]
    console = Console(width=200, record=True)
    screens.render(doc, console, details=False, quiet=False)
    text = " ".join(console.export_text().split())
    assert text.startswith(f"Run {done.run_id} (quick suite): 2 targets, 18 trials")
    assert "Your volume /dev/mapper/users-volume: dm-crypt (aes-xts-plain64, 512-bit key) on vdz" in text
    # the stand-ins are files in the page cache of one disk: no difference to tell, said so
    said = "costs reads on your volume users-volume (aes-xts-plain64, 512-bit key)"
    assert said in text
    assert "against its raw device vdz, the same sectors read through each, over 3 read workloads" in text
    assert "Writes were not run (seq1m-q8-write, rnd4k-q32-write, rnd4k-q1-write)" in text
    assert "plain here is encrypted" not in text
    assert doc.plan.existing is not None and doc.plan.existing["left_out"] == list(plan.left_out)
    assert json.dumps(doc.to_json())  # the document's JSON holds it as any run's


def test_a_mapping_whose_bytes_are_its_devices_is_not_ranked(target_dir: Path, tmp_path: Path) -> None:
    volume = stand_ins(tmp_path)
    volume.device_node.write_bytes(os.urandom(OFFSET) + volume.mapping_node.read_bytes())  # cipher_null
    db = tmp_path / "n.sqlite"
    request = RunRequest(existing="x", target=str(target_dir), db=db, size="1M", repeats=2, trial_time="0")
    plan = existing_plan(request, replace(volume))
    plan = replace(plan, suite=replace(plan.suite, workloads=plan.suite.workloads[:1]))
    stored = Stored(plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, (), False)
    store = Store.open(db)
    try:
        done = in_session(stored, store, NullProgress(), partial(measure, plan, store, NullProgress()))
    finally:
        store.close()
    doc = document.read(db, done.run_id)
    assert [t.encryption_verified for t in doc.targets] == [None, False]
    assert any("this mapping does not encrypt them, so it is not ranked" in n for n in doc.notes)
    console = Console(width=200, record=True)
    screens.render(doc, console, details=False, quiet=True)
    text = " ".join(console.export_text().split())
    said = "What decryption costs reads on your volume users-volume (aes-xts-plain64, 512-bit key)"
    assert f"{said} is not known: encryption not verified." in text
