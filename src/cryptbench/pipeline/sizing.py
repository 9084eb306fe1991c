"""The run's trials sized to last the trial time (trial/sizing.py does the measuring):
the data file grown before layout where trials run buffered, then the passes each fio
trial makes where they run direct. Both stay within the byte budget and are noted in
the run. What they need of the plan is read from it once (`asked`)."""

from __future__ import annotations

from dataclasses import replace

from cryptbench.model.units import format_duration
from cryptbench.planning.plan import Plan
from cryptbench.planning.stopping_rule import default_max_bytes
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.trial import amount, sizing
from cryptbench.trial.context import Progress, Targets, TrialContext
from cryptbench.trial.provisioned import Provisioned


def asked(plan: Plan) -> sizing.Asked:
    """What the run asks of trial sizing: the fio workloads it applies to (a study's own
    commands run as it ran them), the targets others are compared with, the trial time,
    the minimum rounds, the byte budget and the data file's limit."""
    published = {w.name for w in plan.suite.as_published}
    workloads = tuple(
        w for w in plan.suite.workloads if isinstance(w, WorkloadSpec) and w.name not in published
    )
    bases = frozenset(b for b in plan.baselines.values() if b is not None)
    # a fixed count has no budget of its own, but what sizing multiplies its writes by
    # still needs one (the adaptive default)
    budget = plan.rule.max_bytes if plan.rule.max_bytes is not None else default_max_bytes(plan.target_dir)
    return sizing.Asked(
        workloads, plan.seeds, plan.trial_time, bases, plan.rule.min_repeats, budget, plan.data_size_limit
    )


def grow_data_file(
    asked: sizing.Asked,
    ctx: TrialContext,
    targets: Provisioned,
    direct: dict[str, bool],
    progress: Progress,
) -> TrialContext:
    """Where trials run buffered and the data file may grow (asked.limit), the context
    with the size that makes a buffered pass last the trial time on the baselines, and
    the bytes each slower workload moves; noted in the run."""
    buffered = [name for name, d in direct.items() if not d]
    if asked.limit <= ctx.size or not buffered or not asked.workloads:
        return ctx
    baselines = asked.baselines(buffered)
    for name in baselines:
        targets.lay_out(targets[name])
    # the minimum rounds' writes, on every target, take at most their share of the byte budget
    writes = max(1, sum(w.is_write for w in asked.workloads))
    trials = len(direct) * asked.rounds * writes
    write_cap = int((asked.budget or 0) * sizing.WRITE_SHARE / trials)
    growth, failed = sizing.grow(ctx, targets, asked, baselines, write_cap, progress)
    for why in failed:
        ctx.store.add_note(ctx.run_id, f"could not size the data file for {why}")
    if growth is None:
        return ctx
    ctx.store.add_note(ctx.run_id, growth.describe(ctx.size, asked.trial_time))
    return replace(ctx, data_size=growth.size if growth.size > ctx.size else 0, moved=growth.moved)


def size_trials(
    asked: sizing.Asked,
    ctx: TrialContext,
    targets: Targets,
    direct: dict[str, bool],
    progress: Progress,
) -> TrialContext:
    """The context with each fio workload's passes per trial, calibrated on the baselines
    (every target where there is none) so that trials last the trial time; noted in the run."""
    if asked.trial_time <= 0 or not asked.workloads:
        return ctx
    # a slow target's trial stops at the cap: its figure is what it moved in that time
    ctx = replace(ctx, time_cap=asked.trial_time * sizing.TRIAL_CAP)
    new_file = {name: amount.writes_new_files(ctx, targets[name]) for name in direct}
    passes, found, failed = sizing.calibrate(
        ctx, targets, direct, asked, asked.baselines(direct), new_file, progress
    )
    if found:
        each = "; ".join(c.describe() for c in found)
        last = format_duration(asked.trial_time)
        cap = format_duration(ctx.time_cap or 0)
        ctx.store.add_note(
            ctx.run_id,
            f"trials sized to last {last} of I/O (--trial-time), at most {cap} on any target: {each}",
        )
    for why in failed:
        ctx.store.add_note(ctx.run_id, f"could not size the trials of {why}; they make one pass")
    return replace(ctx, passes=passes)
