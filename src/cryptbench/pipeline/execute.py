"""A whole run of a plan: the session and its scratch lock, recovery of dead runs,
provisioning, the cipher figures, the data files, the interleaved trials, and
teardown on every way out (success, error, SIGINT/SIGTERM). `cryptbench run` and
`cryptbench selftest` are this with their own plans. What it returns says where the
run is stored; the command reads its document from there, as `show` does."""

from __future__ import annotations

import resource
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from cryptbench import __version__
from cryptbench.cipher import ceilings, userspace
from cryptbench.engines.apps import AppWorkload
from cryptbench.engines.command_process import cgroup_mode
from cryptbench.engines.fio import probe_ioengine
from cryptbench.machine.interrupts import interruptible
from cryptbench.machine.session import Session
from cryptbench.measure import environment, resident
from cryptbench.model.errors import Interrupted
from cryptbench.model.json_types import JsonObject
from cryptbench.model.stack import Stack
from cryptbench.pipeline import cipher_speed
from cryptbench.pipeline.lifecycle import Lifecycle
from cryptbench.pipeline.provision import provision_all, target_row
from cryptbench.planning.plan import Plan, build_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import WorkloadSpec
from cryptbench.store.database import Store
from cryptbench.trial import sizing
from cryptbench.trial.allocator import Controller
from cryptbench.trial.context import NullProgress, Progress, TrialContext
from cryptbench.trial.runner import app_env
from cryptbench.trial.schedule import Executor, Spend, interleave


@dataclass(frozen=True)
class Executed:
    """A run done (or stopped) and stored."""

    run_id: int
    status: str  # complete, interrupted, failed
    db_path: Path  # the database it is stored in
    recovered: list[str] = field(default_factory=list)  # what stale runs left and we removed
    exit_code: int = 0


# What a run measures once its session is open and it is stored: (session, run id, the
# environment stored with it, to complete) -> (trials that succeeded, failed or not run).
Measure = Callable[[Session, int, JsonObject], tuple[int, int]]


def execute(plan: Plan, store: Store, progress: Progress, registry: Path | None = None) -> Executed:
    def measure(session: Session, run_id: int, env: JsonObject) -> tuple[int, int]:
        session.passphrase = plan.passphrase
        session.ram_bytes = plan.ram_bytes
        return _measure(plan, store, run_id, session, progress, env)

    return in_session(
        Stored(plan.target_dir, plan.suite.name, plan.to_json(), plan.notes, plan.db_path, plan.backends),
        store,
        progress,
        measure,
        registry,
    )


@dataclass(frozen=True)
class Stored:
    """What a run stores before it measures anything."""

    target_dir: Path  # the scratch space: the session, its lock and journal
    suite: str
    plan: JsonObject  # the plan as stored (RunPlan)
    notes: tuple[str, ...]  # the plan's notes, stored before any trial
    db_path: Path
    backends: tuple[str, ...] = ()  # whose programs' versions the environment names
    scratch_said: bool = True  # the stack under the scratch space said at the start: its plain's


def in_session(
    stored: Stored, store: Store, progress: Progress, measure: Measure, registry: Path | None = None
) -> Executed:
    """A run's session (its scratch lock, recovery of dead runs, teardown on every way out),
    the run stored, then `measure` inside it; the run's status stored in teardown's held
    section. `run` and `run --existing` are this with their own measures."""
    run_id: int | None = None
    completed = False  # the trials ended without an error or a signal

    def finish(life: Lifecycle) -> None:
        # In teardown's held section: the status is stored before a late signal can cut in.
        if run_id is None:
            return
        if life.late is not None:
            store.add_note(run_id, f"signal {life.late} arrived during teardown; teardown completed")
        store.finish_run(run_id, life.status(completed))

    failed = 0
    with Lifecycle(progress, finish) as life:
        session = life.open(stored.target_dir, registry)
        env = environment.collect(stored.target_dir, stored.backends)
        if stored.scratch_said:
            _say_stack(env, progress)
        run_id = store.insert_run(stored.suite, stored.plan, env, __version__)
        with store.failure_kept(run_id):
            for note in stored.notes:
                store.add_note(run_id, note)
            _ok, failed = measure(session, run_id, env)
        completed = True
    signum = life.last_signal()
    if run_id is None and signum is not None:  # a signal came before anything was stored
        raise Interrupted(signum)
    assert run_id is not None  # open() and insert_run raise, unless a signal came
    # Complete, but a script checking the exit status must hear of failures.
    exit_code = life.exit_code(1 if failed else 0)
    return Executed(run_id, life.status(completed), stored.db_path, life.recovered, exit_code)


