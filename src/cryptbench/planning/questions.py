"""What a run must answer, decided with its plan: each workload's seed, the questions
its repetition stops on (each target asked for against its baseline, per workload's
primary metric) and the groups its ranking compares. A local run and a fleet ask alike;
a fleet's targets are HOST/NAME."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from cryptbench.backends import REGISTRY
from cryptbench.backends.base import TargetSpec
from cryptbench.engines.metric_catalog import info
from cryptbench.planning.suite import Workload, family, primary_metric
from cryptbench.stats.stopping import Question, questions


@dataclass(frozen=True)
class RankingGroups:
    """How the run's answer to "which costs least" is built: each encrypted target is
    ranked against a plain target, over all workloads and over each kind of work."""

    plain_of: dict[str, str]  # encrypted target -> the plain target of its medium (and host)
    family_of: dict[str, str]  # workload -> its kind of work (suite.family)
    higher_is_better: dict[str, bool | None]  # workload -> its primary metric's direction


def workload_seeds(seed: int, workloads: Sequence[Workload]) -> dict[str, int]:
    """Each workload's own seed (fio's random offsets, an app's inputs), from the run's."""
    return {w.name: (seed + i) % 2**32 for i, w in enumerate(workloads)}


def workload_questions(
    workloads: Sequence[Workload],
    baselines: Mapping[str, str | None],
    asked: Collection[str],
    skip: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[Question, ...]:
    """Per workload's primary metric, each target of `asked` against its baseline
    (`baselines`: target -> its baseline's name, None for a baseline), but the trials
    `skip` leaves out (workload -> {target: why})."""
    wanted = [(w.name, (primary_metric(w), info(primary_metric(w)).higher_is_better)) for w in workloads]
    left_out = skip or {}
    every = questions(wanted, dict(baselines), set(asked))
    return tuple(q for q in every if q.target not in left_out.get(q.workload, {}))


def ranking_groups(targets: Sequence[TargetSpec], workloads: Sequence[Workload]) -> RankingGroups:
    """Each encrypted target and the plain of its medium it is ranked against, as the
    ranking (analysis/ranking.py) groups them; the workloads' kinds of work."""
    plains = {t.medium: t.name for t in targets if t.backend == "plain"}
    encrypted = [t for t in targets if REGISTRY[t.backend].encrypted and t.medium in plains]
    plain_of = {t.name: plains[t.medium] for t in encrypted}
    return RankingGroups(
        plain_of,
        {w.name: family(w) for w in workloads},
        {w.name: info(primary_metric(w)).higher_is_better for w in workloads},
    )
