"""The run's trials sized to last the trial time (sizing.py does the measuring):
the data file grown before layout where trials run buffered, then the passes each fio
trial makes where they run direct. Both stay within the byte budget and are noted in
the run."""

from __future__ import annotations

from dataclasses import replace

from cryptbench.model.units import format_duration
from cryptbench.pipeline.provision import Provisioned
from cryptbench.planning.plan import Plan, default_max_bytes
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial import amount, sizing
from cryptbench.trial.context import Progress, Targets, TrialContext


def _sized_workloads(plan: Plan) -> list[WorkloadSpec]:
    """The fio workloads trial sizing applies to: a study's own commands run as it ran them."""
    published = {w.name for w in plan.suite.as_published}
    return [w for w in plan.suite.workloads if isinstance(w, WorkloadSpec) and w.name not in published]


def _baselines(plan: Plan, names: list[str]) -> list[str]:
    """Of `names`, the targets others are compared with; all of them when none is."""
    bases = {plan.baseline_of(t) for t in plan.targets}
    return [name for name in names if name in bases] or names


def _byte_budget(plan: Plan) -> int:
    """The byte budget trial sizing keeps to: the run's; a fixed count has none of its own,
    but what sizing multiplies its writes by still needs one (the adaptive default)."""
    return plan.rule.max_bytes if plan.rule.max_bytes is not None else default_max_bytes(plan.target_dir)


def grow_data_file(
    plan: Plan,
    ctx: TrialContext,
    targets: Provisioned,
    direct: dict[str, bool],
    seeds: dict[str, int],
    progress: Progress,
) -> TrialContext:
    """Where trials run buffered and the data file may grow (plan.data_size_limit), the
    context with the size that makes a buffered pass last plan.trial_time on the
    baselines, and the bytes each slower workload moves; noted in the run."""
    workloads = _sized_workloads(plan)
    buffered = [name for name, d in direct.items() if not d]
    if plan.data_size_limit <= plan.size or not buffered or not workloads:
        return ctx
    baselines = _baselines(plan, buffered)
    for name in baselines:
        targets.lay_out(targets[name])
    # the minimum rounds' writes, on every target, take at most their share of the byte budget
    writes = max(1, sum(w.is_write for w in workloads))
    trials = len(direct) * plan.rule.min_repeats * writes
    write_cap = int(_byte_budget(plan) * sizing.WRITE_SHARE / trials)
    growth, failed = sizing.grow(
        ctx, targets, workloads, seeds, baselines, plan.trial_time, plan.data_size_limit, write_cap, progress
    )
    for why in failed:
        ctx.store.add_note(ctx.run_id, f"could not size the data file for {why}")
    if growth is None:
        return ctx
    ctx.store.add_note(ctx.run_id, growth.describe(plan.size, plan.trial_time))
    return replace(ctx, data_size=growth.size if growth.size > plan.size else 0, moved=growth.moved)


def size_trials(
    plan: Plan,
    ctx: TrialContext,
    targets: Targets,
    direct: dict[str, bool],
    seeds: dict[str, int],
    progress: Progress,
) -> TrialContext:
    """The context with each fio workload's passes per trial, calibrated on the baselines
    (every target where there is none) so that trials last plan.trial_time; noted in the run."""
    workloads = _sized_workloads(plan)
    if plan.trial_time <= 0 or not workloads:
        return ctx
    # a slow target's trial stops at the cap: its figure is what it moved in that time
    ctx = replace(ctx, time_cap=plan.trial_time * sizing.TRIAL_CAP)
    baselines = _baselines(plan, list(direct))
    new_file = {name: amount.writes_new_files(ctx, targets[name]) for name in direct}
    passes, found, failed = sizing.calibrate(
        ctx,
        targets,
        direct,
        workloads,
        seeds,
        baselines,
        plan.trial_time,
        new_file,
        progress,
        rounds=plan.rule.min_repeats,
        budget=_byte_budget(plan),
    )
    if found:
        each = "; ".join(c.describe() for c in found)
        last = format_duration(plan.trial_time)
        cap = format_duration(ctx.time_cap or 0)
        ctx.store.add_note(
            ctx.run_id,
            f"trials sized to last {last} of I/O (--trial-time), at most {cap} on any target: {each}",
        )
    for why in failed:
        ctx.store.add_note(ctx.run_id, f"could not size the trials of {why}; they make one pass")
    return replace(ctx, passes=passes)
