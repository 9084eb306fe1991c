"""`cryptbench fleet run`'s work: one suite on many hosts at once, through their fio
servers.

Each host runs `cryptbench serve`; its manifest is read and checked against the others
and the suite (fleet_hosts.py), then the rounds run as a local run's do
(schedule.interleave, the adaptive rule over every host's questions), through the
Coordinator (fleet_coordinator.py): every target's trial on all hosts that serve it
with one `fio --client` invocation. Each host's figure is its own trial (target
HOST/NAME), compared with its own baseline on the same host.

A host that stops answering is marked failed, its remaining trials are not run, and the
others go on; its targets are its own serve's to tear down. The coordinator writes
nothing but the results database and the job files it sends (in a private temporary
directory it removes)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptbench import __version__
from cryptbench.engines.fio import fio_version
from cryptbench.fleet import hosts as hosts_mod
from cryptbench.machine.interrupts import interruptible
from cryptbench.measure import environment
from cryptbench.model.errors import UnavailableError, UsageError
from cryptbench.model.json_types import JsonObject
from cryptbench.model.stored_run import RunPlan
from cryptbench.pipeline.execute import Executed
from cryptbench.pipeline.fleet_coordinator import Coordinator
from cryptbench.pipeline.fleet_hosts import (
    MANIFEST_TIMEOUT,
    Host,
    check_manifests,
    check_suite,
    read_manifest,
    store_hosts,
)
from cryptbench.pipeline.lifecycle import Lifecycle
from cryptbench.planning.quantities import stopping_quantities
from cryptbench.planning.questions import workload_questions, workload_seeds
from cryptbench.planning.request import checked_seed
from cryptbench.planning.stopping_rule import stopping_rule
from cryptbench.planning.suite import Suite, WorkloadSpec, load_suite, primary_metric
from cryptbench.stats.stopping import Question, StoppingRule
from cryptbench.store.database import Store, default_db_path
from cryptbench.trial.allocator import Controller
from cryptbench.trial.context import NullProgress, Progress
from cryptbench.trial.schedule import Spend, interleave


@dataclass(frozen=True)
class FleetRequest:
    """What the user asked of a fleet run, as given (durations and percents unparsed):
    built once from the command line (request.request_from_args) or by a caller."""

    hosts: Path  # hosts.toml: each host's address and manifest_command
    suite: str = "quick"  # a built-in suite's name or a TOML file of fio workloads
    repeats: int | None = None  # a fixed count of rounds; None: adaptive
    precision: str | None = None  # percent, as typed ("5%")
    equivalence: str | None = None  # percent, as typed ("3%")
    overrun: str = "drop"  # when the minimum rounds cannot fit --max-time: drop workloads, or extend it
    min_repeats: int | None = None  # count
    max_repeats: int | None = None  # count
    max_time: str | None = None  # a duration, as typed ("5m")
    seed: int | None = None  # None: a random one
    db: Path | None = None  # None: the default database
    manifest_timeout: float = MANIFEST_TIMEOUT  # seconds for each host's manifest_command


def fleet_plan(
    suite: Suite,
    workloads: list[WorkloadSpec],
    hosts: list[Host],
    size: int,
    zero: bool,
    rule: StoppingRule,
    seed: int,
    targets: list[str],
) -> RunPlan:
    """The run's plan as a local run's document holds it, with each host's name."""
    return RunPlan.write(
        suite=suite.name,
        workloads=[w.name for w in workloads],
        primary_metrics={w.name: primary_metric(w) for w in workloads},
        workload_specs={
            w.name: {"rw": w.rw, "bs": w.bs, "iodepth": w.iodepth, "view": w.view} for w in workloads
        },
        apps={},
        backends=sorted({t.backend for h in hosts if h.manifest for t in h.manifest.targets}),
        targets=targets,
        states=[],
        fs="ext4",
        write_new_file=False,
        added_baselines=[],
        skipped=[],
        size=size,
        repeats=rule.max_repeats,
        stopping=rule.to_json(),
        seed=seed,
        io_mode="each host's",
        data="zero" if zero else "random",
        summary=None,
        as_published=[],
        ram=False,
        ram_bytes=0,
        fleet={"hosts": [h.spec.name for h in hosts]},
    )


