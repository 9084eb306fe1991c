"""One fio trial through trial/runner.run_trial, with fio replaced by what fio printed
here (tests/fixtures/fio) and everything else real: the session, the store, the job file
on disk, the meters. What a trial decides: the job it writes (its passes, its cap, a new
file), what it stores when fio succeeds, fails, fills the disk or loses its helper, and
a backing synced inside the clock where fsync does not reach it."""

from __future__ import annotations

import dataclasses
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from cryptbench.backends.base import Helper, Target
from cryptbench.machine.session import Session
from cryptbench.measure.device import device_of
from cryptbench.model.errors import DiskFull, TargetLost, TrialError
from cryptbench.model.vocabulary import TrialStatus
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.store.database import Store
from cryptbench.trial import runner
from cryptbench.trial.context import Sizing, TrialContext, TrialSpec
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "fio"
WRITE = WorkloadSpec("seq1m-q8-write", "write", 1 << 20, 8)
READ = WorkloadSpec("rnd4k-q32-read", "randread", 4096, 32)
SIZE = 16 << 20


class Fio:
    """Stands in for engines/fio.run_fio: returns fio's own JSON for the job's workload
    (or raises what it is given), and keeps each job file's text as fio would read it."""

    def __init__(self, raises: Exception | None = None) -> None:
        self.raises = raises
        self.jobs: list[str] = []

    def __call__(self, jobfile: Path, session: Session | None = None, **_kw: object) -> str:
        text = jobfile.read_text()
        self.jobs.append(text)
        if self.raises is not None:
            raise self.raises
        name = "seq1m-q8-write-buffered" if "rw=write" in text else "rnd4k-q32-read-direct"
        return (FIXTURES / f"{name}.json").read_text()


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TrialContext, Target]]:
    # a unit test drops no cache of the host's: the drop is measure/cache.py's, tested there
    monkeypatch.setattr(runner, "make_cold", lambda target, files: "none (test)")
    session = Session.create(tmp_path, registry=tmp_path / "reg")
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run("t", {}, {}, "test")
    path = session.path("targets", "plain")
    path.mkdir(parents=True)
    target = Target("plain", "plain", False, None, path, (path,))
    try:
        yield TrialContext(session, store, run_id, SIZE, "psync", False), target
    finally:
        store.close()
        session.close()


def _spec(workload: WorkloadSpec, seq: int = 0) -> TrialSpec:
    return TrialSpec(seq, 0, 0, workload, "plain")


AS_ASKED = Sizing(SIZE)  # one whole pass, as a run's sizing starts


def run_trial(
    ctx: TrialContext,
    spec: TrialSpec,
    target: Target,
    direct: bool,
    seed: int,
    fio: Any,
    sizing: Sizing = AS_ASKED,
) -> bool:
    """runner.run_trial, its size decided as the Executor decides it (one pass, as asked, by default)."""
    assert isinstance(spec.workload, WorkloadSpec)
    sized = ctx.trial_size(sizing, spec.workload, target, direct)
    return runner.run_trial(ctx, spec, target, sized, seed, fio)


def test_a_trial_stores_fios_figures(run: tuple[TrialContext, Target]) -> None:
    ctx, target = run
    fio = Fio()
    assert run_trial(ctx, _spec(READ), target, True, 7, fio) is True
    (row,) = ctx.store.trial_rows(ctx.run_id)
    assert row.status == TrialStatus.OK and row.error is None
    values = ctx.store.trial_metrics(ctx.run_id)[row.id]
    assert values["throughput"][0] > 0 and values["iops"][0] > 0 and "backing_sync_seconds" not in values
    # the job it ran is the one stored, written where the run keeps its jobs
    assert fio.jobs[0] == ctx.session.path("jobs", "00000-rnd4k-q32-read-plain.fio").read_text()
    assert "rw=randread" in fio.jobs[0] and "direct=1" in fio.jobs[0]


def test_the_job_makes_the_calibrated_passes_only_where_they_are_honest(
    run: tuple[TrialContext, Target],
) -> None:
    ctx, target = run
    sized = Sizing(SIZE, passes={READ.name: 5}, time_cap=2.0)
    fio = Fio()
    run_trial(ctx, _spec(READ), target, True, 7, fio, sized)
    run_trial(ctx, _spec(READ, 1), target, False, 7, fio, sized)  # buffered: one pass
    assert "loops=5" in fio.jobs[0] and "runtime=2000ms" in fio.jobs[0]
    assert "loops" not in fio.jobs[1] and "runtime=2000ms" in fio.jobs[1]


