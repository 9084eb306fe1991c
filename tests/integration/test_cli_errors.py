"""Bad input: one line on stderr, exit status 2, no traceback, nothing stored lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--size", "12XB"], "unknown unit"),
        (["run", "--backends", "nope"], "unknown backend 'nope'"),
        (["run", "--target", "/nonexistent"], "does not exist"),
        (["run", "--target", "/etc/hostname"], "not a directory"),
        (["run", "--target", "/dev"], "lies under /dev"),
        (["run", "--repeats", "-2"], "--repeats"),
        (["run", "--repeats", "many"], "invalid int value"),
        (["run", "--suite", "/etc/passwd"], "is not valid TOML"),
        (["run", "--suite", "no-such-suite"], "unknown suite"),
        (["run", "--io-mode", "sideways"], "invalid choice"),
        (["show", "last"], None),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input(args: list[str], message: str | None, tmp_path: Path) -> None:
    proc = cli(*args, *(["--db", str(tmp_path / "r.sqlite")] if args[0] == "show" else []))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("cryptbench: error: ")
    assert "Traceback" not in proc.stderr
    if message:
        assert message in lines[0]


def test_a_database_that_is_not_ours_is_left_alone(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    for args in (["show", "latest"], ["history"], ["run", "--backends", "plain", "--size", "1M"]):
        proc = cli(*args, "--db", str(notes))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert notes.read_text() == "precious\n"


def test_unavailable_backend_says_why(tmp_path: Path) -> None:
    # A PATH without gocryptfs stands in for a machine that lacks it.
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = cli("run", "--backends", "gocryptfs", "--db", str(tmp_path / "r.sqlite"), env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        "cryptbench: error: backend gocryptfs is not available here: "
        "gocryptfs is not installed (apt-get install gocryptfs)"
    )
    listing = cli("backends", env=env)
    assert "gocryptfs is not installed" in listing.stdout


def test_backends_json_lists_every_backend_with_reasons() -> None:
    import json

    proc = cli("backends", "--json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert {r["name"] for r in rows} == {"plain", "ext4-loop", "fscrypt", "gocryptfs"}
    for r in rows:
        assert set(r) >= {"name", "available", "reason", "encrypted", "baseline"}
        assert r["available"] or r["reason"]
