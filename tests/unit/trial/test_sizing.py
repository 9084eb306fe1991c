"""Trial sizing: how many passes over its data file a fio trial makes so that it lasts
the trial time, within the byte budget, and only where a second pass is honest.

The calibration's logic runs here against a fake fio that times passes like a device
with a start-up cost; tests/integration/test_trial_sizing_real.py runs real fio."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cryptbench.backends.base import Target
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine.session import Session
from cryptbench.model.errors import TrialError
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial import sizing
from cryptbench.trial.context import NullProgress, Sizing, TrialContext, TrialSize
from cryptbench.trial.sizing import MARGIN, MAX_PASSES, calibrate, passes_for, within_budget
from tests.support.paths import TESTS
from tests.support.sessions import scratch_session

FIXTURE = json.loads((TESTS / "fixtures/fio/rnd4k-q32-read-direct.json").read_text())
SIZE = 64 << 20
SEQ_READ = WorkloadSpec("seq-read", "read", 1 << 20, 8)
SEQ_WRITE = WorkloadSpec("seq-write", "write", 1 << 20, 8)
SLOW_READ = WorkloadSpec("slow-read", "randread", 4096, 1)


def test_passes_for_reaches_the_trial_time_with_a_margin() -> None:
    assert passes_for(0.027, 1.0) == 45  # ceil(1.2 / 0.027)
    assert 45 * 0.027 >= 1.0
    assert passes_for(1.3, 1.0) == 1  # one pass already lasts
    assert passes_for(0.9, 1.0) == 2
    assert passes_for(0.5, 0.0) == 1  # --trial-time 0: one pass
    assert passes_for(1e-7, 1.0) == MAX_PASSES
    assert passes_for(0.0, 1.0) == MAX_PASSES


def test_within_budget_cuts_only_the_writes_in_proportion() -> None:
    wanted = {"seq-read": 40, "seq-write": 30, "rnd-write": 8}
    repeating = {"seq-write": 2, "rnd-write": 2}
    single = {"seq-write": 1, "rnd-write": 1}
    # no budget, or room enough: as wanted
    size = {"seq-write": SIZE, "rnd-write": SIZE}
    assert within_budget(wanted, repeating, single, size, 3, None) == wanted
    need = 3 * SIZE * (30 * 2 + 8 * 2 + 2)  # the minimum rounds' writes, one-pass targets included
    assert within_budget(wanted, repeating, single, size, 3, int(need / sizing.BUDGET_SHARE) + 1) == wanted
    # a quarter of that room: each write workload's passes cut to about a quarter, reads untouched
    cut = within_budget(wanted, repeating, single, size, 3, int(need / sizing.BUDGET_SHARE / 4))
    assert cut["seq-read"] == 40
    assert 6 <= cut["seq-write"] <= 7 and cut["rnd-write"] == 1
    spent = 3 * SIZE * (cut["seq-write"] * 2 + cut["rnd-write"] * 2 + 2)
    assert spent <= need / 4 + 3 * SIZE * 2  # within the room, but for the floor of one pass
    # no room at all: one pass each, never none
    assert within_budget(wanted, repeating, single, size, 3, 1) == {
        "seq-read": 40,
        "seq-write": 1,
        "rnd-write": 1,
    }


def test_more_passes_need_direct_io_and_are_in_the_job() -> None:
    with pytest.raises(ValueError, match="direct I/O"):
        JobOptions(Path("/x/d"), SIZE, False, "psync", False, 1, passes=2)
    with pytest.raises(ValueError):
        JobOptions(Path("/x/d"), SIZE, True, "psync", False, 1, passes=0)
    text = render_job(SEQ_READ, JobOptions(Path("/x/d"), SIZE, True, "psync", False, 1, passes=12))
    assert "loops=12" in text and "runtime=" not in text
    one = render_job(SEQ_READ, JobOptions(Path("/x/d"), SIZE, True, "psync", False, 1))
    assert "loops" not in one  # one pass: the job file as before sizing
    limited = render_job(SEQ_READ, JobOptions(Path("/x/d"), SIZE, True, "psync", False, 1, time_limit=1.2))
    assert "runtime=1200ms" in limited


def test_a_trials_size_is_decided_in_one_place() -> None:
    """TrialContext.trial_size: the calibrated passes only where a second pass is honest, the
    file's size, a slower workload's bytes a pass and the run's cap (the Sizing's), and
    whether a write makes a new file (the run's), in one record."""
    ctx = TrialContext(None, None, 1, SIZE, "psync", False)
    sized = Sizing(2 * SIZE, passes={"seq-read": 9, "seq-write": 5}, moved={"slow-read": SIZE}, time_cap=2.0)
    plain, image = SimpleNamespace(state=None), SimpleNamespace(state="fresh")

    def trial(w: WorkloadSpec, target: Any, direct: bool, run: TrialContext = ctx) -> TrialSize:
        return run.trial_size(sized, w, target, direct)

    assert trial(SEQ_READ, plain, direct=True) == TrialSize(True, False, 9, 2 * SIZE, None, 2.0)
    assert trial(SEQ_READ, plain, direct=False).passes == 1  # the page cache
    assert trial(SLOW_READ, plain, direct=True) == TrialSize(True, False, 1, 2 * SIZE, SIZE, 2.0)
    # a write on a target made anew before it writes a new file: one pass, a first write
    assert trial(SEQ_WRITE, image, direct=True) == TrialSize(True, True, 1, 2 * SIZE, None, 2.0)
    assert trial(SEQ_WRITE, plain, direct=True).passes == 5  # overwrites
    # in a run whose writes all make new files, on every target; a read never does
    every = replace(ctx, write_new_file=True)
    assert trial(SEQ_WRITE, plain, direct=True, run=every).new_file
    assert not trial(SEQ_READ, image, direct=True, run=every).new_file
    assert ctx.writes_new_files(image) and not ctx.writes_new_files(plain)
    # as asked, before sizing decided anything: one whole pass, no cap
    assert Sizing(SIZE).trial_size(SEQ_READ, True, False) == TrialSize(True, False, 1, SIZE, None, None)


class FakeFio:
    """Times a job like a device: each run costs `startup` seconds, each pass its bytes
    at the workload's rate on the target; fio's runtime= stops it early. Records the jobs."""

    def __init__(self, rates: dict[tuple[str, str], float], startup: float = 0.02) -> None:
        self.rates, self.startup = rates, startup
        self.jobs: list[tuple[str, str]] = []  # (target directory name, job text)
        self.fail: set[str] = set()

    def __call__(
        self, jobfile: Path, session: Any = None, *, readonly: bool = False, cgroup: Any = None
    ) -> str:
        text = jobfile.read_text()
        name = re.search(r"^\[(?!global)(.+)\]$", text, re.M).group(1)  # type: ignore[union-attr]
        target = Path(re.search(r"^filename=(.+)$", text, re.M).group(1)).parent.name  # type: ignore[union-attr]
        self.jobs.append((target, text))
        if name in self.fail:
            raise TrialError("fio exited with status 1: no such device")
        loops = int(m.group(1)) if (m := re.search(r"^loops=(\d+)$", text, re.M)) else 1
        limit = int(m.group(1)) / 1e3 if (m := re.search(r"^runtime=(\d+)ms$", text, re.M)) else None
        rate = self.rates[(name, target)]
        seconds = loops * SIZE / rate + self.startup
        moved = loops * SIZE
        if limit is not None and seconds > limit:
            seconds, moved = limit, int((limit - self.startup) * rate)
        doc = copy.deepcopy(FIXTURE)
        job = doc["jobs"][0]
        direction = "write" if "write" in re.search(r"^rw=(.+)$", text, re.M).group(1) else "read"  # type: ignore[union-attr]
        for d in ("read", "write"):
            job[d]["io_bytes"] = moved if d == direction else 0
        job[direction]["bw_bytes"] = int(moved / seconds)
        job[direction]["runtime"] = int(seconds * 1e3)
        job["jobname"] = name
        return json.dumps(doc)


class Dirs:
    """Targets that are directories in the session: enough for a job's file names."""

    def __init__(self, session: Session, names: list[str]) -> None:
        self.targets = {}
        for n in names:
            path = session.path("targets", n)
            path.mkdir(parents=True, exist_ok=True)
            self.targets[n] = Target(n, "fake", n != "plain", None, path, (path,))

    def __getitem__(self, name: str) -> Target:
        return self.targets[name]

    def reset(self, name: str) -> Target:
        raise AssertionError("calibration never makes a target anew")

    def lay_out(self, target: Target, ctx: TrialContext, sizing: Sizing) -> None:
        raise AssertionError("calibration runs on laid-out targets")


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Session]:
    # direct I/O has no page cache to drop; dropping the host's would only slow the test
    monkeypatch.setattr(sizing, "make_cold", lambda target, files: "none (test)")
    with scratch_session(tmp_path) as s:
        yield s


