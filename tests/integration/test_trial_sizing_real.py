"""Trial sizing with real fio: calibrated on the baseline, the same passes on every
direct target, one pass where a second would be dishonest, all of it in the run's notes
and job files. The counts are what this disk gives; what is checked is how they are used."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cryptbench.commands import run as run_cmd
from cryptbench.planning.plan import GROWTH_SHARE
from cryptbench.planning.request import RunRequest
from cryptbench.store.database import Store
from tests.support.cli import cli
from tests.support.targets import available

pytestmark = pytest.mark.integration

SEQ_SUITE = Path(__file__).parent.parent / "fixtures" / "suites" / "seq.toml"
SIZE = 8 << 20  # one pass lasts milliseconds: the trial time needs many


def _trials(db: Path, run_id: int) -> list[tuple[str, str, str, dict]]:
    store = Store.open(db)
    try:
        rows = store.db.execute(
            "SELECT workload, target, job_file, raw_output FROM trials WHERE run_id=? AND status='ok'",
            (run_id,),
        ).fetchall()
    finally:
        store.close()
    return [(w, t, job, json.loads(raw)["jobs"][0]) for w, t, job, raw in rows]


def _passes(job: str) -> int:
    m = re.search(r"^loops=(\d+)$", job, re.M)
    return int(m.group(1)) if m else 1


def _check_moved(side: dict, planned: int, where: object) -> None:
    """Every trial stops at twice the trial time (TRIAL_CAP, runtime=600ms here): a trial
    that ended before it moved all it was given; one stopped there (a loaded machine) moved
    what that time allowed, and no more."""
    if side["runtime"] < 0.6e3 * 0.95:
        assert side["io_bytes"] == planned, (where, side["io_bytes"], side["runtime"])
    else:
        assert 0 < side["io_bytes"] <= planned, (where, side["io_bytes"], side["runtime"])


def test_direct_trials_make_the_calibrated_passes_on_every_target(target_dir: Path, tmp_path: Path) -> None:
    # ext4-loop honours O_DIRECT here; gocryptfs does not, and so runs buffered beside them
    backends = ["plain", *available(["ext4-loop", "gocryptfs"])]
    db = tmp_path / "r.sqlite"
    request = RunRequest(
        suite=str(SEQ_SUITE),
        backends=",".join(backends),
        size="8M",
        repeats=2,
        seed=5,
        io_mode="direct",
        trial_time="0.3s",
        target=str(target_dir),
        db=db,
    )
    outcome = run_cmd.run(request)
    assert outcome.status == "complete" and outcome.exit_code == 0
    doc = outcome.document
    assert doc.plan.trial_time == 0.3
    note = next(n for n in doc.notes if n.startswith("trials sized to last"))
    trials = _trials(db, outcome.run_id)
    assert len(trials) == 2 * 2 * len(backends)
    direct = {t.name: t.io_mode == "direct" for t in doc.targets}
    assert direct["plain"]
    for workload in ("seq1m-q8-read", "seq1m-q8-write"):
        m = re.search(
            rf"{workload} (\d+) passes \(a pass of 8.0 MiB took \d+ ms on plain(, not the \d+ [^)]*)?\)", note
        )
        assert m, note
        count = int(m.group(1))
        assert count > 1, f"{workload}: an 8 MiB pass lasts milliseconds, yet one pass was chosen"
        direction = "write" if "write" in workload else "read"
        for w, t, job, raw in trials:
            if w == workload:
                # the same work on every direct target; one pass where the page cache is in the way
                expected = count if direct[t] else 1
                assert _passes(job) == expected, (t, job)
                assert re.search(r"^runtime=600ms$", job, re.M), job
                _check_moved(raw[direction], expected * SIZE, (t, job))


def test_buffered_trials_make_one_pass_and_are_called_short(target_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    proc = cli(
        *("run", "--backends", "plain", "--suite", str(SEQ_SUITE), "--size", "8M", "--repeats", "2"),
        *(
            "--io-mode",
            "buffered",
            "--trial-time",
            "0.3s",
            "--target",
            str(target_dir),
            "--db",
            str(db),
            "--json",
        ),
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert not any(n.startswith("trials sized") for n in doc["notes"])  # nothing to calibrate
    trials = _trials(db, doc["run_id"])
    # one pass each, stopped at twice the trial time at most (TRIAL_CAP)
    assert trials and all(_passes(job) == 1 and "runtime=600ms" in job for _w, _t, job, _raw in trials)
    short = [w for w in doc["warnings"] if w["kind"] == "short-trial"]
    assert {w["workload"] for w in short} == {"seq1m-q8-read", "seq1m-q8-write"}
    assert all("buffered trials and writes to a new file make one pass" in w["message"] for w in short)


def test_trial_time_is_checked(tmp_path: Path) -> None:
    bad = cli("run", "--trial-time", "soon", "--target", str(tmp_path), "--db", str(tmp_path / "r.sqlite"))
    assert bad.returncode == 2 and "--trial-time 'soon' is not a duration" in bad.stderr
    assert "Traceback" not in bad.stderr
    env = {**os.environ, "CRYPTBENCH_TRIAL_TIME": "2h"}
    env_bad = cli("run", "--target", str(tmp_path), "--db", str(tmp_path / "r.sqlite"), env=env)
    assert env_bad.returncode == 2 and "CRYPTBENCH_TRIAL_TIME 2h is longer than 10 min" in env_bad.stderr


def test_buffered_trials_get_a_data_file_grown_for_them(target_dir: Path, tmp_path: Path) -> None:
    # No --size: the tool's 64 MiB may grow, here to its share of the 1 GiB budget
    # (GROWTH_SHARE, over the targets); gocryptfs makes the run buffered where it runs.
    backends = ["plain", *available(["gocryptfs"])]
    db = tmp_path / "r.sqlite"
    request = RunRequest(
        suite=str(SEQ_SUITE),
        backends=",".join(backends),
        repeats=2,
        seed=5,
        io_mode="buffered",
        trial_time="0.3s",
        max_bytes="1G",
        target=str(target_dir),
        db=db,
    )
    outcome = run_cmd.run(request)
    assert outcome.status == "complete" and outcome.exit_code == 0
    doc = outcome.document
    limit = doc.plan.data_size_limit
    assert limit == int((1 << 30) * GROWTH_SHARE / len(backends)) // (1 << 20) * (1 << 20) > 64 << 20
    note = next(n for n in doc.notes if n.startswith(("data file grown", "the 64.0 MiB data file already")))
    trials = _trials(db, outcome.run_id)
    sizes = {int(re.search(r"^size=(\d+)$", job, re.M).group(1)) for _w, _t, job, _raw in trials}  # type: ignore[union-attr]
    assert len(sizes) == 1  # one data file size for every target and workload
    (size,) = sizes
    assert 64 << 20 <= size <= limit
    assert (size > 64 << 20) == note.startswith("data file grown")
    for w, _t, job, raw in trials:
        assert _passes(job) == 1  # buffered: one pass, never a loop over cached pages
        m = re.search(r"^io_size=(\d+)$", job, re.M)
        moved = int(m.group(1)) if m else size
        assert 64 << 20 <= moved <= size
        direction = "write" if "write" in w else "read"
        _check_moved(raw[direction], moved, (w, job))


def test_the_cap_stops_a_pass_that_would_last_far_longer(target_dir: Path) -> None:
    """Real fio on a job as a trial renders it (engines/jobs.py): a 256 MiB pass of random
    4 KiB reads at QD1, direct, lasts seconds here (65 536 reads); runtime= stops it at the
    cap, and the figure is what it moved in that time."""
    from cryptbench.engines.fio import parse_fio_json, run_fio
    from cryptbench.engines.jobs import JobOptions, render_job
    from cryptbench.planning.suite import WorkloadSpec, load_suite

    (spec,) = [w for w in load_suite("quick").workloads if w.name == "rnd4k-q1-read"]
    assert isinstance(spec, WorkloadSpec)
    data = target_dir / "data"
    size = 256 << 20
    with data.open("wb") as f:
        for _ in range(size >> 20):
            f.write(os.urandom(1 << 20))
        f.flush()
        os.fsync(f.fileno())  # on the disk before the clock starts: fio's invalidate finds no dirty page
    opts = JobOptions(data, size, True, "psync", False, 7, time_limit=0.3)
    job = target_dir / "capped.fio"
    job.write_text(render_job(spec, opts))
    m = parse_fio_json(run_fio(job))
    assert 0.25 <= m.runtime <= 0.6, m.runtime  # stopped at the cap (and fio's own ramp)
    assert 0 < m.io_bytes < size  # part of the pass
    assert m.throughput == pytest.approx(m.io_bytes / m.runtime, rel=0.05)
