"""A whole run of a plan: the session and its scratch lock, recovery of dead runs,
provisioning, the cipher figures, the data files, the interleaved trials, and
teardown on every way out (success, error, SIGINT/SIGTERM). `cryptbench run` and
`cryptbench selftest` are this with their own plans. What it returns says where the
run is stored; the command reads its document from there, as `show` does."""

from __future__ import annotations

import resource
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from cryptbench import __version__
from cryptbench.backends import REGISTRY, versions
from cryptbench.cipher import ceilings, userspace
from cryptbench.engines.apps import AppWorkload
from cryptbench.engines.command_process import cgroup_mode
from cryptbench.engines.fio import probe_ioengine
from cryptbench.engines.metric_catalog import info
from cryptbench.machine.interrupts import interruptible
from cryptbench.machine.session import Session
from cryptbench.measure import environment, resident
from cryptbench.measure.device import device_of
from cryptbench.model.errors import Interrupted
from cryptbench.model.json_types import JsonObject
from cryptbench.pipeline import cipher_speed, sizing
from cryptbench.pipeline.lifecycle import Lifecycle, failure_kept
from cryptbench.pipeline.provision import provision_all, target_row
from cryptbench.planning.plan import Plan, build_plan
from cryptbench.planning.request import RunRequest
from cryptbench.planning.suite import Workload, WorkloadSpec, family, primary_metric
from cryptbench.stats.stopping import Controller, Question, RankingGroups, questions
from cryptbench.store.database import Store
from cryptbench.trial.context import NullProgress, Progress, TrialContext
from cryptbench.trial.runner import app_env
from cryptbench.trial.schedule import Executor, Spend, interleave, workload_seeds


@dataclass(frozen=True)
class Executed:
    """A run done (or stopped) and stored."""

    run_id: int
    status: str  # complete, interrupted, failed
    db_path: Path  # the database it is stored in
    recovered: list[str] = field(default_factory=list)  # what stale runs left and we removed
    exit_code: int = 0


def execute(plan: Plan, store: Store, progress: Progress, registry: Path | None = None) -> Executed:
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
    plan_versions = versions(plan.backends)
    with Lifecycle(progress, finish) as life:
        session = life.open(plan.target_dir, registry)
        session.passphrase = plan.passphrase
        session.ram_bytes = plan.ram_bytes
        env = environment.collect(plan.target_dir, plan_versions)
        run_id = store.insert_run(plan.suite.name, plan.to_json(), env, __version__)
        with failure_kept(store, run_id):
            for name in plan.added_baselines:
                store.add_note(run_id, f"added {name} as a baseline")
            for name, reason in plan.skipped:
                store.add_note(run_id, f"skipped {name}: {reason}")
            _ok, failed = _measure(plan, store, run_id, session, progress, env)
        completed = True
    signum = life.last_signal()
    if run_id is None and signum is not None:  # a signal came before anything was stored
        raise Interrupted(signum)
    assert run_id is not None  # open() and insert_run raise, unless a signal came
    # Complete, but a script checking the exit status must hear of failures.
    exit_code = life.exit_code(1 if failed else 0)
    return Executed(run_id, life.status(completed), plan.db_path, life.recovered, exit_code)


