"""The order of a run's trials, and when they stop.

Order: for every repeat, the workloads in a random order, and within each
workload a block that runs every target once, in a random order. Targets are
never run all-of-A-then-all-of-B, so slow drift of the machine (thermal
throttling, an SSD's cache filling) spreads over all targets instead of
masquerading as a difference between them. `--seed` reproduces the order.
The allocator (`trial/allocator.py`) says which targets the next round needs;
budgets are checked before each block.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from cryptbench.engines.apps import AppWorkload
from cryptbench.measure.device import bytes_written
from cryptbench.model.errors import TargetLost
from cryptbench.model.json_types import JsonObject
from cryptbench.model.units import format_duration
from cryptbench.planning.suite import Workload, direction, family
from cryptbench.stats.stopping import Fit, Rounds, Samples, StoppingRule, StopReason, fit_minimum_rounds
from cryptbench.store.database import Store, split_rounds
from cryptbench.trial.allocator import Controller
from cryptbench.trial.context import Progress, Sizing, Targets, TrialContext, TrialSpec
from cryptbench.trial.runner import prepare, run_app_trial, run_trial


def round_blocks(
    rng: random.Random,
    workloads: tuple[Workload, ...],
    targets: list[str],
    need: dict[str, set[str]] | None,
    skip: Mapping[str, Mapping[str, str]] | None = None,
) -> list[tuple[Workload, list[str]]]:
    """One round: the workloads in a random order (with `need`, in its order: the one
    nearest an answer first), and for each a block of the targets it needs (all with
    `need` None) in a random order, but those `skip` leaves out of it (workload ->
    {target: why}: the plan's trials not run)."""
    order = list(workloads)
    rng.shuffle(order)
    if need is not None:
        rank = {name: i for i, name in enumerate(need)}
        order.sort(key=lambda w: rank.get(w.name, len(rank)))
    blocks = []
    for w in order:
        if need is not None and w.name not in need:
            continue
        left_out = (skip or {}).get(w.name, {})
        names = [t for t in targets if (need is None or t in need[w.name]) and t not in left_out]
        rng.shuffle(names)
        if names:
            blocks.append((w, names))
    return blocks


class RoundExecutor(Protocol):
    """What runs a run's trials block by block, for `interleave`: the local Executor (a
    block's targets one after another) and a fleet's Coordinator (a target's trial on
    every host that serves it, in one fio --client). `lost` (target -> why) is read as
    it grows; `finish` notes the lost targets and returns (trials that succeeded,
    trials that failed or were not run)."""

    @property
    def store(self) -> Store: ...
    @property
    def run_id(self) -> int: ...
    @property
    def lost(self) -> dict[str, str]: ...
    @property
    def progress(self) -> Progress: ...
    def run_block(self, workload: Workload, names: list[str], repeat: int, block: int) -> int: ...
    def finish(self) -> tuple[int, int]: ...


class OneAtATime:
    """A RoundExecutor's block, run as one trial per target in the block's order, each
    with the next sequence number (`run` runs one; `ctx` holds the store and run)."""

    ctx: TrialContext
    seq: int = 0  # the next trial's number in the run

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def run_id(self) -> int:
        return self.ctx.run_id

    def run(self, spec: TrialSpec) -> bool:
        raise NotImplementedError

    def run_block(self, workload: Workload, names: list[str], repeat: int, block: int) -> int:
        """Returns the next block's number."""
        for name in names:
            self.run(TrialSpec(self.seq, block, repeat, workload, name))
            self.seq += 1
        return block + 1


class Executor(OneAtATime):
    """Runs trials one by one, each as large as `sizing` says, remembering targets that
    were lost: their remaining trials are not run (they would fail the same way); the
    other targets go on."""

    def __init__(
        self,
        ctx: TrialContext,
        sizing: Sizing,
        targets: Targets,
        direct: dict[str, bool],
        workload_seeds: dict[str, int],
        progress: Progress,
    ) -> None:
        self.ctx, self.sizing, self.targets, self.direct = ctx, sizing, targets, direct
        self.workload_seeds, self.progress = workload_seeds, progress
        self.ok = self.failed = 0  # trials that succeeded; failed or not run
        self.lost: dict[str, str] = {}  # target -> why
        self.skipped: dict[str, int] = {}  # target -> trials not run

    def run(self, spec: TrialSpec) -> bool:
        if spec.target in self.lost:
            self.skipped[spec.target] = self.skipped.get(spec.target, 0) + 1
            success = False
        else:
            try:
                target = prepare(self.ctx, self.sizing, spec, self.targets)
                w, seed = spec.workload, self.workload_seeds[spec.workload.name]
                if isinstance(w, AppWorkload):
                    success = run_app_trial(self.ctx, spec, target, seed)
                else:
                    sized = self.ctx.trial_size(self.sizing, w, target, self.direct[target.name])
                    success = run_trial(self.ctx, spec, target, sized, seed)
            except TargetLost as e:
                self.lost[spec.target] = str(e)
                success = False
        self.ok += success
        self.failed += not success
        self.progress.trial_done(spec, success)
        return success

    def finish(self) -> tuple[int, int]:
        """Note the lost targets; return (succeeded, failed or not run)."""
        note_lost(self.ctx.store, self.ctx.run_id, self.lost, self.skipped)
        return self.ok, self.failed


def note_lost(store: Store, run_id: int, lost: dict[str, str], skipped: dict[str, int]) -> None:
    """A run note per lost target: why, and how many of its trials were not run."""
    for name, why in lost.items():
        store.add_note(run_id, f"{why}: its {skipped.get(name, 0)} remaining trial(s) were not run")


class Ledger(Protocol):
    """Where a run's trials are counted: its store and run, and the device whose
    write counter to read (None: what the workloads wrote, from the store)."""

    @property
    def store(self) -> Store: ...
    @property
    def run_id(self) -> int: ...
    @property
    def device(self) -> str | None: ...


class Spend:
    """What the trials have cost so far: bytes written (the device's own
    counter where there is one, else what fio and the tasks wrote) and seconds."""

    def __init__(self, ctx: Ledger, write_workloads: set[str], clock: Callable[[], float] = time.monotonic):
        self.ctx, self.write_workloads, self.clock = ctx, write_workloads, clock
        self.device_start = bytes_written(ctx.device)
        self.started = clock()

    def bytes(self) -> int:
        if self.device_start is not None:
            now = bytes_written(self.ctx.device)
            if now is not None:
                return now - self.device_start
        return int(self.ctx.store.metric_sum(self.ctx.run_id, "io_bytes", self.write_workloads))

    def seconds(self) -> float:
        return self.clock() - self.started

    def over(self, rule: StoppingRule) -> StopReason | None:
        if rule.max_bytes is not None and self.bytes() >= rule.max_bytes:
            return StopReason.MAX_BYTES
        if rule.max_time is not None and self.seconds() >= rule.max_time:
            return StopReason.MAX_TIME
        return None


def primary_samples(store: Store, run_id: int, metric_of: dict[str, str]) -> tuple[Samples, Rounds]:
    """Each (workload, target)'s values of the workload's primary metric, in trial order,
    and the round each ran in."""
    by_round = {(w, t): v for (w, t, m), v in store.samples_by_round(run_id).items() if metric_of.get(w) == m}
    return split_rounds(by_round)


def interleave(
    executor: RoundExecutor,
    controller: Controller,
    spend: Spend,
    workloads: tuple[Workload, ...],
    targets: list[str],
    seed: int,
    skip: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[int, int]:
    """Interleaved rounds until the controller has every answer or a budget is spent:
    each round, the workloads in a random order (`seed`), each a block of its targets in
    a random order, run by `executor`. Budgets (`spend`) are checked before each block,
    so a block is never split. The stopping record is stored whenever the answers
    change. `skip` (workload -> {target: why}) leaves the plan's trials not run out of every
    block. Returns (trials that succeeded, failed or not run), once the executor has
    noted its lost targets, also when a signal or an error ends the rounds."""
    try:
        _rounds(executor, controller, spend, workloads, targets, seed, skip)
    finally:
        counts = executor.finish()
    return counts


def _rounds(
    executor: RoundExecutor,
    controller: Controller,
    spend: Spend,
    workloads: tuple[Workload, ...],
    targets: list[str],
    seed: int,
    skip: Mapping[str, Mapping[str, str]] | None,
) -> None:
    store, run_id, lost, progress = executor.store, executor.run_id, executor.lost, executor.progress
    seconds = spend.seconds

    def on_change() -> None:
        store.set_stopping(run_id, stopping_record(controller, spend))

    metric_of = {a.question.workload: a.question.metric for a in controller.answers}
    rng = random.Random(seed)
    block = rounds = trials = 0
    first_round: dict[str, float] = {}  # seconds each workload's block took in round 1
    while True:
        samples, sample_rounds = primary_samples(store, run_id, metric_of)
        controller.review(rounds, samples, set(lost), sample_rounds)
        if rounds == 1:
            fit = fit_minimum_rounds(
                controller.rule,
                first_round,
                {w.name: (family(w), direction(w)) for w in workloads},
                seconds(),
            )
            if fit is not None:
                controller.refit(fit, rounds)
                workloads = tuple(w for w in workloads if w.name not in fit.dropped)
                note = fit_note(fit, controller.rule)
                store.add_note(run_id, note)
                progress.say(note)
        on_change()
        # Every target gets the first min_repeats rounds (all of a fixed
        # count) even when a lost target closed every question early.
        if controller.done and rounds >= controller.rule.min_repeats:
            return
        limit = controller.rule.max_time
        left = None if limit is None else max(0.0, limit - seconds())
        # the trials the time left has room for, at the pace so far
        capacity = None if left is None or not trials else left / (seconds() / trials)
        blocks = round_blocks(rng, workloads, targets, controller.needed(rounds, capacity), skip)
        progress.add_trials(sum(len(names) for _w, names in blocks))
        progress.round_started(rounds + 1, left)
        for w, names in blocks:
            reason = spend.over(controller.rule)
            # The first round runs whole, whatever the clock: it is what the run learns
            # its pace from (fit_minimum_rounds). The byte budget still binds: it is wear.
            if reason is StopReason.MAX_TIME and rounds == 0:
                reason = None
            if reason is not None:
                samples, sample_rounds = primary_samples(store, run_id, metric_of)
                controller.exhaust(reason, rounds, samples, set(lost), sample_rounds)
                on_change()
                return
            started = seconds()
            block = executor.run_block(w, names, rounds, block)
            if rounds == 0:
                first_round[w.name] = seconds() - started
            trials += len(names)
        rounds += 1


def fit_note(fit: Fit, rule: StoppingRule) -> str:
    """What the first round showed of the time budget, and what the run did, in one sentence."""
    left = format_duration(max(fit.left, 0))
    pace = (
        f"at the first round's pace the {rule.min_repeats} rounds every target needs take "
        f"{format_duration(fit.needed)} more, and {left} of the time budget is left"
    )
    if fit.extended_to is not None:
        return f"{pace}: the budget is extended to {format_duration(fit.extended_to)} (--overrun extend)"
    if not fit.dropped:
        return (
            f"{pace}, and no workload can be dropped without losing a kind of work's reads or writes: "
            "the budget will stop "
            "some comparisons short of their minimum (more time: --max-time, or --overrun extend)"
        )
    drop = (
        f"dropped {', '.join(fit.dropped)} "
        "(the slowest of the kind of work that had the most; each kind keeps its reads and its writes)"
    )
    if fit.fits:
        return f"{pace}: {drop} to fit (--overrun extend keeps them and takes longer)"
    return (
        f"{pace}: {drop}, and even so the budget will stop some comparisons short of their minimum "
        "(more time: --max-time, or --overrun extend)"
    )


def stopping_record(controller: Controller, spend: Spend) -> JsonObject:
    """What decided how many trials ran, as the store keeps it (the document's `stopping`)."""
    return {
        "rule": controller.rule.to_json(),
        "answers": controller.to_json(),
        "stopped_by": None if controller.stopped_by is None else str(controller.stopped_by),
        "bytes_written": spend.bytes(),
        "bytes_source": "device" if spend.device_start is not None else "workloads",
        "seconds": spend.seconds(),
    }
