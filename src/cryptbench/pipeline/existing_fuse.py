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
from functools import partial
from pathlib import Path

from cryptbench.backends.base import DirectIO, Target
from cryptbench.engines.fio import run_fio
from cryptbench.engines.jobs import JobOptions, render_job
from cryptbench.machine.session import Session
from cryptbench.measure.fuse_volume import FuseVolume
from cryptbench.model.errors import UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Existing
from cryptbench.pipeline.execute import Executed
from cryptbench.pipeline.read_only import Reading, ReadOnlyExecutor, measure_reads, run_reads
from cryptbench.planning.existing_fuse import FusePlan, fuse_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.store.database import Store
from cryptbench.trial.context import Progress, TrialContext, TrialSpec
from cryptbench.trial.runner import FioRunner, TrialJob

SAMPLE_BYTES = 4096  # bytes of a file's plaintext looked for in its ciphertext (the proof)
NEEDLE_LEAST = 16  # bytes: the least of a file the proof looks for
CHUNK = 1 << 20  # bytes read at a time while looking


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


class FuseExecutor(ReadOnlyExecutor):
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
        super().__init__(ctx, targets, progress)
        self.plan, self.fds, self.fio = plan, fds, fio

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
    """The proof of encryption here: the first bytes of the sample's first file of 16 bytes or more, read
    through the mount, are found in none of the ciphertext read against it (in its own
    ciphertext where paired; in every cipher file where not). Everything opened O_RDONLY."""
    # bytes enough that finding them in ciphertext by chance is out of the question
    first = next((p for p in plan.files if p.plain_bytes >= NEEDLE_LEAST), plan.files[0])
    with open(first.plain, "rb") as f:
        needle = f.read(SAMPLE_BYTES)
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
    targets = targets_of(plan)
    reading = Reading(
        stack=plan.volume.stack,
        targets=targets,
        verified=hides(plan),
        io_mode="buffered",
        direct_io=DirectIO.BUFFERED,
        how="a FUSE mount's files read buffered, every cache dropped before each trial",
        not_verified=f"the first bytes of a file read through {plan.mapping_target} are in its "
        "ciphertext as they are: this mount does not encrypt them, so it is not ranked",
        size=plan.plain_bytes,
    )

    def executor(ctx: TrialContext) -> FuseExecutor:
        return FuseExecutor(ctx, plan, targets, fds, progress)

    return measure_reads(plan, reading, executor, store, progress, session, run_id, env)


def run_fuse(volume: FuseVolume, request: RunRequest, progress: Progress, registry: Path | None) -> Executed:
    """A read-only run of the FUSE directory `volume`, stored as any run."""
    plan = fuse_plan(request, volume)
    with opened(plan) as fds:
        said = f"your files {volume.root}: {volume.stack.line()}"
        return run_reads(plan, said, partial(measure, plan, fds), progress, registry)
