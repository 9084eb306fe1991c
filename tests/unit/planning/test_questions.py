"""What a plan decides before the run starts (planning/questions.py, Plan.notes): each
workload's seed, the questions its repetition stops on, the ranking's groups, and the
notes the run stores of its plan."""

from pathlib import Path

from cryptbench.planning.questions import workload_seeds
from cryptbench.planning.suite import load_suite
from tests.support.documents import plan_with
from tests.support.targets import ram_requires_root, requires_root


def test_each_workload_has_its_own_seed_from_the_runs() -> None:
    quick = load_suite("quick").workloads
    seeds = workload_seeds(2**32 - 1, quick)
    assert list(seeds) == [w.name for w in quick]
    # consecutive from the run's own, wrapping within fio's 32 bits
    assert seeds[quick[0].name] == 2**32 - 1 and seeds[quick[1].name] == 0
    assert len(set(seeds.values())) == len(quick)


def test_the_plan_holds_the_seeds_of_its_run(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, seed=7)
    assert plan.seeds == workload_seeds(7, plan.suite.workloads)


def test_an_added_baseline_asks_nothing_of_its_own(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, backends="gocryptfs")
    assert plan.added_baselines == ("plain",)
    asked = {(q.workload, q.target, q.baseline) for q in plan.questions}
    assert asked == {(w.name, "gocryptfs", "plain") for w in plan.suite.workloads}
    # each question names its workload's primary metric and its direction
    assert {q.metric for q in plan.questions} == {"throughput"}
    assert all(q.higher_is_better for q in plan.questions)


def test_a_baseline_asked_for_alone_is_measured_without_a_question_against_itself(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, backends="plain")
    assert {(q.target, q.baseline) for q in plan.questions} == {("plain", None)}


@requires_root
def test_a_baseline_added_for_another_baseline_asks_nothing_either(tmp_path: Path) -> None:
    # fscrypt is compared with ext4-loop, itself with plain: both added, neither asks
    plan = plan_with(tmp_path, backends="fscrypt")
    assert plan.added_baselines == ("plain", "ext4-loop")
    assert {(q.target, q.baseline) for q in plan.questions} == {("fscrypt", "ext4-loop")}


def test_a_question_and_the_ranking_read_each_workloads_own_metric(tmp_path: Path) -> None:
    # study-001: the mail thread's seconds (lower is better), the photo import's pictures a minute
    plan = plan_with(tmp_path, backends="gocryptfs", suite="study-001", size="64M")
    metric = {q.workload: (q.metric, q.higher_is_better) for q in plan.questions}
    assert metric["mail-thread"] == ("seconds", False)
    assert metric["photo-import"] == ("pictures_per_minute", True)
    assert metric["rnd4k-read"] == ("throughput", True)
    assert plan.ranking is not None
    higher = plan.ranking.higher_is_better
    assert (higher["mail-thread"], higher["photo-import"], higher["rnd4k-read"]) == (False, True, True)


@ram_requires_root
def test_the_ranking_holds_each_encrypted_target_to_the_plain_of_its_medium(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, backends="gocryptfs", ram=True)
    assert plan.ranking is not None
    assert plan.ranking.plain_of == {"gocryptfs": "plain", "ram:gocryptfs": "ram:plain"}
    assert set(plan.ranking.family_of) == {w.name for w in plan.suite.workloads}
    assert set(plan.ranking.family_of.values()) == {"sequential", "random"}
    assert all(plan.ranking.higher_is_better.values())


def test_the_plan_notes_the_baselines_it_added(tmp_path: Path) -> None:
    plan = plan_with(tmp_path, backends="gocryptfs")
    assert plan.notes == ("added plain as a baseline",)
