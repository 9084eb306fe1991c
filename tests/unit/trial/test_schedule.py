"""The order trials run in: `interleave` with a fixed count, over a fake
executor (the order is the runner's own; only the trials are synthetic)."""

from __future__ import annotations

import itertools
from pathlib import Path

from cryptbench.planning.suite import load_suite
from cryptbench.stats.stopping import StoppingRule, questions
from cryptbench.store.database import Store
from cryptbench.trial.allocator import Controller
from cryptbench.trial.context import TrialSpec
from cryptbench.trial.schedule import Spend, interleave
from tests.support.fake_executor import FakeExecutor

WORKLOADS = load_suite("quick").workloads
BASELINES = {"plain": None, "ext4-loop": "plain", "fscrypt": "ext4-loop", "gocryptfs": "plain"}
TARGETS = list(BASELINES)
_STORES = itertools.count()  # a store per run, so no run sees another's trials


def schedule(tmp_path: Path, repeats: int, seed: int) -> list[TrialSpec]:
    """The trials a run with `--repeats repeats --seed seed` runs, in order."""
    store = Store.open(tmp_path / f"{next(_STORES)}.sqlite")
    run_id = store.insert_run("quick", {}, {}, str(seed))
    ex = FakeExecutor(store, run_id, {t: (100.0, 1.0) for t in TARGETS})
    qs = questions([(w.name, ("throughput", True)) for w in WORKLOADS], BASELINES)
    controller = Controller(StoppingRule(None, repeats, repeats, None, None), qs, seed)
    spend = Spend(ex.ctx, set(), lambda: 0.0)
    interleave(ex, controller, spend, WORKLOADS, TARGETS, seed)
    return ex.specs


def test_every_block_runs_every_target_once(tmp_path: Path) -> None:
    trials = schedule(tmp_path, 3, seed=5)
    assert len(trials) == len(WORKLOADS) * len(TARGETS) * 3
    blocks: dict[int, list[TrialSpec]] = {}
    for t in trials:
        blocks.setdefault(t.block, []).append(t)
    assert len(blocks) == len(WORKLOADS) * 3
    for members in blocks.values():
        assert sorted(m.target for m in members) == sorted(TARGETS)
        assert len({m.workload.name for m in members}) == 1
        assert len({m.repeat for m in members}) == 1
    assert [t.seq for t in trials] == list(range(len(trials)))


def test_targets_are_interleaved_not_run_back_to_back(tmp_path: Path) -> None:
    trials = schedule(tmp_path, 5, seed=1)
    for w in WORKLOADS:
        order = [t.target for t in trials if t.workload.name == w.name]
        # never all repeats of one target before the next one starts
        first_done = {name: max(i for i, n in enumerate(order) if n == name) for name in TARGETS}
        last_start = max(min(i for i, n in enumerate(order) if n == name) for name in TARGETS)
        assert all(done > last_start for done in first_done.values())


def _order(tmp_path: Path, repeats: int, seed: int) -> list[tuple[str, str]]:
    return [(t.workload.name, t.target) for t in schedule(tmp_path, repeats, seed)]


def test_order_is_randomised_and_reproducible(tmp_path: Path) -> None:
    assert _order(tmp_path, 3, 1) == _order(tmp_path, 3, 1)
    assert _order(tmp_path, 3, 1) != _order(tmp_path, 3, 2)
    firsts = {tuple(t for _w, t in _order(tmp_path, 1, s)[:4]) for s in range(20)}
    assert len(firsts) > 5  # target order within blocks really varies
