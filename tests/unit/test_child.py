"""A measured child (fio, tar, dd) is journaled while it runs and never outlives its trial."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from cryptbench.engines.child import run_child
from cryptbench.errors import TrialError
from cryptbench.session import Session


def _journal(s: Session) -> list[dict]:
    return [json.loads(line) for line in (s.run_dir / "journal.jsonl").read_text().splitlines()]


def test_a_child_is_journaled_then_released(tmp_path: Path) -> None:
    s = Session.create(tmp_path, registry=tmp_path / "reg")
    done = run_child(["sh", "-c", "echo out; echo err >&2; exit 3"], s, 10)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    entries = _journal(s)
    assert [e["op"] for e in entries] == ["acquire", "release"]
    assert (entries[0]["kind"], entries[0]["name"]) == ("process", "sh")
    s.close()


def test_a_child_past_its_time_is_stopped_and_the_trial_fails(tmp_path: Path) -> None:
    s = Session.create(tmp_path, registry=tmp_path / "reg")
    with pytest.raises(TrialError, match="sleep did not finish within 0 s"):
        run_child(["sleep", "30"], s, 0.3)
    pid = _journal(s)[0]["pid"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert [e["op"] for e in _journal(s)] == ["acquire", "release"]
    s.close()


def test_the_environment_is_the_one_given(tmp_path: Path) -> None:
    done = run_child(["sh", "-c", "echo $LC_ALL"], None, 10, {"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    assert done.stdout == "C\n"