def coordinator_environment() -> JsonObject:
    """Facts about the coordinator; each host's own are in its manifest (document's fleet.hosts)."""
    env = environment.collect(Path("/"))
    return {
        "role": "fleet coordinator",
        **{k: env[k] for k in ("hostname", "os", "kernel", "cpu_model", "cpu_count", "python", "cryptbench")},
        "fio": fio_version(),
    }


def run_questions(workloads: list[WorkloadSpec], hosts: list[Host]) -> tuple[Question, ...]:
    """Each host's targets (HOST/NAME) against its own baselines on the same host; the
    baselines a host's serve added are not asked about."""
    baselines: dict[str, str | None] = {}
    asked: set[str] = set()
    for h in hosts:
        if h.manifest is None:
            continue
        added = set(h.manifest.added_baselines)
        for t in h.manifest.targets:
            name = f"{h.spec.name}/{t.name}"
            baselines[name] = None if t.baseline is None else f"{h.spec.name}/{t.baseline}"
            if t.backend not in added:
                asked.add(name)
    return workload_questions(workloads, baselines, asked)


def execute(
    suite: Suite,
    workloads: list[WorkloadSpec],
    hosts: list[Host],
    rule: StoppingRule,
    seed: int,
    store: Store,
    progress: Progress,
) -> Executed:
    size, zero = check_manifests(hosts, workloads)
    usable = [h for h in hosts if h.manifest is not None]
    targets = [
        f"{h.spec.name}/{t.name}" for h in usable if h.manifest is not None for t in h.manifest.targets
    ]
    run_id = store.insert_run(
        suite.name,
        fleet_plan(suite, workloads, hosts, size, zero, rule, seed, targets).raw,
        coordinator_environment(),
        __version__,
    )
    completed, exit_code = False, 1  # until the trials end

    def finish(life: Lifecycle) -> None:
        # In the held section: the status is stored before a late signal can cut in.
        store.finish_run(run_id, life.status(completed))

    with Lifecycle(progress, finish) as life, store.failure_kept(run_id):
        store_hosts(store, run_id, hosts)
        seeds = workload_seeds(seed, workloads)
        with tempfile.TemporaryDirectory(prefix="cryptbench-fleet-") as jobs_dir:
            coordinator = Coordinator(store, run_id, usable, size, zero, seeds, Path(jobs_dir), progress)
            if any(not w.is_write for w in workloads):
                for name in dict.fromkeys(t.partition("/")[2] for t in targets):
                    coordinator.lay_out(
                        name, [t.partition("/")[0] for t in targets if t.partition("/")[2] == name]
                    )
            controller = Controller(rule, run_questions(workloads, usable), seed)
            spend = Spend(coordinator, {w.name for w in workloads if w.is_write})
            _ok, failed = interleave(coordinator, controller, spend, tuple(workloads), targets, seed)
        alive = [h for h in usable if h.failed is None]
        if not alive:
            store.add_note(run_id, "every host stopped answering")
        completed, exit_code = True, 1 if failed or len(alive) < len(hosts) else 0
    return Executed(run_id, life.status(completed), store.path, exit_code=life.exit_code(exit_code))


def run(request: FleetRequest, *, progress: Progress | None = None) -> Executed:
    """The request checked (hosts file, suite, stopping rule, seed), every host's manifest
    read, then the run; a host whose manifest cannot be read is left out, with why."""
    r = request
    specs = hosts_mod.load(r.hosts)
    suite = load_suite(r.suite)
    workloads = check_suite(suite)
    # the hosts write on their own disks: no default byte budget here
    rule = stopping_rule(suite, r, stopping_quantities(r), target_dir=None)
    seed = checked_seed(r.seed)
    progress = progress or NullProgress()
    fleet: list[Host] = []
    for spec in specs:
        progress.phase(f"reading the manifest of {spec.name}")
        try:
            fleet.append(Host(spec, read_manifest(spec, r.manifest_timeout)))
        except UsageError as e:
            fleet.append(Host(spec, None, str(e)))
    if all(h.manifest is None for h in fleet):
        raise UnavailableError("no host could be used: " + "; ".join(str(h.failed) for h in fleet[:3]))
    store = Store.open(r.db or default_db_path())
    try:
        with interruptible():
            return execute(suite, workloads, fleet, rule, seed, store, progress)
    finally:
        store.close()
