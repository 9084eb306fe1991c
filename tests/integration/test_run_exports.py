"""`run --export-html/--export-csv/--export-md FILE` write the run as `report` would, each
file checked before the run starts; `--force` replaces a file cryptbench wrote, never
another."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import cli

pytestmark = pytest.mark.integration

TINY = ("--backends", "plain", "--size", "1M", "--repeats", "2", "--trial-time", "0", "--suite", "selftest")


def _runs(db: Path) -> int:
    with sqlite3.connect(db) as c:
        return int(c.execute("SELECT count(*) FROM runs").fetchone()[0])


def test_run_writes_its_exports_and_force_replaces_only_its_own(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    page, table, summary = tmp_path / "run.html", tmp_path / "run.csv", tmp_path / "run.md"
    files = ("--export-html", str(page), "--export-csv", str(table), "--export-md", str(summary))
    base = (*TINY, "--target", str(target_dir), "--db", str(db))
    first = cli("run", *base, *files)
    assert first.returncode == 0, first.stderr
    assert '<meta name="generator" content="cryptbench ' in page.read_text()
    assert table.read_text().startswith("run_id,run_started_at,hostname,")
    assert summary.read_text().startswith("**cryptbench run 1** ")
    assert f"wrote {page}" in first.stderr
    # the same files again: refused before anything runs, nothing stored
    again = cli("run", *base, *files)
    assert again.returncode == 2 and "exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert _runs(db) == 1
    # --force replaces what cryptbench wrote, with the new run's
    forced = cli("run", *base, *files, "--force")
    assert forced.returncode == 0, forced.stderr
    assert summary.read_text().startswith("**cryptbench run 2** ")
    # but never a file of the user's, and again before anything runs
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n")
    refused = cli("run", *base, "--export-md", str(mine), "--force")
    assert refused.returncode == 2 and "--force replaces only those" in refused.stderr
    assert mine.read_text() == "my notes\n" and _runs(db) == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left
