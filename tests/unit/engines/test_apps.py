"""Application workloads' logic: deterministic inputs, parameters, arithmetic.

Each workload runs for real in tests/integration/test_apps_real.py.
"""

from __future__ import annotations

import hashlib
import sqlite3
import tarfile
from pathlib import Path
from typing import Any

import pytest

from cryptbench.engines.apps import APPS, AppEnv, AppResult, Phase
from cryptbench.engines.apps.data import TEXT_TABLE, incompressible, lognormal_sizes, text
from cryptbench.engines.apps.db_fsync import DbFsync
from cryptbench.engines.apps.dd_write import DdWrite, dd_error, parse_dd
from cryptbench.engines.apps.mail_thread import MailThread
from cryptbench.engines.apps.photo_import import PhotoImport, _preview
from cryptbench.engines.apps.source_tree import TARBALL, SourceTree
from cryptbench.engines.apps.write_series import WriteSeries, _label
from cryptbench.engines.metric_catalog import info
from cryptbench.measure.cpu import CpuUsage
from cryptbench.model.errors import TrialError, UsageError
from cryptbench.planning.suite import parse_suite
from cryptbench.trial.figures import app_metrics
from tests.support.paths import TESTS

MIB = 1 << 20


def env(tmp: Path, size: int, seed: int = 7) -> AppEnv:
    return AppEnv(tmp / "root", tmp / "inputs", tmp / "staging", size, seed, lambda: None)


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes() -> None:
    assert incompressible(1, 1000, "a") == incompressible(1, 1000, "a")
    assert incompressible(1, 1000, "a") != incompressible(2, 1000, "a")
    assert incompressible(1, 1000, "a") != incompressible(1, 1000, "b")
    t = text(3, 5000, "f")
    assert t == text(3, 5000, "f") and set(t) <= set(TEXT_TABLE) and b"\n" in t


