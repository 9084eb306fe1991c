"""`cryptbench run`: provision, prove, lay out, run interleaved trials, tear down."""

from __future__ import annotations

import resource
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptbench import __version__, resources
from cryptbench.adaptive import Controller, Question, questions
from cryptbench.backends import REGISTRY, DirectIO, Target, TargetSpec
from cryptbench.cipher import ceilings, userspace
from cryptbench.commands import cipher as cipher_cmd
from cryptbench.engines.apps import AppWorkload
from cryptbench.engines.fio import probe_ioengine, run_fio
from cryptbench.engines.jobs import render_layout
from cryptbench.errors import CryptbenchError, DiskFull, Interrupted, ProvisionError, TrialError
from cryptbench.interrupts import interruptible, signals_blocked, take_pending
from cryptbench.measure import environment
from cryptbench.measure.device import device_of
from cryptbench.metrics import info
from cryptbench.plan import Plan, build_plan
from cryptbench.report import document
from cryptbench.runner import (
    ENOSPC_TEXT,
    Executor,
    NullProgress,
    Progress,
    Spend,
    TrialContext,
    app_env,
    job_options,
    run_rounds,
    target_lost,
)
from cryptbench.session import MARKER, Session, candidate_run_dirs, recover, scratch_root
from cryptbench.store import Store, default_db_path
from cryptbench.suite import WorkloadSpec, primary_metric
from cryptbench.verify import marker_in_backing, probe_direct_io


@dataclass
class RunOutcome:
    run_id: int
    status: str  # complete, interrupted, failed
    document: dict[str, Any]
    recovered: list[str] = field(default_factory=list)  # what stale runs left and we removed
    exit_code: int = 0


def recover_stale(targets: list[Path], registry: Path | None = None) -> list[str]:
    messages: list[str] = []
    for run_dir in candidate_run_dirs(targets, registry):
        done = recover(run_dir, registry)
        if done:
            messages.extend(done)
    for target in targets:
        root = scratch_root(target)
        if (root / MARKER).is_file():  # only a scratch root cryptbench made
            with signals_blocked():
                messages.extend(resources.detach_orphans(root))
    return messages


def prove_encryption(session: Session, targets: dict[str, Target]) -> None:
    for t in targets.values():
        t.marker_in_backing = marker_in_backing(session, t)
    for t in targets.values():
        if not t.encrypted:
            continue
        if t.marker_in_backing:
            raise ProvisionError(
                f"plaintext written through {t.name} appeared in its backing storage: "
                "the target is not encrypted, refusing to measure it"
            )
        base = targets.get(t.baseline or "")
        # Without the positive control the absence of the marker proves nothing.
        t.encryption_verified = bool(base is not None and base.marker_in_backing)


def probe_direct(session: Session, targets: dict[str, Target]) -> None:
    """What O_DIRECT does on each target, probed, beside what its backend declared."""
    for t in targets.values():
        declared = t.direct_io_reason
        t.direct_io, evidence = probe_direct_io(session, t)
        t.direct_io_reason = (
            f"{declared}; {evidence}" if declared and t.direct_io is not DirectIO.HONOURED else evidence
        )


def decide_io_modes(requested: str, targets: dict[str, Target]) -> tuple[dict[str, bool], str | None]:
    """Direct I/O per target, and a note explaining the choice.

    The device targets decide; a RAM twin follows them unless it refuses
    O_DIRECT. On tmpfs every page is resident by nature, so the probe's "stayed
    in the page cache" says nothing there, and must not turn the device targets
    buffered.
    """
    ram = {n: t for n, t in targets.items() if t.medium == "ram"}
    device = {n: t for n, t in targets.items() if n not in ram}
    modes, note = _decide_device(requested, device)
    follow = bool(device) and all(modes.values()) if requested == "auto" else requested == "direct"
    for n, t in ram.items():
        modes[n] = follow and t.direct_io is not DirectIO.REFUSED
    return modes, note


