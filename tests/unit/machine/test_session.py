import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cryptbench.machine.resources import SecretFile
from cryptbench.machine.session import MARKER, Session, candidate_run_dirs, recover
from cryptbench.machine.system import filesystem_of
from cryptbench.model.errors import BusyError, SafetyError


def test_paths_cannot_leave_the_run_directory(tmp_path: Path) -> None:
    s = Session.create(tmp_path, registry=tmp_path / "reg")
    try:
        assert s.path("targets", "plain").is_relative_to(s.run_dir)
        for bad in (("..", "x"), ("/etc/passwd",), ("targets", "../../x")):
            with pytest.raises(SafetyError):
                s.path(*bad)
        (s.run_dir / "link").symlink_to("/etc")
        with pytest.raises(SafetyError):
            s.path("link", "passwd")
        with pytest.raises(SafetyError):
            s.check_inside(Path("/etc/passwd"))
    finally:
        s.close()
    assert not s.run_dir.exists()


def test_a_scratch_dir_cryptbench_did_not_make_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cryptbench").mkdir()
    (tmp_path / "cryptbench" / "precious").write_text("keep")
    with pytest.raises(SafetyError, match="not made by cryptbench"):
        Session.create(tmp_path, registry=tmp_path / "reg")
    assert (tmp_path / "cryptbench" / "precious").read_text() == "keep"


def test_release_all_runs_backwards_and_journals(tmp_path: Path) -> None:
    s = Session.create(tmp_path, registry=tmp_path / "reg")
    secrets = [s.path(f"k{i}") for i in range(3)]
    for p in secrets:
        s.acquire(SecretFile(p))
        p.write_text("secret")
    journal = s.run_dir / "journal.jsonl"
    messages = s.release_all()
    assert messages == [f"removed key file k{i}" for i in (2, 1, 0)]
    ops = [json.loads(line)["op"] for line in journal.read_text().splitlines()]
    assert ops == ["acquire"] * 3 + ["release"] * 3
    s.close()


CHILD = """
import os, sys, time
from pathlib import Path
from cryptbench.machine.session import Session
from cryptbench.machine.resources import SecretFile
s = Session.create(Path(sys.argv[1]), registry=Path(sys.argv[2]))
secret = s.secret_file("key", b"secret")
print(s.run_dir, flush=True)
print(secret.path, flush=True)
time.sleep(60)
"""


def test_recovery_after_sigkill(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(reg)], stdout=subprocess.PIPE, text=True
    )
    run_dir = Path(child.stdout.readline().strip())  # type: ignore[union-attr]
    key = Path(child.stdout.readline().strip())  # type: ignore[union-attr]
    # While the run lives, its lock protects it.
    assert recover(run_dir, reg) is None
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert candidate_run_dirs([tmp_path], reg) == [run_dir]
    messages = recover(run_dir, reg)
    assert messages == [
        "removed key file key",
        f"removed secret directory {key.parent}",
        f"removed {run_dir}",
    ]
    assert not run_dir.exists()
    assert not key.parent.exists()
    assert (tmp_path / "cryptbench" / MARKER).exists()
    assert candidate_run_dirs([tmp_path], reg) == []
    assert not list(reg.glob("*.path"))


def test_a_hostile_scratch_root_is_refused_untouched(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / MARKER).write_text("")
    # A link planted where the scratch root goes.
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "cryptbench").symlink_to(outside)
    with pytest.raises(SafetyError, match="symbolic link"):
        Session.create(tmp_path / "a", registry=tmp_path / "reg")
    # A marker that is a link to a file elsewhere.
    (tmp_path / "b" / "cryptbench").mkdir(parents=True)
    (tmp_path / "b" / "cryptbench" / MARKER).symlink_to(outside / MARKER)
    with pytest.raises(SafetyError, match="not made by cryptbench"):
        Session.create(tmp_path / "b", registry=tmp_path / "reg")
    # A root that other users can write to.
    (tmp_path / "c" / "cryptbench").mkdir(parents=True)
    (tmp_path / "c" / "cryptbench" / MARKER).write_text("")
    os.chmod(tmp_path / "c" / "cryptbench", 0o777)
    with pytest.raises(SafetyError, match="writable by other users"):
        Session.create(tmp_path / "c", registry=tmp_path / "reg")
    assert sorted(p.name for p in outside.iterdir()) == [MARKER]
    assert list((tmp_path / "c" / "cryptbench").iterdir()) == [tmp_path / "c" / "cryptbench" / MARKER]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_scratch_root_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cryptbench").mkdir()
    (tmp_path / "cryptbench" / MARKER).write_text("")
    os.chown(tmp_path / "cryptbench", 65534, 65534)
    with pytest.raises(SafetyError, match="belongs to uid 65534"):
        Session.create(tmp_path, registry=tmp_path / "reg")


def test_a_second_session_on_the_same_scratch_is_refused(tmp_path: Path) -> None:
    first = Session.create(tmp_path, registry=tmp_path / "reg")
    try:
        with pytest.raises(BusyError, match=f"pid {os.getpid()}.*disturb"):
            Session.create(tmp_path, registry=tmp_path / "reg")
        assert len(list((tmp_path / "cryptbench").glob("run-*"))) == 1
    finally:
        first.close()
    Session.create(tmp_path, registry=tmp_path / "reg").close()


def test_secret_files_live_privately_in_ram_and_go_at_close(tmp_path: Path) -> None:
    s = Session.create(tmp_path, registry=tmp_path / "reg")
    secret = s.secret_file("pw", b"hunter2")
    directory = secret.path.parent
    try:
        assert filesystem_of(secret.path).fstype in ("tmpfs", "ramfs")  # type: ignore[union-attr]
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        assert stat.S_IMODE(secret.path.stat().st_mode) == 0o600
        assert secret.path.read_bytes() == b"hunter2"
        assert not secret.path.is_relative_to(tmp_path)
        with pytest.raises(SafetyError):
            s.secret_file("../escape", b"x")
        assert s.release(secret) == "removed key file pw"
        assert not secret.path.exists()
        s.secret_file("other", b"x")
    finally:
        s.close()
    assert not directory.exists()


def test_an_empty_scratch_root_left_by_a_kill_is_adopted(tmp_path: Path) -> None:
    (tmp_path / "cryptbench").mkdir(mode=0o700)
    Session.create(tmp_path, registry=tmp_path / "reg").close()
    assert (tmp_path / "cryptbench" / MARKER).is_file()