def _calibrate(session: Session, fio: FakeFio, names: list[str], **kw: Any) -> Any:
    ctx = TrialContext(session, None, 1, SIZE, "psync", False)
    targets = Dirs(session, names)
    args = {
        "direct": {n: True for n in names},
        "workloads": [SEQ_READ, SEQ_WRITE, SLOW_READ],
        "baselines": ["plain"],
        "trial_time": 1.0,
        "new_file": {n: False for n in names},
        "rounds": 3,
        "budget": None,
    }
    args.update(kw)
    asked = sizing.Asked(
        tuple(args["workloads"]),
        {w.name: 1 for w in args["workloads"]},
        args["trial_time"],
        rounds=args["rounds"],
        budget=args["budget"],
    )
    return calibrate(
        ctx,
        Sizing(SIZE),
        targets,
        args["direct"],
        asked,
        args["baselines"],
        args["new_file"],
        NullProgress(),
        fio,
    )


def _rates(**by_target: tuple[float, float, float]) -> dict[tuple[str, str], float]:
    """(seq-read, seq-write, slow-read) bytes/s per target."""
    out = {}
    for t, rates in by_target.items():
        for w, r in zip((SEQ_READ, SEQ_WRITE, SLOW_READ), rates, strict=True):
            out[(w.name, t)] = r
    return out