def _decide_device(requested: str, targets: dict[str, Target]) -> tuple[dict[str, bool], str | None]:
    not_direct = [t for t in targets.values() if t.direct_io is not DirectIO.HONOURED]
    if requested == "buffered":
        return {n: False for n in targets}, "buffered I/O for every target, as asked (--io-mode buffered)"
    if requested == "direct":
        note = None
        if not_direct:
            note = "direct I/O where honoured; buffered on " + ", ".join(t.name for t in not_direct)
        return {n: t.direct_io is DirectIO.HONOURED for n, t in targets.items()}, note
    if not not_direct:
        return {n: True for n in targets}, "direct I/O for every target: each honours O_DIRECT"
    names = ", ".join(t.name for t in not_direct)
    verb = "does" if len(not_direct) == 1 else "do"
    return {n: False for n in targets}, (
        f"buffered I/O for every target, like for like, because {names} {verb} not honour O_DIRECT "
        "(writes end with fsync; caches are dropped before every trial)"
    )


def target_row(t: Target, direct: bool) -> dict[str, Any]:
    return {
        "name": t.name,
        "backend": t.backend,
        "baseline": t.baseline,
        "encrypted": t.encrypted,
        "io_mode": "direct" if direct else "buffered",
        "direct_io": str(t.direct_io),
        "direct_io_reason": t.direct_io_reason,
        "marker_in_backing": t.marker_in_backing,
        "encryption_verified": t.encryption_verified,
        "medium": t.medium,
        "details": {**t.details, "helpers": ", ".join(f"{h.name} (pid {h.pid})" for h in t.helpers)},
    }


def execute(plan: Plan, store: Store, progress: Progress, registry: Path | None = None) -> RunOutcome:
    session: Session | None = None
    run_id: int | None = None
    recovered: list[str] = []
    status, exit_code = "failed", 1
    try:
        # The scratch lock first: a second run must not recover (or disturb)
        # anything. A signal now waits until the session exists to tear it down.
        with signals_blocked():
            session = Session.create(plan.target_dir, registry)
            session.passphrase = plan.passphrase
            session.ram_bytes = plan.ram_bytes
        recovered = recover_stale([plan.target_dir], registry)
        run_id = store.insert_run(
            plan.suite.name, plan.to_json(), environment.collect(plan.target_dir), __version__
        )
        for name in plan.added_baselines:
            store.add_note(run_id, f"added {name} as a baseline")
        for name, reason in plan.skipped:
            store.add_note(run_id, f"skipped {name}: {reason}")
        _ok, failed = _measure(plan, store, run_id, session, progress)
        # Complete, but a script checking the exit status must hear of failures.
        status, exit_code = "complete", 1 if failed else 0
    except Interrupted as e:
        status, exit_code = "interrupted", e.exit_code
    except CryptbenchError as e:
        if run_id is None:
            raise
        store.add_note(run_id, f"failed: {e}")
        raise type(e)(f"{e}; finished trials are kept (cryptbench show {run_id})") from None
    finally:
        # Teardown holds SIGINT/SIGTERM to its end, whenever they arrive.
        with signals_blocked():
            try:
                if session is not None:
                    progress.phase("tearing down")
                    session.close()
            finally:
                late = take_pending()
                if late is not None:
                    exit_code = 128 + late
                    if run_id is not None:
                        store.add_note(run_id, f"signal {late} arrived during teardown; teardown completed")
                if run_id is not None:
                    store.finish_run(run_id, status)
    if run_id is None:
        raise Interrupted(exit_code - 128)  # nothing was stored to report
    return RunOutcome(run_id, status, document.build(store, run_id), recovered, exit_code)