def _measure(
    plan: Plan, store: Store, run_id: int, session: Session, progress: Progress, env: JsonObject
) -> tuple[int, int]:
    """Provision, prove, lay out and run every trial; teardown is the caller's.
    `env`: the environment stored with the run, completed here once the targets are up.

    Returns (trials that succeeded, trials that failed or could not run)."""
    with ExitStack() as stack:
        provisioned, note = provision_all(plan, session, progress, stack)
        targets, direct = provisioned.targets, provisioned.direct
        rows = [target_row(t, direct[t.name]) for t in targets.values()]
        if note:
            store.add_note(run_id, note)
        engine = probe_ioengine(session.path("ioengine-probe"), session, plan.ioengine)
        # fio's code, resident since the probe, survives every drop of the cache (measure/resident.py).
        held = stack.enter_context(resident.hold(resident.program_files("fio")))
        # /proc/crypto lists a template such as xts(aes) only once a target instantiated it
        env["kernel_crypto"] = environment.kernel_crypto()
        env["ioengine"] = engine
        env["fio_code_held_bytes"] = held.bytes
        store.update_environment(run_id, env)
        for row in rows:
            store.insert_target(run_id, row)
        time_ciphers(plan, store, run_id, env, progress)
        # the device whose write counter the environment names: the trials' and the run's alike
        device = env["scratch_device"]
        ctx = TrialContext(
            session,
            store,
            run_id,
            plan.size,
            engine,
            plan.zero_data,
            plan.write_new_file,
            device if isinstance(device, str) else None,
        )
        asked = sizing.Asked.of(plan)
        # the data file as asked, or grown where buffered trials need it larger
        grown = sizing.grow_data_file(asked, ctx, provisioned, direct, progress)
        if any(isinstance(w, WorkloadSpec) and not w.is_write for w in plan.suite.workloads):
            for t in targets.values():
                provisioned.lay_out(t, ctx, grown)
        if any(isinstance(w, AppWorkload) and w.runs_commands for w in plan.suite.workloads):
            store.add_note(run_id, f"your commands run each in a process group of its own, {cgroup_mode()}")
        for w in plan.suite.workloads:
            if isinstance(w, AppWorkload):
                progress.phase(f"making the inputs of {w.name}")
                w.make_inputs(app_env(ctx, w, next(iter(targets.values())), plan.seeds[w.name]))
        # what the rounds must answer, and when they stop
        controller = Controller(plan.rule, plan.questions, plan.seed, plan.ranking)
        writes = {w.name for w in plan.suite.workloads if w.is_write}
        spend = Spend(ctx, writes)  # before calibration: its writes and time are the run's too
        sized = sizing.size_trials(asked, ctx, grown, provisioned, direct, progress)
        executor = Executor(ctx, sized, provisioned, direct, plan.seeds, progress)
        return interleave(
            executor, controller, spend, plan.suite.workloads, list(targets), plan.seed, plan.skip
        )


def _say_stack(env: JsonObject, progress: Progress) -> None:
    """The stack under the scratch space, before anything is measured on it: a user whose
    plain is already encrypted hears so at once, not only in the answer."""
    raw = env.get("stack")
    if not isinstance(raw, dict):
        return
    stack = Stack.from_json(raw)
    progress.phase(f"scratch space {stack.path}: {stack.line()}")
    said = stack.encrypted_sentence()
    if said:
        progress.say(said)


CIPHER_SECONDS = 0.2  # per cipher figure the run takes: enough for a ceiling, not a study
CIPHER_REPEATS = 3


def time_ciphers(plan: Plan, store: Store, run_id: int, env: JsonObject, progress: Progress) -> None:
    """OpenSSL on the ciphers the run's layers use (and AF_ALG where the kernel
    has it), before any trial, stored with the run: the ceilings its
    efficiency figures are held to (cipher/ceilings.py)."""
    wanted = ceilings.openssl_cells({t.backend for t in plan.targets}, userspace.cores())
    cases = {(c.name, c.unit): c for c in userspace.CASES}
    cells = [(cases[key], workers) for key, workers in wanted if key in cases]
    if not cells:
        return
    doc = cipher_speed.measure(
        seconds=CIPHER_SECONDS,
        repeats=CIPHER_REPEATS,
        kernel_stack=False,
        cryptsetup=False,
        cells=cells,
        progress=progress,
    )
    store.insert_cipher(run_id, doc.to_json(), env, __version__)


def run(
    request: RunRequest,
    *,
    progress: Progress | None = None,
    registry: Path | None = None,
    notes: tuple[str, ...] = (),
) -> Executed:
    """The run `request` asks for; `notes`: what its caller says of it first (a twin's make)."""
    plan = build_plan(request)
    if notes:
        plan = replace(plan, notes=(*notes, *plan.notes))
    # A core dump of a run would hold its keys.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    store = Store.open(plan.db_path)
    try:
        with interruptible():
            return execute(plan, store, progress or NullProgress(), registry)
    finally:
        store.close()