def test_calibration_makes_each_trial_last_the_trial_time_on_its_baseline(session: Session) -> None:
    fio = FakeFio(_rates(plain=(2e9, 1e9, 20e6), gocryptfs=(0.5e9, 0.3e9, 10e6)))
    passes, found, failed = _calibrate(session, fio, ["plain", "gocryptfs"])
    assert failed == []
    # only the baseline is calibrated on
    assert {t for t, _ in fio.jobs} == {"plain"}
    by = {c.workload: c for c in found}
    for w, rate in ((SEQ_READ, 2e9), (SEQ_WRITE, 1e9)):
        p = passes[w.name]
        assert p * SIZE / rate >= 1.0, w.name  # the trial lasts the trial time…
        assert (p - 1) * SIZE / rate < 1.0 * MARGIN + 0.05, w.name  # …and not much more
        assert by[w.name].target == "plain" and by[w.name].passes == p == by[w.name].wanted
    # a pass that lasts longer than the trial time: one pass, learnt from a run cut at the limit
    assert passes["slow-read"] == 1
    slow = [text for _t, text in fio.jobs if "[slow-read]" in text]
    assert len(slow) == 1 and f"runtime={round(MARGIN * 1e3)}ms" in slow[0]
    assert by["slow-read"].pass_seconds == pytest.approx(SIZE / 20e6, rel=0.05)
    # every run after the first is a whole one, and at most CALIBRATION_RUNS per workload
    for w in (SEQ_READ, SEQ_WRITE):
        runs = [text for _t, text in fio.jobs if f"[{w.name}]" in text]
        assert 2 <= len(runs) <= sizing.CALIBRATION_RUNS
        assert all("runtime=" not in text for text in runs[1:])


def test_the_most_any_baseline_needs_is_taken(session: Session) -> None:
    # ext4-loop is a baseline too (of the image targets), and faster at reads here
    fio = FakeFio(_rates(plain=(1e9, 1e9, 20e6), **{"ext4-loop": (3e9, 0.5e9, 20e6)}))
    passes, found, _ = _calibrate(session, fio, ["plain", "ext4-loop"], baselines=["plain", "ext4-loop"])
    by = {c.workload: c for c in found}
    assert by["seq-read"].target == "ext4-loop" and passes["seq-read"] * SIZE / 3e9 >= 1.0
    assert by["seq-write"].target == "plain" and passes["seq-write"] * SIZE / 1e9 >= 1.0


