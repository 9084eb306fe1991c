"""`run --existing`: a user's own dm-crypt volume read through its mapping and on the device
under it at the same offsets, O_DIRECT, fio --readonly, interleaved and repeated like any
other comparison (trial/schedule.interleave, trial/allocator.Controller), each trial
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
from cryptbench.model.errors import ProvisionError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Existing
from cryptbench.pipeline import execute
from cryptbench.pipeline.execute import Executed
from cryptbench.pipeline.existing_fuse import run_fuse
from cryptbench.pipeline.read_only import Reading, ReadOnlyExecutor, measure_reads, run_reads
from cryptbench.pipeline.shadow import ShadowKey, shadow_key, shadows
from cryptbench.planning.existing import ExistingPlan, existing_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.planning.twin_request import twin_request, twin_said
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
        shadows: dict[str, Path] | None = None,
    ) -> None:
        super().__init__(ctx, targets, progress)
        self.plan = plan
        self.fio = partial(fio, readonly=True)
        self.shadows = shadows or {}  # --try-flags: flag set's target -> its shadow mapping's node

    def job(self, spec: TrialSpec) -> TrialJob:
        """The trial's job: the region on the mapping (or a shadow of it, whose table has
        the same offset), or the same sectors on the device."""
        plan, w = self.plan, spec.workload
        assert isinstance(w, WorkloadSpec)
        raw = spec.target == plan.raw_target
        timed = plan.trial_time > 0
        node = self.shadows.get(spec.target, plan.volume.mapping_node)
        opts = JobOptions(
            filename=plan.volume.device_node if raw else node,
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


def targets_of(plan: ExistingPlan, shadows: dict[str, Path] | None = None) -> dict[str, Target]:
    """The targets, as the trials and the store see them; their paths are the devices
    (`shadows`: each flag set's shadow mapping)."""
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
    found = {raw.name: raw, mapping.name: mapping}
    for s in plan.flag_sets:
        node = (shadows or {})[s.name]
        found[s.name] = Target(
            name=s.name,
            backend=Existing.FLAGS,
            encrypted=True,
            baseline=plan.raw_target,
            path=node,
            backing=(),
            details={
                "mapping": f"{node.name}, read-only, over {v.device} as {v.mapping} is",
                "flags": ", ".join(s.flags) or "none",
                "tried": s.said,
                "reads from": f"byte {plan.region_start:,}",
            },
        )
    return found


def differs(plan: ExistingPlan) -> bool:
    """The proof of encryption here: the region's first bytes read through the mapping are
    not the same sectors' bytes on the device (a mapping that copies them, cipher_null,
    shows them equal). Both opened O_RDONLY."""
    v = plan.volume
    return _read_at(v.mapping_node, plan.region_start) != _read_at(v.device_node, plan.raw_offset)


def check_shadows(plan: ExistingPlan, shadows: dict[str, Path]) -> None:
    """Each shadow mapping reads the region's first bytes as the user's mapping does: the
    same key, cipher and offset, so its trials read the same plaintext."""
    own = _read_at(plan.volume.mapping_node, plan.region_start)
    for name, node in shadows.items():
        if _read_at(node, plan.region_start) != own:
            raise ProvisionError(
                f"{name}'s mapping does not read as {plan.mapping_target} does: "
                "its key or table is not the volume's"
            )


def _read_at(node: Path, offset: int) -> bytes:
    fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, PROOF_BYTES, offset)
    finally:
        os.close(fd)


def measure(
    plan: ExistingPlan,
    key: ShadowKey | None,
    store: Store,
    progress: Progress,
    session: Session,
    run_id: int,
    env: JsonObject,
) -> tuple[int, int]:
    """The trials of `plan`, interleaved until the controller has its answers; with flag
    sets, their shadow mappings made first (with `key`) and removed after."""
    if not plan.flag_sets:
        return _measure(plan, {}, store, progress, session, run_id, env)
    assert key is not None
    progress.phase(
        f"making {len(plan.flag_sets)} read-only mappings of {plan.volume.device}, one per flag set"
    )
    with shadows(session, plan.volume, plan.flag_sets, key) as nodes:
        check_shadows(plan, nodes)
        store.add_note(run_id, f"the flag trial's mappings were made with {key.how}")
        return _measure(plan, nodes, store, progress, session, run_id, env)


def _measure(
    plan: ExistingPlan,
    nodes: dict[str, Path],
    store: Store,
    progress: Progress,
    session: Session,
    run_id: int,
    env: JsonObject,
) -> tuple[int, int]:
    targets = targets_of(plan, nodes)
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
        return VolumeExecutor(ctx, plan, targets, progress, shadows=nodes)

    return measure_reads(plan, reading, executor, store, progress, session, run_id, env)


def run(request: RunRequest, *, progress: Progress | None = None, registry: Path | None = None) -> Executed:
    assert request.existing is not None
    found = existing_volume(Path(request.existing))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    shown = progress or NullProgress()
    if isinstance(found, FuseVolume):
        return run_fuse(found, request, shown, registry)
    if request.ram:  # writes on the volume's twin, in scratch space and on RAM
        twin = twin_request(request, found)
        return execute.run(twin, progress=progress, registry=registry, notes=(twin_said(found),))
    plan = existing_plan(request, found)
    check_readable(found)
    # the key is had (or refused, in one line) before anything is stored
    key = shadow_key(found, request.key_file) if plan.flag_sets else None
    said = f"your volume {found.stack.path}: {found.stack.line()}"
    return run_reads(plan, said, partial(measure, plan, key), shown, registry)
