"""`run --existing`: a user's own dm-crypt volume read through its mapping and on the device
under it at the same offsets, O_DIRECT, fio --readonly, interleaved and repeated like any
other comparison (trial/schedule.interleave, stats/stopping.Controller), each trial
stored as any other. Nothing is provisioned and nothing is written to either device: fio
refuses to write (--readonly) and every open here is O_RDONLY. The scratch space holds
only the job files and the journal. The ratio is what decryption costs reads on this
volume (planning/existing.py says what is run and why writes are not)."""

from __future__ import annotations

import os
import resource
from dataclasses import replace
from functools import partial
from pathlib import Path

from cryptbench.backends.base import DirectIO, Target
from cryptbench.engines.fio import probe_ioengine, run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine.interrupts import interruptible
from cryptbench.machine.session import Session
from cryptbench.measure.device import disks_of
from cryptbench.measure.fuse_volume import FuseVolume
from cryptbench.measure.volume import check_readable, existing_volume
from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Existing
from cryptbench.pipeline.execute import Executed, Stored, in_session
from cryptbench.pipeline.existing_fuse import run_fuse, target_row
from cryptbench.planning.existing import ExistingPlan, existing_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.stats.stopping import Controller
from cryptbench.store.database import Store
from cryptbench.trial.context import NullProgress, Progress, TrialContext, TrialSpec
from cryptbench.trial.runner import FioRunner, TrialJob, run_job
from cryptbench.trial.schedule import OneAtATime, Spend, interleave

PROOF_BYTES = 1 << 16  # bytes read through the mapping and on the device to show they differ
# the crypt layer's details a run stores with its mapping target (measure/stack.py reads them)
CRYPT_DETAILS = ("format", "cipher", "key", "sector size", "flags", "integrity")


class VolumeExecutor(OneAtATime):
    """Runs each trial as a read-only fio job on the mapping or on the device under it,
    the region's offset on each so that both read the same sectors."""

    def __init__(
        self,
        ctx: TrialContext,
        plan: ExistingPlan,
        targets: dict[str, Target],
        progress: Progress,
        fio: FioRunner = run_fio,
    ) -> None:
        self.ctx, self.plan, self.targets, self.progress = ctx, plan, targets, progress
        self.fio = partial(fio, readonly=True)
        self.ok = self.failed = 0
        self.lost: dict[str, str] = {}

    def job(self, spec: TrialSpec) -> TrialJob:
        """The trial's job: the region on the mapping, or the same sectors on the device."""
        plan, w = self.plan, spec.workload
        assert isinstance(w, WorkloadSpec)
        raw = spec.target == plan.raw_target
        timed = plan.trial_time > 0
        opts = JobOptions(
            filename=plan.volume.device_node if raw else plan.volume.mapping_node,
            size=plan.region_bytes,
            direct=True,
            ioengine=self.ctx.ioengine,
            zero_data=False,
            seed=plan.seeds[w.name],
            # passes enough for the trial time, which ends each trial (fio's runtime=)
            passes=TIMED_PASSES if timed else 1,
            time_limit=plan.trial_time if timed else None,
            offset=plan.raw_offset if raw else plan.region_start,
        )
        return TrialJob(render_job(w, opts), opts.filename, self.fio)

    def run(self, spec: TrialSpec) -> bool:
        success = run_job(self.ctx, spec, self.targets[spec.target], self.job(spec))
        self.ok += success
        self.failed += not success
        self.progress.trial_done(spec, success)
        return success

    def finish(self) -> tuple[int, int]:
        return self.ok, self.failed


# fio loops over the region per timed trial: more than any trial time reads of a region
# of at least 1 MiB at any speed a device reaches (runtime= ends the trial first)
TIMED_PASSES = 100_000


def targets_of(plan: ExistingPlan) -> dict[str, Target]:
    """The two targets, as the trials and the store see them; their paths are the devices."""
    v = plan.volume
    crypt = dict(v.layer.details)
    raw = Target(
        name=plan.raw_target,
        backend=Existing.RAW,
        encrypted=False,
        baseline=None,
        path=v.device_node,
        backing=(),
        details={"device": v.device, "reads from": f"byte {plan.raw_offset:,}"},
    )
    mapping = Target(
        name=plan.mapping_target,
        backend=Existing.MAPPING,
        encrypted=True,
        baseline=plan.raw_target,
        path=v.mapping_node,
        backing=(),
        details={
            "mapping": v.mapping,
            **{k: crypt[k] for k in CRYPT_DETAILS if k in crypt},
            "reads from": f"byte {plan.region_start:,}",
        },
    )
    return {raw.name: raw, mapping.name: mapping}


def differs(plan: ExistingPlan) -> bool:
    """The proof of encryption here: the region's first bytes read through the mapping are
    not the same sectors' bytes on the device (a mapping that copies them, cipher_null,
    shows them equal). Both opened O_RDONLY."""
    v = plan.volume
    return _read_at(v.mapping_node, plan.region_start) != _read_at(v.device_node, plan.raw_offset)


def _read_at(node: Path, offset: int) -> bytes:
    fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, PROOF_BYTES, offset)
    finally:
        os.close(fd)


def measure(
    plan: ExistingPlan, store: Store, progress: Progress, session: Session, run_id: int, env: JsonObject
) -> tuple[int, int]:
    """The trials of `plan`, interleaved until the controller has its answers."""
    # the counters are the disks' under the volume, not the scratch space's
    device = disks_of(plan.volume.stack)
    env["scratch_device"] = device
    progress.phase("reading the ioengine fio can use")
    engine = probe_ioengine(session.path("ioengine-probe"), session, plan.ioengine)
    env["ioengine"] = engine
    store.update_environment(run_id, env)
    targets = targets_of(plan)
    verified = differs(plan)
    for t in targets.values():
        t.direct_io, t.encryption_verified = DirectIO.HONOURED, verified if t.encrypted else None
        store.insert_target(run_id, target_row(t, "direct", "a block device read with O_DIRECT"))
    if not verified:
        store.add_note(
            run_id,
            f"{plan.mapping_target}'s bytes are the same as {plan.raw_target}'s at the region's start: "
            "this mapping does not encrypt them, so it is not ranked",
        )
    ctx = TrialContext(session, store, run_id, plan.region_bytes, engine, False, device=device or None)
    controller = Controller(plan.rule, plan.questions, plan.seed, plan.ranking)
    executor = VolumeExecutor(ctx, plan, targets, progress)
    # what the trials wrote counts (none): the disk's own counter counts the user's writes too
    spend = Spend(replace(ctx, device=None), set())
    return interleave(executor, controller, spend, plan.suite.workloads, list(plan.targets), plan.seed)


def run(request: RunRequest, *, progress: Progress | None = None, registry: Path | None = None) -> Executed:
    assert request.existing is not None
    found = existing_volume(Path(request.existing))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    shown = progress or NullProgress()
    if isinstance(found, FuseVolume):
        return run_fuse(found, request, shown, registry)
    volume = found
    plan = existing_plan(request, volume)
    check_readable(volume)
    store = Store.open(plan.db_path)
    try:
        with interruptible():
            stored = Stored(
                plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, (), False
            )
            shown.phase(f"your volume {volume.stack.path}: {volume.stack.line()}")
            return in_session(stored, store, shown, partial(measure, plan, store, shown), registry)
    finally:
        store.close()