class Provisioned:
    """The run's targets by name, each torn down on its own, so that a stateful
    target can be made anew before a write trial (runner.prepare)."""

    def __init__(self, plan: Plan, session: Session, progress: Progress) -> None:
        self.plan = plan
        self.session = session
        self.progress = progress
        self.targets: dict[str, Target] = {}
        self._stacks: dict[str, ExitStack] = {}
        self._specs: dict[str, TargetSpec] = {}
        self.direct: dict[str, bool] = {}
        self.ctx: TrialContext | None = None

    def __getitem__(self, name: str) -> Target:
        return self.targets[name]

    def up(self, spec: TargetSpec) -> Target:
        stack = ExitStack()
        try:
            t = stack.enter_context(
                REGISTRY[spec.backend].provision(self.session, spec, self.plan.target_bytes)
            )
        except BaseException:
            stack.close()
            raise
        t.name, t.baseline, t.medium = spec.name, self.plan.baseline_of(spec), spec.medium
        self._stacks[spec.name], self._specs[spec.name], self.targets[spec.name] = stack, spec, t
        return t

    def reset(self, name: str) -> Target:
        old = self.targets[name]
        self._stacks.pop(name).close()
        new = self.up(self._specs[name])
        # Proven once, on the first of these identical stacks.
        new.marker_in_backing, new.encryption_verified = old.marker_in_backing, old.encryption_verified
        new.direct_io, new.direct_io_reason = old.direct_io, old.direct_io_reason
        return new

    def lay_out(self, target: Target) -> None:
        """Write the data file the read trials read, before any clock starts."""
        assert self.ctx is not None
        self.progress.phase(f"writing the {self.plan.size >> 20} MiB data file on {target.name}")
        layout = self.session.path("jobs", f"layout-{self._specs[target.name].slug}.fio")
        layout.parent.mkdir(exist_ok=True)
        layout.write_text(
            render_layout(job_options(self.ctx, target, self.direct[target.name], self.plan.seed))
        )
        try:
            run_fio(layout, self.session)
        except TrialError as e:
            if ENOSPC_TEXT in str(e):
                raise DiskFull(
                    f"the target filesystem filled up during the data file's layout on {target.name} "
                    f"({ENOSPC_TEXT}); the run stopped"
                ) from None
            why = target_lost(target, "while the data file was written") or str(e)
            raise ProvisionError(f"could not write the data file on {target.name}: {why}") from None

    def close(self) -> None:
        while self._stacks:
            _name, stack = self._stacks.popitem()  # the newest first
            stack.close()


def provision_all(
    plan: Plan, session: Session, progress: Progress, stack: ExitStack
) -> tuple[Provisioned, str | None]:
    """Every target of the plan up, proven encrypted, its O_DIRECT probed and the
    I/O mode decided like for like; torn down when `stack` closes. Returns the
    targets and the note explaining the I/O mode."""
    provisioned = Provisioned(plan, session, progress)
    stack.callback(provisioned.close)
    for spec in plan.targets:
        progress.phase(f"provisioning {spec.name}")
        provisioned.up(spec)
    progress.phase("proving encryption")
    prove_encryption(session, provisioned.targets)
    probe_direct(session, provisioned.targets)
    provisioned.direct, note = decide_io_modes(plan.io_mode, provisioned.targets)
    return provisioned, note


def _measure(plan: Plan, store: Store, run_id: int, session: Session, progress: Progress) -> tuple[int, int]:
    """Provision, prove, lay out and run every trial; teardown is the caller's.

    Returns (trials that succeeded, trials that failed or could not run)."""
    with ExitStack() as stack:
        provisioned, note = provision_all(plan, session, progress, stack)
        targets, direct = provisioned.targets, provisioned.direct
        if note:
            store.add_note(run_id, note)
        engine = probe_ioengine(session.path("ioengine-probe"))
        env = environment.collect(plan.target_dir)  # now with xts(aes) instantiated
        env["ioengine"] = engine
        store.update_environment(run_id, env)
        for t in targets.values():
            store.insert_target(run_id, target_row(t, direct[t.name]))
        time_ciphers(plan, store, run_id, env, progress)
        ctx = TrialContext(
            session,
            store,
            run_id,
            plan.size,
            engine,
            plan.zero_data,
            plan.suite.write_new_file,
            device_of(plan.target_dir),
        )
        provisioned.ctx = ctx
        workload_seeds = {w.name: (plan.seed + i) % 2**32 for i, w in enumerate(plan.suite.workloads)}
        if any(isinstance(w, WorkloadSpec) and not w.is_write for w in plan.suite.workloads):
            for t in targets.values():
                provisioned.lay_out(t)
        for w in plan.suite.workloads:
            if isinstance(w, AppWorkload):
                progress.phase(f"making the inputs of {w.name}")
                w.make_inputs(app_env(ctx, w, next(iter(targets.values())), workload_seeds[w.name]))
        executor = Executor(ctx, provisioned, direct, workload_seeds, progress)
        writes = {w.name for w in plan.suite.workloads if w.is_write}
        spend = Spend(ctx, writes)
        controller = Controller(plan.rule, run_questions(plan), plan.seed)

        def record() -> None:
            store.set_stopping(run_id, stopping_record(controller, spend))

        return run_rounds(executor, plan.suite.workloads, list(targets), controller, spend, plan.seed, record)


