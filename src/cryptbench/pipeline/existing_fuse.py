"""`run --existing` on a user's own FUSE-encrypted directory: the sample's files read
whole through the mount and their ciphertext read whole in the cipher directory, cold,
buffered, fio --readonly, interleaved and repeated like any comparison. Every file is
opened here O_RDONLY once, before the first trial, and fio reads it as /dev/fd/N: no job
file, nothing fio prints and nothing stored names a file of the user's. The ratio is
what the overlay costs reads of the user's own files (planning/existing_fuse.py says
what is sampled and why writes are not run)."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator
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
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.result import TargetInfo
from cryptbench.model.vocabulary import Existing, Medium
from cryptbench.pipeline.execute import Executed, Stored, in_session
from cryptbench.planning.existing_fuse import FusePlan, fuse_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.stats.stopping import Controller
from cryptbench.store.database import Store
from cryptbench.trial.context import Progress, TrialContext, TrialSpec
from cryptbench.trial.runner import FioRunner, TrialJob, run_job
from cryptbench.trial.schedule import OneAtATime, Spend, interleave

SAMPLE_BYTES = 4096  # bytes of a file's plaintext looked for in its ciphertext (the proof)
CHUNK = 1 << 20  # bytes read at a time while looking
READ_HOW = "a FUSE mount's files read buffered, every cache dropped before each trial"


class Descriptors:
    """The sample's files, each opened O_RDONLY once for the run, by view: fio reads
    them as /dev/fd/N. Closed on leaving, however the run ends."""

    def __init__(self, plan: FusePlan) -> None:
        self.plain = self._open([p.plain for p in plan.files])
        self.cipher = self._open([p for p, _ in plan.cipher_files])

    @staticmethod
    def _open(paths: list[Path]) -> tuple[int, ...]:
        fds: list[int] = []
        try:
            for p in paths:
                fds.append(os.open(p, os.O_RDONLY | os.O_NOFOLLOW))
        except OSError as e:
            for fd in fds:
                os.close(fd)
            raise UsageError(f"--existing: a file of the sample cannot be read ({e.strerror})") from None
        return tuple(fds)

    def close(self) -> None:
        for fd in (*self.plain, *self.cipher):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def opened(plan: FusePlan) -> Iterator[Descriptors]:
    _enough_descriptors(len(plan.files) + len(plan.cipher_files))
    fds = Descriptors(plan)
    try:
        yield fds
    finally:
        fds.close()


def _enough_descriptors(n: int) -> None:
    """The soft limit on open files raised toward the hard one where `n` more would pass it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = n + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard)
        )


class FuseExecutor(OneAtATime):
    """Runs each trial as a read-only fio job over the sample's files, through the mount
    or as their ciphertext, each file read whole."""

    def __init__(
        self,
        ctx: TrialContext,
        plan: FusePlan,
        targets: dict[str, Target],
        fds: Descriptors,
        progress: Progress,
        fio: FioRunner = run_fio,
    ) -> None:
        self.ctx, self.plan, self.targets, self.fds, self.progress = ctx, plan, targets, fds, progress
        self.fio = fio
        self.ok = self.failed = 0
        self.lost: dict[str, str] = {}

    def job(self, spec: TrialSpec) -> TrialJob:
        plan, w = self.plan, spec.workload
        assert isinstance(w, WorkloadSpec)
        plain, cipher = plan.read_by(w)
        if spec.target == plan.raw_target:
            fds, first = tuple(self.fds.cipher[i] for i in cipher), plan.cipher_files[cipher[0]][0]
        else:
            fds, first = tuple(self.fds.plain[i] for i in plain), plan.files[plain[0]].plain
        opts = JobOptions(
            # what the page cache is counted of (the files by their paths, as fincore opens
            # them); the job itself names only descriptors
            filename=first,
            size=0,
            direct=False,
            ioengine=self.ctx.ioengine,
            zero_data=False,
            seed=plan.seeds[w.name],
            time_limit=plan.trial_time or None,
            files=tuple(f"/dev/fd/{fd}" for fd in fds),
        )
        return TrialJob(render_job(w, opts), opts.filename, partial(self.fio, readonly=True, pass_fds=fds))

    def run(self, spec: TrialSpec) -> bool:
        success = run_job(self.ctx, spec, self.targets[spec.target], self.job(spec))
        self.ok += success
        self.failed += not success
        self.progress.trial_done(spec, success)
        return success

    def finish(self) -> tuple[int, int]:
        return self.ok, self.failed