def test_no_passes_where_a_second_would_be_dishonest(session: Session) -> None:
    fio = FakeFio(_rates(plain=(2e9, 1e9, 20e6)))
    # buffered baseline: nothing calibrated, every trial one pass
    passes, found, _ = _calibrate(session, fio, ["plain"], direct={"plain": False})
    assert passes == {} and found == [] and fio.jobs == []
    # writes to a new file: the writes make one pass, the reads are calibrated
    passes, _found, _ = _calibrate(session, fio, ["plain"], new_file={"plain": True})
    assert "seq-write" not in passes and passes["seq-read"] > 1
    assert not any("[seq-write]" in text for _t, text in fio.jobs)
    # --trial-time 0: no calibration at all
    fio.jobs.clear()
    passes, found, _ = _calibrate(session, fio, ["plain"], trial_time=0.0)
    assert passes == {} and fio.jobs == []


def test_the_byte_budget_bounds_the_writes(session: Session) -> None:
    fio = FakeFio(_rates(plain=(2e9, 1e9, 20e6), gocryptfs=(0.5e9, 0.3e9, 10e6)))
    free, _, _ = _calibrate(session, fio, ["plain", "gocryptfs"])
    budget = 3 * SIZE * 2 * 4  # room for 4 passes a write trial, over 3 rounds on both targets
    cut, found, _ = _calibrate(session, fio, ["plain", "gocryptfs"], budget=int(budget / sizing.BUDGET_SHARE))
    assert cut["seq-read"] == free["seq-read"]
    assert cut["seq-write"] == 4 < free["seq-write"]
    c = next(c for c in found if c.workload == "seq-write")
    assert (c.passes, c.wanted) == (4, free["seq-write"])
    assert "byte budget" in c.describe() and "4 passes" in c.describe()


def test_a_failing_calibration_is_reported_and_leaves_one_pass(session: Session) -> None:
    fio = FakeFio(_rates(plain=(2e9, 1e9, 20e6)))
    fio.fail = {"seq-read"}
    passes, _found, failed = _calibrate(session, fio, ["plain"])
    assert "seq-read" not in passes and passes["seq-write"] > 1
    assert len(failed) == 1 and failed[0].startswith("seq-read on plain: fio exited with status 1")


def test_grown_size_lasts_the_trial_time_within_its_bounds() -> None:
    mib = 1 << 20
    rates = {"seq-read": 1.2e9, "slow-read": 40e6}
    # the fastest workload's pass lasts the trial time, a margin over, in whole MiB
    size = sizing.grown_size(rates, 1.0, 64 * mib, 8 << 30, mib, {})
    assert size % mib == 0 and 1.2e9 * MARGIN <= size < 1.2e9 * MARGIN + mib
    # never below what was asked, never above the limit
    assert sizing.grown_size({"slow-read": 1e6}, 1.0, 64 * mib, 8 << 30, mib, {}) == 64 * mib
    assert sizing.grown_size(rates, 1.0, 64 * mib, 512 * mib, mib, {}) == 512 * mib
    # a write capped by its share of the byte budget does not size the file for the reads
    writes = {"seq-write": 1.5e9, "slow-read": 40e6}
    assert sizing.grown_size(writes, 1.0, 64 * mib, 8 << 30, mib, {"seq-write": 100 * mib}) == 100 * mib


def test_slower_workloads_move_only_what_their_trial_time_needs() -> None:
    mib = 1 << 20
    rates = {"seq-read": 1.2e9, "rnd-read": 200e6, "slow-read": 40e6}
    blocks = {"seq-read": mib, "rnd-read": 4096, "slow-read": 4096}
    file_bytes = sizing.grown_size(rates, 1.0, 64 * mib, 8 << 30, mib, {})
    moved = sizing.moved_bytes(rates, blocks, 1.0, 64 * mib, file_bytes, {})
    assert "seq-read" not in moved  # the file was sized for it: the whole of it
    assert moved["rnd-read"] % 4096 == 0 and 200e6 * MARGIN <= moved["rnd-read"] < 200e6 * MARGIN + 4096
    assert moved["slow-read"] == 64 * mib  # never fewer bytes than asked for
    # a write's cap (its share of the byte budget) binds, in whole blocks, above what was asked
    capped = sizing.moved_bytes(rates, blocks, 1.0, 64 * mib, file_bytes, {"rnd-read": 100 * mib + 5})
    assert capped["rnd-read"] == 100 * mib
    floor = sizing.moved_bytes(rates, blocks, 1.0, 64 * mib, file_bytes, {"seq-read": mib})
    assert floor["seq-read"] == 64 * mib