CIPHER_SECONDS = 0.2  # per cipher figure the run takes: enough for a ceiling, not a study
CIPHER_REPEATS = 3


def time_ciphers(plan: Plan, store: Store, run_id: int, env: dict[str, Any], progress: Progress) -> None:
    """OpenSSL on the ciphers the run's layers use (and AF_ALG where the kernel
    has it), before any trial, stored with the run: the ceilings its
    efficiency figures are held to (cipher/ceilings.py)."""
    wanted = ceilings.openssl_cells({t.backend for t in plan.targets}, userspace.cores())
    cases = {(c.name, c.unit): c for c in userspace.CASES}
    cells = [(cases[key], workers) for key, workers in wanted if key in cases]
    if not cells:
        return
    doc = cipher_cmd.measure(
        seconds=CIPHER_SECONDS, repeats=CIPHER_REPEATS, kernel_stack=False, cells=cells, progress=progress
    )
    store.insert_cipher(run_id, doc, env, __version__)


def run_questions(plan: Plan) -> list[Question]:
    """What the run must answer: per workload's primary metric, each target asked for (not a
    baseline cryptbench added) against its baseline."""
    workloads = []
    for w in plan.suite.workloads:
        metric = primary_metric(w)
        workloads.append((w.name, (metric, info(metric).higher_is_better)))
    asked = {t.name for t in plan.targets if t.backend not in plan.added_baselines}
    return questions(workloads, {t.name: plan.baseline_of(t) for t in plan.targets}, asked)


def stopping_record(controller: Controller, spend: Spend) -> dict[str, Any]:
    return {
        "rule": controller.rule.to_json(),
        "answers": controller.to_json(),
        "stopped_by": None if controller.stopped_by is None else str(controller.stopped_by),
        "bytes_written": spend.bytes(),
        "bytes_source": "device" if spend.device_start is not None else "workloads",
        "seconds": spend.seconds(),
    }


def run(
    *,
    backends: str | None = None,
    suite: str = "quick",
    size: str | None = None,
    repeats: int | None = None,
    seed: int | None = None,
    target: str = "/var/tmp",
    io_mode: str = "auto",
    data: str = "random",
    db: Path | None = None,
    passphrase_file: str | None = None,
    state: str | None = None,
    fs: str | None = None,
    as_published: bool = False,
    precision: str | None = None,
    min_repeats: int | None = None,
    max_repeats: int | None = None,
    max_bytes: str | None = None,
    max_time: str | None = None,
    ram: bool = False,
    progress: Progress | None = None,
    registry: Path | None = None,
) -> RunOutcome:
    plan = build_plan(
        backends=backends,
        suite=suite,
        size=size,
        repeats=repeats,
        seed=seed,
        target=target,
        io_mode=io_mode,
        data=data,
        db=db or default_db_path(),
        passphrase_file=passphrase_file,
        state=state,
        fs=fs,
        as_published=as_published,
        precision=precision,
        min_repeats=min_repeats,
        max_repeats=max_repeats,
        max_bytes=max_bytes,
        max_time=max_time,
        ram=ram,
    )
    # A core dump of a run would hold its keys.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    store = Store.open(plan.db_path)
    try:
        with interruptible():
            return execute(plan, store, progress or NullProgress(), registry)
    finally:
        store.close()
