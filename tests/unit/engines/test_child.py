"""A measured child (fio, tar, dd) is journaled while it runs and never outlives its trial."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from cryptbench.engines.child import run_child
from cryptbench.machine.session import Session
from cryptbench.model.errors import TrialError


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


def test_what_the_child_started_is_stopped_with_it(tmp_path: Path) -> None:
    # fio forks a process per job; a shell puts a command in the background. Both are in
    # the child's session, and must end with it: this one ignores SIGTERM, as a stuck job would.
    marker = tmp_path / "started"
    script = f"sh -c 'trap \"\" TERM; echo $$ > {marker}; exec sleep 300' & wait"
    with pytest.raises(TrialError, match="did not finish"):
        run_child(["sh", "-c", script], None, 5.0)  # long enough for the marker on a loaded machine
    grandchild = int(marker.read_text())
    try:
        # SIGKILL is delivered as the kernel schedules it: a moment, not a timing bound
        _gone, alive = psutil.wait_procs([psutil.Process(grandchild)], timeout=10)
    except psutil.NoSuchProcess:
        alive = []
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], f"{grandchild} outlived the child"
