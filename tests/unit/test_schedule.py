from cryptbench.runner import schedule
from cryptbench.suite import load_suite

WORKLOADS = load_suite("quick").workloads
TARGETS = ["plain", "ext4-loop", "fscrypt", "gocryptfs"]


def test_every_block_runs_every_target_once() -> None:
    trials = schedule(WORKLOADS, TARGETS, 3, seed=5)
    assert len(trials) == len(WORKLOADS) * len(TARGETS) * 3
    blocks: dict[int, list] = {}
    for t in trials:
        blocks.setdefault(t.block, []).append(t)
    assert len(blocks) == len(WORKLOADS) * 3
    for members in blocks.values():
        assert sorted(m.target for m in members) == sorted(TARGETS)
        assert len({m.workload.name for m in members}) == 1
        assert len({m.repeat for m in members}) == 1
    assert [t.seq for t in trials] == list(range(len(trials)))


def test_targets_are_interleaved_not_run_back_to_back() -> None:
    trials = schedule(WORKLOADS, TARGETS, 5, seed=1)
    for w in WORKLOADS:
        order = [t.target for t in trials if t.workload.name == w.name]
        # never all repeats of one target before the next one starts
        first_done = {name: max(i for i, n in enumerate(order) if n == name) for name in TARGETS}
        last_start = max(min(i for i, n in enumerate(order) if n == name) for name in TARGETS)
        assert all(done > last_start for done in first_done.values())


def test_order_is_randomised_and_reproducible() -> None:
    a = [(t.workload.name, t.target) for t in schedule(WORKLOADS, TARGETS, 3, seed=1)]
    b = [(t.workload.name, t.target) for t in schedule(WORKLOADS, TARGETS, 3, seed=1)]
    c = [(t.workload.name, t.target) for t in schedule(WORKLOADS, TARGETS, 3, seed=2)]
    assert a == b
    assert a != c
    firsts = {tuple(t.target for t in schedule(WORKLOADS, TARGETS, 1, seed=s)[:4]) for s in range(20)}
    assert len(firsts) > 5  # target order within blocks really varies