def test_growth_measures_one_buffered_pass_on_each_baseline(session: Session) -> None:
    fio = FakeFio(_rates(plain=(1.2e9, 0.8e9, 40e6), **{"ext4-loop": (1.5e9, 0.7e9, 30e6)}))
    ctx = TrialContext(session, None, 1, SIZE, "psync", False)
    targets = Dirs(session, ["plain", "ext4-loop", "gocryptfs"])
    workloads = [SEQ_READ, SEQ_WRITE, SLOW_READ]
    asked = sizing.Asked(tuple(workloads), {w.name: 1 for w in workloads}, 1.0, limit=4 << 30)
    as_asked = Sizing(SIZE)
    growth, failed = sizing.grow(
        ctx, as_asked, targets, asked, ["plain", "ext4-loop"], 4 << 30, NullProgress(), fio
    )
    assert failed == [] and growth is not None
    # one run per workload and baseline, buffered, one pass, cut at the trial time
    assert sorted(t for t, _ in fio.jobs) == ["ext4-loop"] * 3 + ["plain"] * 3
    for _t, text in fio.jobs:
        assert "direct=0" in text and "loops" not in text and f"runtime={round(MARGIN * 1e3)}ms" in text
    # the fastest baseline's rate per workload, the file sized for the fastest workload
    assert growth.rates["seq-read"] == pytest.approx(1.5e9 * SIZE / (SIZE + 1.5e9 * fio.startup), rel=1e-3)
    assert growth.size >= growth.rates["seq-read"] * MARGIN and growth.size % (1 << 20) == 0
    assert set(growth.moved) == {"seq-write", "slow-read"}
    assert growth.moved["slow-read"] == SIZE
    said = growth.describe(SIZE, 1.0)
    assert said.startswith("data file grown from 64.0 MiB to ") and "seq-read" in said
    # a limit below what the trial time needs: grown to the limit, and said so
    fio.jobs.clear()
    capped, _ = sizing.grow(
        ctx, as_asked, targets, replace(asked, limit=512 << 20), ["plain"], 100 << 20, NullProgress(), fio
    )
    assert capped is not None and capped.size == 512 << 20
    assert capped.moved["seq-write"] == 100 << 20  # a write's share of the byte budget
    assert capped.sized_by == growth.sized_by == "seq-read"  # the fastest read, not a capped write
    assert "its limit (its share of the byte budget: a larger --max-bytes or --size" in capped.describe(
        SIZE, 1.0
    )


def test_growth_reports_what_it_could_not_measure(session: Session) -> None:
    fio = FakeFio(_rates(plain=(1.2e9, 0.8e9, 40e6)))
    fio.fail = {"seq-read", "seq-write", "slow-read"}
    ctx = TrialContext(session, None, 1, SIZE, "psync", False)
    seeds = {"seq-read": 1, "seq-write": 1, "slow-read": 1}
    asked = sizing.Asked((SEQ_READ, SEQ_WRITE, SLOW_READ), seeds, 1.0, limit=4 << 30)
    growth, failed = sizing.grow(
        ctx, Sizing(SIZE), Dirs(session, ["plain"]), asked, ["plain"], 4 << 30, NullProgress(), fio
    )
    assert growth is None and len(failed) == 3 and failed[0].startswith("seq-read on plain: fio exited")


def test_a_pass_over_part_of_the_file_is_in_the_job() -> None:
    opts = JobOptions(Path("/x/d"), 1 << 30, False, "psync", False, 1, io_size=80 << 20)
    assert "io_size=83886080" in render_job(SLOW_READ, opts)
    whole = JobOptions(Path("/x/d"), 1 << 30, False, "psync", False, 1, io_size=1 << 30)
    assert "io_size" not in render_job(SLOW_READ, whole)


def test_the_baselines_of_some_targets_are_those_compared_with_else_all_of_them() -> None:
    asked = sizing.Asked((SEQ_READ,), {"seq-read": 1}, 1.0, bases=frozenset({"plain", "ext4-loop"}))
    assert asked.baselines(["gocryptfs", "ext4-loop", "fscrypt", "plain"]) == ["ext4-loop", "plain"]
    assert asked.baselines(["gocryptfs", "cryfs"]) == ["gocryptfs", "cryfs"]
