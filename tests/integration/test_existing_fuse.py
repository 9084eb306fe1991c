"""run --existing on a user's own FUSE-encrypted directory, on this machine, through the
command line as a user runs it: a gocryptfs mount made as a user makes one, with files of
theirs on it; the same files read through the mount and as their ciphertext, with real
fio. What must hold: the answer is what the overlay costs reads of those files, with the
space their ciphertext takes; no byte of a file or of its ciphertext changes; nothing
stored and no job names a file of the user's; and the refusals are one line each."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from tests.support.cli import cli
from tests.support.targets import need_backend, requires_root
from tests.support.users_mounts import users_gocryptfs, users_securefs

pytestmark = [pytest.mark.integration, requires_root]
MIB = 1 << 20


def fill(plain: Path) -> list[Path]:
    """The user's files: some of 1.5 MiB (a 1 MiB read holds in each), some small, one empty."""
    docs = plain / "docs" / "2026"
    docs.mkdir(parents=True)
    made = [docs / f"report-{i}.bin" for i in range(4)] + [plain / "docs" / f"note-{i}.txt" for i in range(5)]
    for i, path in enumerate(made):
        path.write_bytes(os.urandom(3 * MIB // 2 if i < 4 else 20_000 + i))
    (plain / "docs" / "empty").touch()
    return made


def snapshot(*tops: Path) -> dict[str, tuple[str, int]]:
    """Every file under `tops`: its digest and its modification time (ns)."""
    out = {}
    for top in tops:
        for path in sorted(p for p in top.rglob("*") if p.is_file()):
            out[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return out


def stored_text(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return "\n".join(conn.iterdump())


def test_a_users_gocryptfs_files_are_read_against_their_ciphertext_and_nothing_changes(
    target_dir: Path, tmp_path: Path
) -> None:
    need_backend("gocryptfs")
    with users_gocryptfs(tmp_path) as plain:
        made = fill(plain)
        cipher = tmp_path / "cipher"
        before = snapshot(plain, cipher)
        db = tmp_path / "e.sqlite"
        args = ["run", "--existing", str(plain / "docs"), "--target", str(target_dir), "--db", str(db)]
        done = cli(*args, "--size", "8M", "--repeats", "3", "--trial-time", "0", "--seed", "5")
        assert done.returncode == 0, done.stderr
        after = snapshot(plain, cipher)
        text = stored_text(db)
        with sqlite3.connect(db) as conn:
            jobs = [row[0] for row in conn.execute("select job_file from trials")]
            statuses = {row[0] for row in conn.execute("select status from trials")}
    flat = " ".join(done.stdout.split())
    assert f"Your files {plain / 'docs'}: gocryptfs on" in flat, flat
    assert f"reads of your files in {plain / 'docs'} (gocryptfs)" in flat, flat
    assert f"against their ciphertext in {cipher}, the same" in flat, flat
    assert "files read through each, over 3 read workloads" in flat, flat
    assert "Their ciphertext takes " in flat and "% space." in flat, flat
    assert "Writes were not run (seq1m-q8-write, rnd4k-q32-write, rnd4k-q1-write)" in flat, flat
    assert statuses == {"ok"}
    # both views read, and only as descriptors: no job names a path
    assert len(jobs) >= 2 * 3 * 3
    assert all("filename=/dev/fd/" in j and "/tmp" not in j and str(plain) not in j for j in jobs)
    assert before == after, "a file or its ciphertext changed"
    names = [p.name for p in made] + [Path(p).name for p in before if p.startswith(str(cipher))]
    assert [n for n in names if n in text] == [], "the store names a file of the user's"


def test_an_overlay_that_pairs_no_file_is_read_whole_and_a_subdirectory_refused(
    target_dir: Path, tmp_path: Path
) -> None:
    need_backend("securefs")
    with users_securefs(tmp_path) as plain:
        (plain / "sub").mkdir()
        for i in range(3):
            (plain / "sub" / f"f{i}").write_bytes(os.urandom(MIB + i))
        db = tmp_path / "s.sqlite"
        common = ["--target", str(target_dir), "--db", str(db), "--repeats", "2", "--trial-time", "0"]
        sub = cli("run", "--existing", str(plain / "sub"), *common)
        small = cli("run", "--existing", str(plain), *common, "--size", "1M")
        done = cli("run", "--existing", str(plain), *common, "--size", "16M", "--suite", "quick")
    assert (sub.returncode, sub.stdout) == (2, "")
    assert sub.stderr.strip() == (
        f"cryptbench: error: --existing {plain / 'sub'}: securefs does not show which ciphertext is "
        f"which file, so only its whole mount is read against its whole cipher directory: give {plain}"
    )
    assert small.returncode == 2 and small.stderr.count("\n") == 1, small.stderr
    assert "that is more than --size 1.0 MiB" in small.stderr
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    assert f"reads of your files in {plain} (securefs)" in flat, flat
    assert "every file read through each (3 through the mount)" in flat, flat


def test_what_a_fuse_run_cannot_honour_is_refused_in_one_line(target_dir: Path, tmp_path: Path) -> None:
    need_backend("gocryptfs")
    with users_gocryptfs(tmp_path) as plain:
        (plain / "a").write_bytes(os.urandom(64 * 1024))
        (plain / "big").write_bytes(os.urandom(2 * MIB))
        common = [
            "run",
            "--existing",
            str(plain),
            "--target",
            str(target_dir),
            "--db",
            str(tmp_path / "r.db"),
        ]
        direct = cli(*common, "--io-mode", "direct")
        tiny = cli(*common, "--size", "1K")
    assert (direct.returncode, tiny.returncode) == (2, 2)
    assert direct.stderr.strip() == (
        "cryptbench: error: --io-mode: --existing reads a FUSE mount buffered, every cache dropped "
        "before each trial (an overlay does not take O_DIRECT as a block device does)"
    )
    assert tiny.stderr.strip() == (
        f"cryptbench: error: --existing {plain}: its smallest file holds 64.0 KiB, more than "
        "--size 1.0 KiB: give a larger --size"
    )
    assert not (tmp_path / "r.db").exists(), "a refused run stored something"