def test_lognormal_sizes_cover_the_total_within_bounds() -> None:
    sizes = lognormal_sizes(5, 10 * MIB, 6 << 10, 1.0, 64, MIB)
    assert sizes == lognormal_sizes(5, 10 * MIB, 6 << 10, 1.0, 64, MIB)
    assert sum(sizes) >= 10 * MIB and sum(sizes) - 10 * MIB < MIB
    assert min(sizes) >= 1 and max(sizes) <= MIB
    median = sorted(sizes)[len(sizes) // 2]
    assert 3 << 10 < median < 12 << 10  # a spread around the asked median


@pytest.mark.parametrize(
    "workload",
    [
        PhotoImport("p", photo_size=256 << 10),
        SourceTree("s"),
        MailThread("m"),
    ],
    ids=lambda w: w.app,
)
def test_inputs_are_the_same_for_the_same_seed(workload: Any, tmp_path: Path) -> None:
    a, b, c = (env(tmp_path / x, 2 * MIB, seed=s) for x, s in (("a", 7), ("b", 7), ("c", 8)))
    for e in (a, b, c):
        workload.make_inputs(e)
    if isinstance(workload, MailThread):
        # SQLite's file bytes can differ with its page layout: compare the rows.
        rows = [
            sqlite3.connect(e.inputs / "Mail" / "index.sqlite").execute("SELECT * FROM messages").fetchall()
            for e in (a, b)
        ]
        assert rows[0] == rows[1]
        for e in (a, b, c):
            (e.inputs / "Mail" / "index.sqlite").unlink()
    assert digest(a.inputs) == digest(b.inputs)
    assert digest(a.inputs) != digest(c.inputs)


def test_source_tree_tarball_looks_like_a_tree(tmp_path: Path) -> None:
    e = env(tmp_path, 4 * MIB)
    w = SourceTree("s")
    w.make_inputs(e)
    with tarfile.open(e.inputs / TARBALL) as tar:
        members = tar.getmembers()
    files = [m for m in members if m.isfile()]
    dirs = [m for m in members if m.isdir()]
    assert len(files) == len(w.sizes(4 * MIB, 7)) and sum(m.size for m in files) == sum(w.sizes(4 * MIB, 7))
    assert len(dirs) > 5 and max(m.name.count("/") for m in files) >= 3
    assert all(not m.name.startswith("/") and ".." not in m.name for m in members)


def test_mail_store_holds_one_thread_of_42_replies(tmp_path: Path) -> None:
    e = env(tmp_path, 2 * MIB)
    MailThread("m").make_inputs(e)
    db = sqlite3.connect(e.inputs / "Mail" / "index.sqlite")
    (n,) = db.execute("SELECT count(*) FROM messages WHERE thread=1").fetchone()
    (total,) = db.execute("SELECT count(*) FROM messages").fetchone()
    assert n == 43 and total >= 200
    ids = [i for (i,) in db.execute("SELECT id FROM messages WHERE thread=1 ORDER BY id")]
    assert ids[-1] - ids[0] > total // 2  # spread through the store, not one run of files


def test_write_series_classes_double_up_to_a_quarter_of_the_size() -> None:
    w = WriteSeries("w")
    assert w.classes(64 * MIB) == [2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB]
    files = w.files(64 * MIB)
    assert [files.count(c) for c in w.classes(64 * MIB)] == [8, 4, 2, 1]
    assert w.target_bytes(64 * MIB) == sum(files) == 64 * MIB
    assert w.classes(2 * MIB) == [2 * MIB]  # one class at least
    assert _label(2 * MIB) == "2m" and _label(256 << 10) == "256k"


def test_db_fsync_scales_transactions_with_size() -> None:
    assert DbFsync("d").count(64 * MIB) == 1024
    assert DbFsync("d").count(MIB) == 16
    assert DbFsync("d").count(1 << 40) == 2000
    assert DbFsync("d", transactions=5).count(64 * MIB) == 5


def test_preview_is_an_eighth_each_way() -> None:
    data = incompressible(1, 2 * MIB, "p")
    preview = _preview(data)
    assert len(preview) == (2 * MIB // 2 // 1024 // 8) * (1024 // 8)
    assert preview == _preview(data)


def test_metric_arithmetic() -> None:
    w = PhotoImport("p", photo_size=MIB)
    result = AppResult(
        (
            Phase("copy", 2.0, 10 * MIB, 10),
            Phase("catalog", 0.5, 0, 10),
            Phase("previews", 1.5, 10 * MIB, 10),
        ),
        items=10,
    )
    cpu = CpuUsage(busy_seconds=2.0, utilization=0.25, helper_seconds={"x": 0.5}, wall_seconds=4.2)
    m = {v.name: v.value for v in app_metrics(w, result, cpu)}
    assert m["seconds"] == 4.0
    assert m["pictures_per_minute"] == pytest.approx(10 / 4.0 * 60)
    assert m["throughput"] == pytest.approx(20 * MIB / 4.0)
    assert m["copy.throughput"] == pytest.approx(10 * MIB / 2.0)
    assert m["copy.pictures_per_minute"] == pytest.approx(300.0)
    assert "catalog.throughput" not in m  # no bytes through the catalog phase
    assert m["catalog.seconds"] == 0.5
    assert m["cpu_seconds_per_gb"] == pytest.approx(2.0 / (20 * MIB / 1e9))
    assert m["helper_cpu_seconds"] == 0.5 and m["wall_seconds"] == 4.2
    units = {v.name: v.unit for v in app_metrics(w, result, cpu)}
    assert units["copy.seconds"] == "s" and units["pictures_per_minute"] == "pictures/min"
    assert info("previews.seconds").higher_is_better is False


def suite(*workloads: dict[str, Any]) -> Any:
    return parse_suite({"name": "t", "workloads": list(workloads)}, "test suite")


def test_suite_tables_make_app_workloads() -> None:
    s = suite(
        {"name": "imp", "app": "photo-import", "variant": "stage-then-move", "photo_size": "1M"},
        {"name": "seq", "rw": "read", "bs": "1M", "iodepth": 1},
    )
    imp = s.workloads[0]
    assert isinstance(imp, PhotoImport) and imp.variant == "stage-then-move" and imp.photo_size == MIB
    assert imp.is_write and imp.name == "imp"
    # each app under the name suites give it (docs/usage.md's app table is held to APPS in
    # test_docs_tables.py)
    assert APPS["photo-import"] is PhotoImport and all(cls.app == name for name, cls in APPS.items())


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"name": "x", "app": "lightroom"}, "unknown app 'lightroom'"),
        ({"name": "x", "app": "photo-import", "variant": "sideways"}, "variant must be one of"),
        ({"name": "x", "app": "photo-import", "photo_size": 5}, "photo_size must be a size"),
        ({"name": "x", "app": "photo-import", "photo_size": "1K"}, "photo_size must be from"),
        ({"name": "x", "app": "db-fsync", "transactions": True}, "transactions must be a whole number"),
        (
            {"name": "x", "app": "responsiveness", "bulk_io": "mmap"},
            "bulk_io must be one of buffered, direct",
        ),
        ({"name": "x", "app": "responsiveness", "seconds": 0}, "seconds must be a whole number from 1"),
        ({"name": "x", "app": "responsiveness", "probe_size": "4K"}, "probe_size must be from"),
        ({"name": "x", "app": "mail-thread", "rw": "read"}, "unknown key 'rw'"),
        ({"app": "mail-thread"}, "missing key 'name'"),
        ({"name": "X!", "app": "mail-thread"}, "must be lower-case"),
    ],
)
def test_bad_app_tables_are_refused(table: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        suite(table)


FIXTURES = TESTS / "fixtures" / "dd"


def test_dd_summary_lines_as_gnu_dd_printed_them_here() -> None:
    # Printed by `LC_ALL=C dd if=… of=… count=N bs=1M` (coreutils 9.1) on this machine.
    assert parse_dd((FIXTURES / "zero-4m.txt").read_text()) == (4 * MIB, pytest.approx(0.0140699))
    assert parse_dd((FIXTURES / "urandom-128m.txt").read_text()) == (128 * MIB, pytest.approx(0.722182))
    enospc = (FIXTURES / "enospc.txt").read_text()
    # the error line, not the summary, so a full target is recognised as DiskFull
    assert dd_error(enospc, 1) == "dd: error writing '/dev/full': No space left on device"
    with pytest.raises(TrialError, match="no transfer summary"):
        parse_dd("dd: failed to open 'x': Permission denied\n")


def test_dd_write_parameters_and_the_studys_command(tmp_path: Path) -> None:
    s = suite(
        {"name": "z", "app": "dd-write"},
        {"name": "r", "app": "dd-write", "data": "random", "style": "as-published"},
    )
    z, r = s.workloads
    assert isinstance(z, DdWrite) and (z.data, z.style) == ("zero", "durable")
    assert isinstance(r, DdWrite) and z.is_write
    e = AppEnv(tmp_path, tmp_path, tmp_path, 128 * MIB, 1, lambda: None, trial=3)
    assert r.command(e) == ["dd", "if=/dev/urandom", f"of={tmp_path}/test_rand3", "count=128", "bs=1M"]
    assert z.describe(MIB)["fsync"] is True and r.describe(MIB)["fsync"] is False
    with pytest.raises(UsageError, match="data must be one of zero, random"):
        suite({"name": "x", "app": "dd-write", "data": "ones"})
    with pytest.raises(UsageError, match="style must be one of durable, as-published"):
        suite({"name": "x", "app": "dd-write", "style": "fast"})


@pytest.mark.parametrize("data", ["zero", "random"])
def test_dd_write_durable_writes_the_same_bytes_for_the_same_seed(tmp_path: Path, data: str) -> None:
    w = DdWrite("d", data)
    a, b = env(tmp_path / "a", 3 * MIB + 512), env(tmp_path / "b", 3 * MIB + 512)
    ra, rb = w.run(a), w.run(b)
    fa, fb = a.root / w.file_name(1), b.root / w.file_name(1)
    assert fa.read_bytes() == fb.read_bytes() and fa.stat().st_size == 3 * MIB + 512
    assert (fa.read_bytes().count(0) == fa.stat().st_size) == (data == "zero")
    assert ra.bytes == rb.bytes == 3 * MIB + 512 and [p.name for p in ra.phases] == ["write"]
    w.clean(a)
    assert not a.root.exists()
