"""Bad input: one line on stderr, exit status 2, no traceback, nothing stored lost."""

# Over 60 s of make test (111 s in the fresh-clone run of caa3502, 2026-11-29, in lane 2 at
# idle priority beside lane 1 and the guest; 25 s here alone): forty refusals, each a start
# of the command line as a user types it. Off the critical path since it moved to lane 2.
from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from cryptbench.machine.session import Session
from tests.support.cli import argv, cli
from tests.support.targets import requires_root

# Refused before anything is made: it runs in make test's lane 2, beside lane 1.
pytestmark = [pytest.mark.integration, pytest.mark.beside]


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
        (["run", "--ioengine", "spdk"], "invalid choice"),
        (["run", "--precision", "tight"], "is not a percentage"),
        (["run", "--precision", "80%"], "--precision must be from 0.1% to 50%"),
        (["run", "--repeats", "5", "--precision", "5%"], "--repeats fixes the number of trials"),
        (["run", "--min-repeats", "4", "--max-repeats", "3"], "--max-repeats 3 is below --min-repeats 4"),
        (["run", "--min-repeats", "1"], "--min-repeats must be at least 2"),
        (["run", "--max-time", "0"], "--max-time must be longer than zero"),
        (["run", "--max-time", "soon"], "is not a duration"),
        (["run", "--max-bytes", "0"], "--max-bytes must be more than zero"),
        (["selftest", "--size", "8M"], "selftest needs --size of at least 32.0 MiB"),
        (["show", "last"], None),
        (["report", "--csv", "-", "--markdown"], "each print to stdout"),
        (["compare", "1", "2", "--metric", "x"], "no run 1 in"),
        (["history", "--limit", "0"], "--limit must be at least 1"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input(args: list[str], message: str | None, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    if args[0] == "compare":
        db.write_bytes(b"")  # an empty file: no runs, and not a database someone lost
    proc = cli(*args, *(["--db", str(db)] if args[0] in ("show", "report", "compare", "history") else []))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("cryptbench: error: ")
    assert "Traceback" not in proc.stderr
    if message:
        assert message in lines[0]


def test_a_reader_that_goes_away_ends_the_output_quietly() -> None:
    """`cryptbench backends --json | head -c1`: the pipe's reader closed before the output."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            argv("backends", "--json"), stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")


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
    import json

    listing = {r["name"]: r for r in json.loads(cli("backends", "--json", env=env).stdout)}
    assert listing["gocryptfs"]["reason"] == "gocryptfs is not installed (apt-get install gocryptfs)"


def test_backends_json_lists_every_backend_with_reasons() -> None:
    import json

    proc = cli("backends", "--json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    from cryptbench.backends import REGISTRY

    assert [r["name"] for r in rows] == list(REGISTRY)
    expected = {
        "plain",
        "fscrypt",
        "gocryptfs",
        "securefs",
        "cryfs",
        "encfs",
        "luks-aes256",
        "image-qcow2-aes256",
    }
    assert expected <= set(REGISTRY)
    for r in rows:
        assert set(r) >= {"name", "available", "reason", "encrypted", "baseline"}
        assert r["available"] or r["reason"]


def _refused(proc: subprocess.CompletedProcess[str], message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cryptbench: error: "), proc.stderr
    assert message in lines[0], lines[0]


@requires_root
def test_a_device_node_is_never_a_target(tmp_path: Path) -> None:
    node = tmp_path / "disk"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers
    _refused(cli("run", "--target", str(node), "--db", str(tmp_path / "r.sqlite")), "is a character device")
    assert not (tmp_path / "r.sqlite").exists()


@requires_root
def test_a_read_only_filesystem_is_refused(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], check=True)
    try:
        _refused(cli("run", "--target", str(ro), "--db", str(tmp_path / "r.sqlite")), "read-only filesystem")
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_a_scratch_dir_not_made_by_cryptbench_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / "cryptbench").mkdir()
    (tmp_path / "cryptbench" / "thesis.tex").write_text("precious")
    proc = cli("run", "--target", str(tmp_path), "--db", str(tmp_path / "r.sqlite"))
    _refused(proc, "was not made by cryptbench")
    assert [p.name for p in (tmp_path / "cryptbench").iterdir()] == ["thesis.tex"]


def test_no_room_is_refused_with_the_numbers(tmp_path: Path) -> None:
    proc = cli("run", "--backends", "plain", "--size", "1T", "--target", str(tmp_path))
    _refused(proc, "not enough free space")
    assert re.search(r"needs [\d.]+ [KMGT]iB plus 256.0 MiB margin, [\d.]+ [KMGT]iB is free", proc.stderr)


def test_a_second_run_on_a_busy_scratch_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    first = Session.create(tmp_path)
    try:
        proc = cli("run", "--backends", "plain", "--size", "1M", "--target", str(tmp_path), "--db", str(db))
        _refused(proc, f"another cryptbench run (pid {os.getpid()})")
    finally:
        first.close()
    assert not db.exists() or sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("mode", "content", "message"),
    [
        (0o644, b"secret\n", "readable by other users"),
        (0o600, b"", "is empty"),
        (0o600, b"two\nlines\n", "one line"),
    ],
)
def test_bad_passphrase_files_are_refused(tmp_path: Path, mode: int, content: bytes, message: str) -> None:
    f = tmp_path / "pass"
    f.write_bytes(content)
    f.chmod(mode)
    proc = cli("run", "--backends", "plain", "--passphrase-file", str(f), "--target", str(tmp_path))
    _refused(proc, message)
    assert "secret" not in proc.stderr and "lines" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [["show", "latest"], ["history"], ["report", "latest", "--markdown"], ["check", "--max-overhead", "30%"],
     ["compare", "1", "2"]],
)  # fmt: skip
def test_every_reader_refuses_a_database_path_that_cannot_exist_alike(
    args: list[str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-dir" / "r.sqlite"
    proc = cli(*args, "--db", str(missing))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        proc.stderr.strip()
        == f"cryptbench: error: no results database at {str(missing)!r} (run `cryptbench run` first)"
    )
    assert not missing.parent.exists()  # nothing made on the way