def targets_of(plan: FusePlan) -> dict[str, Target]:
    """The two targets, as the trials and the store see them: the mount's directory read
    through the overlay, and its cipher directory; the page cache of both views' files is
    counted for each (a read through the mount fills the cipher files' too)."""
    v = plan.volume
    cached = (*(p.plain for p in plan.files), *(p for p, _ in plan.cipher_files))
    said = {"files read": f"{len(plan.files)} ({plan.plain_bytes:,} bytes)"}
    raw = Target(
        name=plan.raw_target,
        backend=Existing.CIPHERTEXT,
        encrypted=False,
        baseline=None,
        path=v.cipher_root,
        backing=(),
        details={"cipher directory": str(v.cipher_dir), **said},
        cached=cached,
    )
    mount = Target(
        name=plan.mapping_target,
        backend=Existing.FUSE,
        encrypted=True,
        baseline=plan.raw_target,
        path=v.root,
        backing=(),
        helpers=v.helpers,
        details={"overlay": v.overlay, "mountpoint": str(v.mountpoint), **said},
        cached=cached,
    )
    return {raw.name: raw, mount.name: mount}


def hides(plan: FusePlan) -> bool:
    """The proof of encryption here: the first bytes of the sample's first file, read
    through the mount, are found in none of the ciphertext read against it (in its own
    ciphertext where paired; in every cipher file where not). Everything opened O_RDONLY."""
    first = plan.files[0]
    with open(first.plain, "rb") as f:
        needle = f.read(SAMPLE_BYTES)
    if len(needle) < 16:
        needle = needle * (16 // max(1, len(needle)) + 1)
    for path in [first.cipher] if first.cipher is not None else [p for p, _ in plan.cipher_files]:
        if _holds(path, needle):
            return False
    return True


def _holds(path: Path, needle: bytes) -> bool:
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle) + 1 :]
    return False


def measure(
    plan: FusePlan,
    fds: Descriptors,
    store: Store,
    progress: Progress,
    session: Session,
    run_id: int,
    env: JsonObject,
) -> tuple[int, int]:
    """The trials of `plan`, interleaved until the controller has its answers."""
    device = disks_of(plan.volume.stack)
    env["scratch_device"] = device
    progress.phase("reading the ioengine fio can use")
    engine = probe_ioengine(session.path("ioengine-probe"), session, plan.ioengine)
    env["ioengine"] = engine
    store.update_environment(run_id, env)
    targets = targets_of(plan)
    verified = hides(plan)
    for t in targets.values():
        t.direct_io, t.encryption_verified = DirectIO.BUFFERED, verified if t.encrypted else None
        store.insert_target(run_id, target_row(t, "buffered", READ_HOW))
    if not verified:
        store.add_note(
            run_id,
            f"the first bytes of a file read through {plan.mapping_target} are in its ciphertext as "
            "they are: this mount does not encrypt them, so it is not ranked",
        )
    ctx = TrialContext(session, store, run_id, plan.plain_bytes, engine, False, device=device or None)
    controller = Controller(plan.rule, plan.questions, plan.seed, plan.ranking)
    executor = FuseExecutor(ctx, plan, targets, fds, progress)
    spend = Spend(replace(ctx, device=None), set())
    return interleave(executor, controller, spend, plan.suite.workloads, list(plan.targets), plan.seed)


def target_row(t: Target, io_mode: str, how: str) -> TargetInfo:
    """A target of run --existing as the store keeps it (`how`: how it is read, in words)."""
    return TargetInfo(
        name=t.name,
        backend=t.backend,
        baseline=t.baseline,
        encrypted=t.encrypted,
        io_mode=io_mode,
        direct_io=str(t.direct_io),
        direct_io_reason=how,
        marker_in_backing=None,
        encryption_verified=t.encryption_verified,
        details=dict(t.details),
        medium=Medium.DEVICE,
    )


def run_fuse(volume: FuseVolume, request: RunRequest, progress: Progress, registry: Path | None) -> Executed:
    """A read-only run of the FUSE directory `volume`, stored as any run."""
    plan = fuse_plan(request, volume)
    store = Store.open(plan.db_path)
    try:
        with interruptible(), opened(plan) as fds:
            stored = Stored(
                plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, (), False
            )
            progress.phase(f"your files {volume.root}: {volume.stack.line()}")
            return in_session(stored, store, progress, partial(measure, plan, fds, store, progress), registry)
    finally:
        store.close()
