import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cryptbench.backends.base import Helper
from cryptbench.measure import cpu_timeline
from cryptbench.measure.cpu import CpuSnapshot
from cryptbench.measure.cpu_timeline import CpuTimeline, Sampler
from cryptbench.store.database import MetricValue, Store, TrialRecord


def _snap(wall: float, busy: float, **helpers: float) -> CpuSnapshot:
    return CpuSnapshot(busy, wall * 2, dict(helpers), wall, {})


def test_samples_are_cores_busy_per_interval() -> None:
    t = CpuTimeline(1000.0)
    t.add(_snap(10.0, 5.0, gocryptfs=1.0), _snap(10.5, 5.75, gocryptfs=1.25), origin=10.0)
    t.add(_snap(10.5, 5.75, gocryptfs=1.25), _snap(11.0, 5.8, gocryptfs=1.25), origin=10.0)
    assert t.ends == [0.5, 1.0]
    assert t.system == pytest.approx([1.5, 0.1])
    assert t.helpers == {"gocryptfs": [0.5, 0.0]}


def test_a_helper_first_seen_late_is_zero_before_and_never_negative() -> None:
    t = CpuTimeline(0.0)
    t.add(_snap(0.0, 0.0), _snap(1.0, 1.0), origin=0.0)
    t.add(_snap(1.0, 1.0), _snap(2.0, 2.0, cryfs=0.5), origin=0.0)
    t.add(_snap(2.0, 2.0, cryfs=0.5), _snap(3.0, 3.0, cryfs=0.0), origin=0.0)  # restarted: counter fell
    assert t.helpers == {"cryfs": [0.0, 0.5, 0.0]}
    assert len(t.system) == len(t.ends) == 3


def test_long_trials_are_merged_weighted_by_span(monkeypatch) -> None:
    monkeypatch.setattr(cpu_timeline, "MAX_SAMPLES", 4)
    t = CpuTimeline(0.0)
    walls = [0.0, 1.0, 3.0, 4.0, 5.0, 6.0]
    busy = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0]  # cores: 1, 0, 1, 0, 2
    for a, b, x, y in zip(walls, walls[1:], busy, busy[1:], strict=False):
        t.add(_snap(a, x), _snap(b, y), origin=0.0)
    # five samples exceed four: (0-1, 1-3) -> 1/3 core over 3 s, (3-4, 4-5) -> 0.5, (5-6) kept
    assert t.ends == [3.0, 5.0, 6.0]
    assert t.system == pytest.approx([1 / 3, 0.5, 2.0])
    assert CpuTimeline.from_json(t.to_json()).ends == t.ends


@pytest.mark.timed
def test_sampler_sees_a_busy_helper_for_real(tmp_path: Path) -> None:
    # A real process spinning on one core stands in for a FUSE daemon. It spins until it
    # has had 0.8 s of CPU, however loaded the machine (the lab's guest runs beside), and
    # the sampler must account for that CPU, whatever its windows' peaks.
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend=time.process_time()+0.8\nwhile time.process_time()<end: pass",
        ]
    )
    try:
        with Sampler(
            (Helper("spinner", busy.pid, psutil.Process(busy.pid).create_time()),), interval=0.1
        ) as s:
            busy.wait()
            time.sleep(0.05)
    finally:
        busy.kill()
        busy.wait()
    t = s.timeline
    assert len(t.ends) >= 5 and t.ends == sorted(t.ends)
    spans = [b - a for a, b in zip([0.0, *t.ends], t.ends, strict=False)]
    seen = sum(c * s for c, s in zip(t.helpers["spinner"], spans, strict=True))  # core-seconds
    assert seen >= 0.6, (t.helpers, t.ends)  # of its 0.8 s: the sampler's first window may start late
    system = sum(c * s for c, s in zip(t.system, spans, strict=True))
    assert system >= seen - 0.15  # the helper is part of the system's figure
    assert t.started_at > 1.7e9


def test_store_keeps_a_trials_timeline(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.sqlite")
    run_id = store.insert_run("quick", {"seed": 1}, {}, "0")
    timeline = {"started_at": 1.0, "ends": [0.25], "system": [1.5], "helpers": {"gocryptfs": [0.75]}}
    row = {
        "seq": 0,
        "block": 0,
        "repeat": 0,
        "workload": "w",
        "target": "t",
        "started_at": "x",
        "status": "ok",
    }
    trial_id = store.insert_trial(
        run_id, TrialRecord(**row, cpu_timeline=timeline), [MetricValue("iops", "1/s", 1.0)]
    )
    store.insert_trial(run_id, TrialRecord(**{**row, "seq": 1}), [])
    assert store.cpu_timelines(run_id) == {trial_id: timeline}
    store.close()


def test_a_short_tail_is_folded_into_the_last_sample() -> None:
    t = CpuTimeline(0.0)
    t.add(_snap(0.0, 0.0, d=0.0), _snap(0.25, 0.25, d=0.0), origin=0.0)  # 1 core, helper idle
    t.extend_last(_snap(0.25, 0.25, d=0.0), _snap(0.26, 0.27, d=0.01), origin=0.0)  # 10 ms: 2 cores
    assert t.ends == [0.26]
    assert t.system == pytest.approx([0.27 / 0.26])  # not a sample of 2 cores on its own
    assert t.helpers["d"] == pytest.approx([0.01 / 0.26])
