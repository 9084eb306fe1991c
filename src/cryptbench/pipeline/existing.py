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
from functools import partial
from pathlib import Path

from cryptbench.backends.base import DirectIO, Target
from cryptbench.engines.fio import run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine.session import Session
from cryptbench.measure.fuse_volume import FuseVolume
from cryptbench.measure.volume import check_readable, existing_volume
from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Existing
from cryptbench.pipeline.execute import Executed
from cryptbench.pipeline.existing_fuse import run_fuse
from cryptbench.pipeline.read_only import Reading, ReadOnlyExecutor, measure_reads, run_reads
from cryptbench.planning.existing import ExistingPlan, existing_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.store.database import Store
from cryptbench.trial.context import NullProgress, Progress, TrialContext, TrialSpec
from cryptbench.trial.runner import FioRunner, TrialJob

PROOF_BYTES = 1 << 16  # bytes read through the mapping and on the device to show they differ
# the crypt layer's details a run stores with its mapping target (measure/stack.py reads them)
CRYPT_DETAILS = ("format", "cipher", "key", "sector size", "flags", "integrity")


class VolumeExecutor(ReadOnlyExecutor):
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
        super().__init__(ctx, targets, progress)
        self.plan = plan
        self.fio = partial(fio, readonly=True)

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
    targets = targets_of(plan)
    reading = Reading(
        stack=plan.volume.stack,
        targets=targets,
        verified=differs(plan),
        io_mode="direct",
        direct_io=DirectIO.HONOURED,
        how="a block device read with O_DIRECT",
        not_verified=f"{plan.mapping_target}'s bytes are the same as {plan.raw_target}'s at the region's "
        "start: this mapping does not encrypt them, so it is not ranked",
        size=plan.region_bytes,
    )

    def executor(ctx: TrialContext) -> VolumeExecutor:
        return VolumeExecutor(ctx, plan, targets, progress)

    return measure_reads(plan, reading, executor, store, progress, session, run_id, env)


def run(request: RunRequest, *, progress: Progress | None = None, registry: Path | None = None) -> Executed:
    assert request.existing is not None
    found = existing_volume(Path(request.existing))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    shown = progress or NullProgress()
    if isinstance(found, FuseVolume):
        return run_fuse(found, request, shown, registry)
    plan = existing_plan(request, found)
    check_readable(found)
    said = f"your volume {found.stack.path}: {found.stack.line()}"
    return run_reads(plan, said, partial(measure, plan), shown, registry)
