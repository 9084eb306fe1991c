"""Targets that write a file only from its start (rclone-crypt without its VFS cache):
which workloads they refuse and why, the run's writes made alike, the new file fio must
make itself, and the backing's sync counted inside a write's clock."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from cryptbench.backends import REGISTRY, Availability
from cryptbench.backends.rclone import FROM_START
from cryptbench.engines.fio import FioMeasurement
from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.model.errors import UsageError
from cryptbench.model.stored_run import RunPlan
from cryptbench.planning.suite import WorkloadSpec, builtin_suites, load_suite
from cryptbench.planning.targets import cannot_run, not_run, writes_at_an_offset
from cryptbench.trial.runner import durable
from cryptbench.trial.schedule import round_blocks
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


def test_builtin_tasks_that_write_are_left_out_and_your_commands_are_not() -> None:
    suites = [load_suite(name) for name in builtin_suites()]
    apps = {w.name: w for s in suites for w in s.workloads if not isinstance(w, WorkloadSpec)}
    writers = [w for w in apps.values() if w.writes and not w.runs_commands]
    commands = [w for w in apps.values() if w.runs_commands]
    assert writers and commands
    assert all(writes_at_an_offset(w) for w in writers)
    assert not any(writes_at_an_offset(w) for w in commands)


def test_the_random_writes_are_not_run_on_it_and_the_rest_are() -> None:
    quick = load_suite("quick")
    assert not_run("rclone-crypt", quick) == ["rnd4k-q32-write", "rnd4k-q1-write"]
    assert cannot_run("rclone-crypt", quick) is None  # four of the six it can
    assert not_run("gocryptfs", quick) == []  # it writes anywhere
    assert not_run("rclone-crypt", load_suite("example-gocryptfs-bench")) == []


RANDOM_WRITES = """
name = "random-writes"
[[workloads]]
name = "rnd4k-q1-write"
rw = "randwrite"
bs = "4K"
iodepth = 1
"""


def test_a_suite_it_can_run_nothing_of_is_refused(tmp_path: Path, rclone_here: None) -> None:
    suite = tmp_path / "random-writes.toml"
    suite.write_text(RANDOM_WRITES)
    why = cannot_run("rclone-crypt", load_suite(str(suite)))
    assert why == f"{FROM_START}; every workload of the random-writes suite writes at other offsets"
    with pytest.raises(UsageError, match=r"^backend rclone-crypt cannot run this suite: rclone's mount"):
        plan_with(tmp_path, backends="rclone-crypt", suite=str(suite))
    skipped = dict(plan_with(tmp_path, backends=None, suite=str(suite)).skipped)
    assert skipped["rclone-crypt"] == why  # among the defaults: skipped, with why


def test_the_plan_leaves_out_each_random_write_on_it_and_says_why(tmp_path: Path, rclone_here: None) -> None:
    plan = plan_with(tmp_path, backends="rclone-crypt,gocryptfs", suite="quick")
    left = {"rclone-crypt": FROM_START}
    assert plan.skip == {"rnd4k-q32-write": left, "rnd4k-q1-write": left}
    stored = plan.to_json()["not_run"]
    assert {(d["workload"], d["target"]) for d in stored} == {
        ("rnd4k-q32-write", "rclone-crypt"),
        ("rnd4k-q1-write", "rclone-crypt"),
    }
    assert RunPlan(plan.to_json()).not_run[("rnd4k-q1-write", "rclone-crypt")] == FROM_START
    # the run notes it, one note per target, and why every target's writes make a new file
    assert plan.notes == (
        "added plain as a baseline",
        "every target's write trials write a new file, since rclone-crypt can write a file only "
        "from its start",
        f"rnd4k-q32-write, rnd4k-q1-write not run on rclone-crypt: {FROM_START}",
    )
    # no question is asked of a trial not run; every other one is
    asked = {(q.workload, q.target) for q in plan.questions}
    assert ("rnd4k-q1-write", "gocryptfs") in asked and ("rnd4k-q1-read", "rclone-crypt") in asked
    assert not {(w, "rclone-crypt") for w in plan.skip} & asked
    # and no block holds one: every round, every other target runs
    quick = plan.suite.workloads
    for seed in range(20):
        for w, names in round_blocks(
            random.Random(seed), quick, ["plain", "rclone-crypt", "gocryptfs"], None, plan.skip
        ):
            assert ("rclone-crypt" in names) is (w.name not in plan.skip)
            assert {"plain", "gocryptfs"} <= set(names)


def test_among_the_defaults_it_runs_what_it_can(tmp_path: Path, rclone_here: None) -> None:
    plan = plan_with(tmp_path, backends=None, suite="quick")
    assert "rclone-crypt" in plan.backends and "rclone-crypt" not in dict(plan.skipped)
    assert plan.write_new_file is True  # with it, every target's writes make a new file


def test_with_it_every_targets_writes_make_a_new_file(tmp_path: Path, rclone_here: None) -> None:
    plan = plan_with(tmp_path, backends="rclone-crypt,plain", suite="example-gocryptfs-bench")
    assert plan.suite.write_new_file is False
    assert plan.from_start == ("rclone-crypt",)
    assert plan.write_new_file is True and plan.to_json()["write_new_file"] is True
    assert plan.skip == {}


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


def test_the_new_file_writes_have_room_of_their_own_beside_the_data_file(
    tmp_path: Path, rclone_here: None
) -> None:
    plan = plan_with(tmp_path, backends="rclone-crypt,gocryptfs", suite="quick")
    assert plan.write_new_file and plan.write_bytes == max(plan.size, plan.data_size_limit) > 0
    spec = next(t for t in plan.targets if t.backend == "gocryptfs")
    assert plan.holds[spec.name] == plan.target_bytes + plan.write_bytes
    # writes that overwrite the data file need no more room
    alone = plan_with(tmp_path, backends="gocryptfs", suite="quick")
    assert alone.write_bytes == 0 and alone.holds[alone.targets[-1].name] == alone.target_bytes
    # a disk image made anew before each write writes its data file: no room beside it
    images = plan_with(tmp_path, backends="image-raw-aes256", suite="images", size="16M")
    image = next(t for t in images.targets if t.backend == "image-raw-aes256")
    assert images.write_bytes > 0 and images.holds[image.name] == images.target_bytes
