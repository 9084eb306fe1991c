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
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from rich.console import Console

from cryptbench.analysis import document
from cryptbench.machine.session import Session
from cryptbench.measure.volume import CryptVolume
from cryptbench.model.errors import UsageError
from cryptbench.model.stack import Layer, LayerKind, Stack
from cryptbench.pipeline import existing as existing_pipeline
from cryptbench.pipeline.execute import Stored, in_session
from cryptbench.pipeline.existing import measure
from cryptbench.pipeline.shadow import ShadowKey
from cryptbench.planning.existing import existing_plan
from cryptbench.planning.flag_trial import FlagSet
from cryptbench.planning.plan import build_plan
from cryptbench.planning.request import RunRequest
from cryptbench.report import export_html, export_markdown, screens
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
        done = in_session(stored, store, progress, partial(measure, plan, None, store, progress))
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
        done = in_session(stored, store, NullProgress(), partial(measure, plan, None, store, NullProgress()))
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


def test_a_flag_trial_reads_each_shadow_at_the_mappings_offset_and_answers_against_own_flags(
    target_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--try-flags with its shadow mappings stood in for by copies of the "mapping" (this
    kernel has no device-mapper: the real shadows are tests/lab/test_existing_flags.py's):
    each flag set is a target of its own, read at the mapping's offset, interleaved with
    the others, held to the volume's own flags in the answer; the key is never stored."""
    volume = replace(stand_ins(tmp_path), options=("sector_size:4096", "allow_discards"))
    copies: dict[str, Path] = {}

    @contextmanager
    def stood_in(session: Session, v: CryptVolume, sets: tuple[FlagSet, ...], key: ShadowKey):
        for n, s in enumerate(sets):
            copies[s.name] = tmp_path / f"shadow-{n}"
            copies[s.name].write_bytes(v.mapping_node.read_bytes())
        yield dict(copies)

    monkeypatch.setattr(existing_pipeline, "shadows", stood_in)
    db = tmp_path / "f.sqlite"
    request = RunRequest(
        existing="x", target=str(target_dir), db=db, size="1M", repeats=2, seed=5, trial_time="0",
        try_flags=True,
    )  # fmt: skip
    plan = existing_plan(request, volume)
    plan = replace(plan, suite=replace(plan.suite, workloads=plan.suite.workloads[:1]))
    names = [s.name for s in plan.flag_sets]
    assert names[:2] == ["flags+no_read_workqueue", "flags+same_cpu_crypt"]
    key = ShadowKey("ab" * 64, "a stand-in")
    stored = Stored(plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, (), False)
    store = Store.open(db)
    try:
        done = in_session(stored, store, NullProgress(), partial(measure, plan, key, store, NullProgress()))
    finally:
        store.close()
    assert (done.status, done.exit_code) == ("complete", 0)
    doc = document.read(db, done.run_id)
    assert [(t.name, t.backend, t.baseline) for t in doc.targets] == [
        ("raw-vdz", "existing-raw", None),
        ("users-volume", "existing-dm-crypt", "raw-vdz"),
        *((n, "existing-flags", "raw-vdz") for n in names),
    ]
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT target, block, job_file FROM trials WHERE run_id = ?", (done.run_id,))
        trials = rows.fetchall()
    assert len(trials) == 2 * (2 + len(names))
    for target, _block, job in trials:
        if target in copies:
            assert f"filename={copies[target]}\n" in job
            assert (f"offset={plan.region_start}\n" in job) if plan.region_start else "offset=" not in job
    assert all(len({t for t, b, _j in trials if b == block}) == 2 + len(names) for _t, block, _j in trials)
    assert doc.plan.existing is not None
    flags = doc.plan.existing["flags"]
    assert flags["own"] == [] and flags["options"] == ["allow_discards"] and flags["luks2"] is True
    assert [s["target"] for s in flags["sets"]] == names
    console = Console(width=300, record=True)
    screens.render(doc, console, details=False, quiet=True)
    text = " ".join(console.export_text().split())
    # copies in one page cache: no set is faster beyond doubt, and the answer says so
    # every renderer reads the flag sets as targets of their own
    screens.render(doc, Console(width=300, record=True), details=True, quiet=False)
    assert said_in(export_markdown.render(doc)) and "flags+same_cpu_crypt" in export_html.render(doc, [])
    said = "No set of flags read your volume users-volume faster beyond doubt than its own (none)"
    assert f"{said}, over 1 read workload: no_read_workqueue added " in text
    assert "; same_cpu_crypt added " in text and "To set it" not in text
    assert text.count("against its raw device vdz") == 1  # the decryption sentence is the mapping's only
    with sqlite3.connect(db) as con:
        dump = "\n".join(con.iterdump())
    assert "ab" * 64 not in dump
    assert any("made with a stand-in" in n for n in doc.notes)


def test_the_flag_trials_options_are_refused_where_they_do_not_belong(tmp_path: Path) -> None:
    volume = stand_ins(tmp_path)
    with pytest.raises(UsageError, match=r"^--key-file goes with --try-flags: --existing alone reads"):
        existing_plan(RunRequest(existing="x", target=str(tmp_path), key_file="k"), volume)
    for asked, flag in (({"try_flags": True}, "--try-flags"), ({"key_file": "k"}, "--key-file")):
        with pytest.raises(
            UsageError, match=f"^{flag} goes with --existing: it tries your own volume's flags$"
        ):
            build_plan(RunRequest(backends="plain", target=str(tmp_path), **asked))  # type: ignore[arg-type]
    plan = existing_plan(RunRequest(existing="x", target=str(tmp_path)), volume)
    assert plan.flag_sets == () and "flags" not in plan.existing_json() and plan.crypttab is None


def said_in(markdown: str) -> bool:
    return "No set of flags read your volume users-volume faster beyond doubt" in " ".join(markdown.split())
