import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cryptbench.errors import SafetyError
from cryptbench.resources import SecretFile
from cryptbench.session import MARKER, Session, candidate_run_dirs, recover


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
from cryptbench.session import Session
from cryptbench.resources import SecretFile
s = Session.create(Path(sys.argv[1]), registry=Path(sys.argv[2]))
p = s.path("key")
s.acquire(SecretFile(p))
p.write_text("secret")
print(s.run_dir, flush=True)
time.sleep(60)
"""


def test_recovery_after_sigkill(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(reg)], stdout=subprocess.PIPE, text=True
    )
    run_dir = Path(child.stdout.readline().strip())  # type: ignore[union-attr]
    # While the run lives, its lock protects it.
    assert recover(run_dir, reg) is None
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert candidate_run_dirs([tmp_path], reg) == [run_dir]
    messages = recover(run_dir, reg)
    assert messages == ["removed key file key", f"removed {run_dir}"]
    assert not run_dir.exists()
    assert (tmp_path / "cryptbench" / MARKER).exists()
    assert candidate_run_dirs([tmp_path], reg) == []
    assert not list(reg.glob("*.path"))
