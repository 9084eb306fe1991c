"""Targets that write a file only from its start (rclone-crypt without its VFS cache):
which workloads they refuse and why, the run's writes made alike, the new file fio must
make itself, and the backing's sync counted inside a write's clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY, Availability
from cryptbench.backends.rclone import FROM_START
from cryptbench.engines.fio import FioMeasurement
from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.errors import UsageError
from cryptbench.plan import cannot_run, writes_at_an_offset
from cryptbench.runner import durable
from cryptbench.suite import WorkloadSpec, builtin_suites, load_suite
from tests.support.documents import plan_with


@pytest.fixture
def rclone_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """rclone-crypt available, whatever this machine has: the plan's logic is under test."""
    monkeypatch.setattr(REGISTRY["rclone-crypt"], "probe", lambda: Availability(True))


@pytest.mark.parametrize(
    ("rw", "offsets"),
    [("write", False), ("read", False), ("randread", False), ("randwrite", True)],
)
def test_only_a_write_from_the_start_is_a_write_from_the_start(rw: str, offsets: bool) -> None:
    assert writes_at_an_offset(WorkloadSpec("w", rw, 4096, 1)) is offsets


def test_builtin_tasks_that_write_are_refused_and_your_commands_are_not() -> None:
    suites = [load_suite(name) for name in builtin_suites()]
    apps = {w.name: w for s in suites for w in s.workloads if not isinstance(w, WorkloadSpec)}
    writers = [w for w in apps.values() if w.writes and not w.runs_commands]
    commands = [w for w in apps.values() if w.runs_commands]
    assert writers and commands
    assert all(writes_at_an_offset(w) for w in writers)
    assert not any(writes_at_an_offset(w) for w in commands)


def test_the_refusal_names_the_workloads_and_rclones_reason() -> None:
    quick = load_suite("quick")
    why = cannot_run("rclone-crypt", quick)
    assert why == f"{FROM_START}; the quick suite writes at other offsets (rnd4k-q32-write, rnd4k-q1-write)"
    assert cannot_run("gocryptfs", quick) is None  # it writes anywhere
    assert cannot_run("rclone-crypt", load_suite("example-gocryptfs-bench")) is None


def test_asked_for_with_random_writes_it_is_bad_input(tmp_path: Path, rclone_here: None) -> None:
    with pytest.raises(UsageError, match=r"^backend rclone-crypt cannot run this suite: rclone mount"):
        plan_with(tmp_path, backends="rclone-crypt", suite="quick")


def test_among_the_defaults_it_is_skipped_with_the_reason(tmp_path: Path, rclone_here: None) -> None:
    plan = plan_with(tmp_path, backends=None, suite="quick")
    skipped = dict(plan.skipped)
    assert skipped["rclone-crypt"].startswith(FROM_START)
    assert "rclone-crypt" not in plan.backends
    assert plan.write_new_file is False  # nothing in the run writes only from the start


def test_with_it_every_targets_writes_make_a_new_file(tmp_path: Path, rclone_here: None) -> None:
    plan = plan_with(tmp_path, backends="rclone-crypt,plain", suite="example-gocryptfs-bench")
    assert plan.suite.write_new_file is False
    assert plan.from_start() == ["rclone-crypt"]
    assert plan.write_new_file is True and plan.to_json()["write_new_file"] is True


def _opts(new_file: bool) -> JobOptions:
    return JobOptions(Path("/scratch/d.dat"), 8 << 20, False, "psync", False, 1, new_file=new_file)


def test_a_new_file_is_made_by_the_jobs_own_open() -> None:
    write = WorkloadSpec("w", "write", 1 << 20, 1)
    assert "create_on_open=1" in render_job(write, _opts(True)).splitlines()
    # an overwrite opens the file it laid out: no create
    assert "create_on_open=1" not in render_job(write, _opts(False)).splitlines()
    assert "create_on_open=1" in render_layout(_opts(False)).splitlines()


def _fio(runtime: float) -> FioMeasurement:
    return FioMeasurement("write", 100e6, 100.0, int(100e6 * runtime), runtime, 0.01, 0.02, 0.03, 1.0, 2.0)


def test_the_backings_sync_is_inside_the_clock() -> None:
    m = durable(_fio(2.0), 0.5)
    assert m.runtime == 2.5
    assert m.throughput == pytest.approx(200e6 / 2.5)
    assert m.iops == pytest.approx(100.0 * 2.0 / 2.5)
    assert m.lat_p99 == 0.02  # each write's latency is its own
    assert durable(_fio(2.0), None) == _fio(2.0)