def _measure(
    plan: Plan, store: Store, run_id: int, session: Session, progress: Progress, env: JsonObject
) -> tuple[int, int]:
    """Provision, prove, lay out and run every trial; teardown is the caller's.
    `env`: the environment stored with the run, completed here once the targets are up.

    Returns (trials that succeeded, trials that failed or could not run)."""
    with ExitStack() as stack:
        provisioned, note = provision_all(plan, session, progress, stack)
        targets, direct = provisioned.targets, provisioned.direct
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
            plan.write_new_file,
            device_of(plan.target_dir),
        )
        provisioned.ctx = ctx
        seeds = workload_seeds(plan.seed, plan.suite.workloads)
        asked = sizing.asked(plan, seeds)
        ctx = provisioned.ctx = sizing.grow_data_file(asked, ctx, provisioned, direct, progress)
        if any(isinstance(w, WorkloadSpec) and not w.is_write for w in plan.suite.workloads):
            for t in targets.values():
                provisioned.lay_out(t)
        fio_writes = any(isinstance(w, WorkloadSpec) and w.is_write for w in plan.suite.workloads)
        if plan.from_start and not plan.suite.write_new_file and fio_writes:
            store.add_note(
                run_id,
                "every target's write trials write a new file, since "
                f"{', '.join(plan.from_start)} can write a file only from its start",
            )
        if any(isinstance(w, AppWorkload) and w.runs_commands for w in plan.suite.workloads):
            store.add_note(run_id, f"your commands run each in a process group of its own, {cgroup_mode()}")
        for w in plan.suite.workloads:
            if isinstance(w, AppWorkload):
                progress.phase(f"making the inputs of {w.name}")
                w.make_inputs(app_env(ctx, w, next(iter(targets.values())), seeds[w.name]))
        writes = {w.name for w in plan.suite.workloads if w.is_write}
        spend = Spend(ctx, writes)  # before calibration: its writes and time are the run's too
        ctx = provisioned.ctx = sizing.size_trials(asked, ctx, provisioned, direct, progress)
        executor = Executor(ctx, provisioned, direct, seeds, progress)
        controller = Controller(plan.rule, run_questions(plan), plan.seed, ranking_groups(plan))
        note_not_run(plan.skip, store, run_id)
        return interleave(
            executor, controller, spend, plan.suite.workloads, list(targets), plan.seed, plan.skip
        )


def note_not_run(skip: dict[str, dict[str, str]], store: Store, run_id: int) -> None:
    """A run note per target the plan leaves out of some workloads: which, and why."""
    by_target: dict[str, list[str]] = {}
    for w, left in skip.items():
        for name in left:
            by_target.setdefault(name, []).append(w)
    for name, ws in by_target.items():
        store.add_note(run_id, f"{', '.join(ws)} not run on {name}: {skip[ws[0]][name]}")


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


def run_questions(plan: Plan) -> list[Question]:
    """What the run must answer: per workload's primary metric, each target asked for (not a
    baseline cryptbench added) against its baseline."""
    asked = {t.name for t in plan.targets if t.backend not in plan.added_baselines}
    asked_all = workload_questions(plan.suite.workloads, plan.baselines, asked)
    return [q for q in asked_all if q.target not in plan.skip.get(q.workload, {})]


def workload_questions(
    workloads: Sequence[Workload], baselines: dict[str, str | None], asked: set[str]
) -> list[Question]:
    """Per workload's primary metric, each target of `asked` against its baseline
    (`baselines`: target -> its baseline's name, None for a baseline): a local run's
    questions and a fleet's, whose targets are HOST/NAME."""
    wanted = [(w.name, (primary_metric(w), info(primary_metric(w)).higher_is_better)) for w in workloads]
    return questions(wanted, baselines, asked)


def ranking_groups(plan: Plan) -> RankingGroups:
    """Each encrypted target and the plain of its medium it is ranked against, as the
    ranking (analysis/ranking.py) groups them; the workloads' kinds of work."""
    plains = {t.medium: t.name for t in plan.targets if t.backend == "plain"}
    plain_of = {
        t.name: plains[t.medium] for t in plan.targets if REGISTRY[t.backend].encrypted and t.medium in plains
    }
    workloads = plan.suite.workloads
    return RankingGroups(
        plain_of,
        {w.name: family(w) for w in workloads},
        {w.name: info(primary_metric(w)).higher_is_better for w in workloads},
    )


def run(request: RunRequest, *, progress: Progress | None = None, registry: Path | None = None) -> Executed:
    plan = build_plan(request)
    # A core dump of a run would hold its keys.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    store = Store.open(plan.db_path)
    try:
        with interruptible():
            return execute(plan, store, progress or NullProgress(), registry)
    finally:
        store.close()