def test_a_write_in_a_run_of_new_files_makes_its_file(run: tuple[TrialContext, Target]) -> None:
    ctx, target = run
    ctx = TrialContext(ctx.session, ctx.store, ctx.run_id, SIZE, "psync", False, True)
    fio = Fio()
    run_trial(ctx, _spec(WRITE), target, True, 7, fio, Sizing(SIZE, passes={WRITE.name: 4}))
    assert "create_on_open=1" in fio.jobs[0] and "loops" not in fio.jobs[0]


def test_a_failed_trial_is_stored_failed_with_fios_reason(run: tuple[TrialContext, Target]) -> None:
    ctx, target = run
    assert run_trial(ctx, _spec(READ), target, True, 7, Fio(TrialError("fio exited 1: bad"))) is False
    (row,) = ctx.store.trial_rows(ctx.run_id)
    assert row.status == TrialStatus.FAILED and row.error == "fio exited 1: bad"
    assert ctx.store.trial_metrics(ctx.run_id).get(row.id, {}) == {}


def test_a_full_disk_stops_the_run_after_storing_the_trial(run: tuple[TrialContext, Target]) -> None:
    ctx, target = run
    full = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(DiskFull, match="filled up during rnd4k-q32-read on plain"):
        run_trial(ctx, _spec(READ), target, True, 7, Fio(full))
    (row,) = ctx.store.trial_rows(ctx.run_id)
    assert row.status == TrialStatus.FAILED and "No space left on device" in (row.error or "")


def test_a_dead_helper_loses_the_target_before_its_trial(run: tuple[TrialContext, Target]) -> None:
    ctx, target = run
    proc = subprocess.Popen(["sleep", "30"])
    helper = Helper("daemon", proc.pid, psutil.Process(proc.pid).create_time())
    proc.kill()
    proc.wait()
    target.helpers = (helper,)
    fio = Fio()
    with pytest.raises(TargetLost, match=r"daemon \(pid \d+\) .* before this trial; target plain is lost"):
        run_trial(ctx, _spec(READ), target, True, 7, fio)
    assert fio.jobs == []  # fio never ran
    (row,) = ctx.store.trial_rows(ctx.run_id)
    assert row.status == TrialStatus.FAILED


def test_a_backing_fsync_does_not_reach_is_synced_inside_the_clock(run: tuple[TrialContext, Target]) -> None:
    ctx, target = run
    target.end_write = os.sync
    run_trial(ctx, _spec(WRITE), target, False, 7, Fio())
    run_trial(ctx, _spec(READ, 1), target, True, 7, Fio())  # a read needs no sync
    first, second = ctx.store.trial_rows(ctx.run_id)
    values = ctx.store.trial_metrics(ctx.run_id)
    assert values[first.id]["backing_sync_seconds"][0] >= 0
    assert "backing_sync_seconds" not in values[second.id]


def test_a_layers_own_commit_ends_each_write_inside_the_clock(
    run: tuple[TrialContext, Target], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZFS's zpool sync (Target.end_write) in place of sync(2), after fio and before the
    clock stops; a read ends with neither."""
    ctx, target = run
    done: list[str] = []
    target.end_write = lambda: done.append("committed")
    monkeypatch.setattr(runner.os, "sync", lambda: done.append("sync(2)"))
    run_trial(ctx, _spec(WRITE), target, False, 7, Fio())
    run_trial(ctx, _spec(READ, 1), target, True, 7, Fio())
    assert done == ["committed"]
    first, second = ctx.store.trial_rows(ctx.run_id)
    values = ctx.store.trial_metrics(ctx.run_id)
    assert values[first.id]["backing_sync_seconds"][0] >= 0
    assert "backing_sync_seconds" not in values[second.id]


def test_a_trial_records_what_the_scratch_device_read_and_wrote(
    run: tuple[TrialContext, Target], tmp_path: Path
) -> None:
    """The device's own counters around each trial: a cold read that came from a cache
    shows in device_bytes_read, whatever fio says it read."""
    ctx, target = run
    device = device_of(tmp_path)
    if device is None:
        pytest.skip(f"{tmp_path} is on no block device here (tmpfs): there is no counter to read")
    ctx = dataclasses.replace(ctx, device=device)
    assert run_trial(ctx, _spec(READ), target, True, 7, Fio()) is True
    (values,) = ctx.store.trial_metrics(ctx.run_id).values()
    assert values["device_bytes_read"][0] >= 0 and values["device_bytes_written"][0] >= 0
