import sqlite3
from pathlib import Path

import pytest

from cryptbench.model.errors import StoreError
from cryptbench.store.database import MetricValue, Store, TrialRecord
from cryptbench.store.migrations import SCHEMA_VERSION


def _trial(seq: int) -> dict:
    return {
        "seq": seq,
        "block": 0,
        "repeat": 0,
        "workload": "w",
        "target": "plain",
        "started_at": "2026-01-01T00:00:00Z",
        "status": "ok",
        "raw_output": "{}",
    }


def test_new_database_is_migrated(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.sqlite")
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    store.close()


def test_trial_is_visible_to_another_connection_at_once(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    store = Store.open(path)
    run_id = store.insert_run("quick", {"seed": 1}, {}, "0")
    store.insert_trial(run_id, TrialRecord(**_trial(0)), [MetricValue("throughput", "bytes/s", 1e8)])
    other = sqlite3.connect(path)
    assert other.execute("SELECT count(*) FROM metrics").fetchone()[0] == 1
    other.close()
    store.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer"):
        Store.open(path)


def test_foreign_files_are_refused_and_left_intact(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n" * 100)
    with pytest.raises(StoreError, match="not a cryptbench database"):
        Store.open(text)
    assert text.read_text() == "my notes\n" * 100
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE mine (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not cryptbench's"):
        Store.open(other)
    with pytest.raises(StoreError, match="not a file"):
        Store.open(tmp_path)


def test_resolve_run(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.sqlite")
    with pytest.raises(StoreError, match="no runs"):
        store.resolve_run("latest")
    run_id = store.insert_run("quick", {}, {}, "0")
    assert store.resolve_run("latest") == run_id
    assert store.resolve_run(str(run_id)) == run_id
    with pytest.raises(StoreError, match="no run 99"):
        store.resolve_run("99")
    with pytest.raises(StoreError, match="not a run id"):
        store.resolve_run("last")
    store.close()


def test_a_runs_failure_is_noted_with_it_and_says_what_is_kept(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run("quick", {}, {}, "0")
    with pytest.raises(StoreError) as raised, store.failure_kept(run_id):
        raise StoreError("the disk went away")
    assert str(raised.value) == f"the disk went away; finished trials are kept (cryptbench show {run_id})"
    assert store.run_row(run_id).notes == ["failed: the disk went away"]
    # what is not the tool's own error (a bug, Ctrl-C) passes through unnoted
    with pytest.raises(KeyError), store.failure_kept(run_id):
        raise KeyError("x")
    assert store.run_row(run_id).notes == ["failed: the disk went away"]
    store.close()
