"""`cryptbench fleet run`: one suite on many hosts at once, through their fio servers.

Each host runs `cryptbench serve`; the coordinator reads each host's manifest
(its `manifest_command`), checks them against each other and the suite, then
runs interleaved rounds as `run` does: the workloads in a random order, and
within each workload the targets in a random order, every target's trial run
on all hosts that serve it with one `fio --client` invocation. Each host's
figure is its own trial (target `HOST/NAME`), compared with its own baseline
on the same host. The adaptive rule is `run`'s (adaptive.Controller), over
every host's questions.

A host that stops answering is marked failed with fio's words for it, its
remaining trials are not run, and the others go on; its targets are its own
serve's to tear down. The coordinator writes nothing but the results database
and the job files it sends (in a private temporary directory it removes).
"""

from __future__ import annotations

import argparse
import secrets
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from cryptbench import __version__
from cryptbench.adaptive import Controller, Question, Stopping, questions
from cryptbench.analysis import document
from cryptbench.commands.common_args import add_db, add_details, add_json, add_stopping
from cryptbench.engines.fio import FIO_TIMEOUT, fio_version
from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.errors import TrialError, UnavailableError, UsageError
from cryptbench.fleet import client
from cryptbench.fleet import hosts as hosts_mod
from cryptbench.fleet.hosts import HostSpec
from cryptbench.fleet.manifest import Manifest, ManifestTarget, parse
from cryptbench.interrupts import interruptible
from cryptbench.json_types import JsonObject
from cryptbench.measure import environment
from cryptbench.metrics import info
from cryptbench.pipeline.lifecycle import Lifecycle, failure_kept
from cryptbench.plan import stopping_rule
from cryptbench.report import screens
from cryptbench.report.json_output import print_json
from cryptbench.report.progress import RichProgress
from cryptbench.result_model import Document
from cryptbench.runner import (
    NullProgress,
    Progress,
    Spend,
    TrialSpec,
    interleave,
    note_lost,
    stopping_recorder,
    workload_seeds,
)
from cryptbench.store import Store, TrialRecord, default_db_path, now_iso
from cryptbench.suite import Suite, Workload, WorkloadSpec, check_size_range, load_suite, primary_metric
from cryptbench.trial_metrics import fleet_trial_metrics
from cryptbench.units import format_bytes

MANIFEST_TIMEOUT = 60.0  # seconds for a host's manifest_command (an ssh round trip, say)
CACHE_NOTE = (
    "fleet run: the hosts' page caches are not dropped system-wide between trials (the coordinator "
    "cannot reach the hosts' /proc); fio's invalidate=1 drops each data file's own pages before its "
    "job, and writes end with fsync inside the clock; a buffered target's lower layer may still serve "
    "reads from memory, so prefer targets that run direct"
)
NOT_MEASURED_NOTE = (
    "fleet run: system-wide CPU, helper daemons' CPU and device writes are not measured on the hosts; "
    "each trial's figures are fio's own there"
)


@dataclass
class FleetOutcome:
    run_id: int
    status: str  # complete, interrupted, failed
    document: Document
    exit_code: int = 0


@dataclass
class Host:
    spec: HostSpec
    manifest: Manifest | None  # None: the manifest could not be read
    failed: str | None = None  # why the host can no longer be used


def read_manifest(spec: HostSpec, timeout: float = MANIFEST_TIMEOUT) -> Manifest:
    """Run the host's manifest_command and check what it printed; a UsageError says why not."""
    where = f"host {spec.name}"
    try:
        done = subprocess.run(
            list(spec.manifest_command),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        raise UsageError(f"{where}: manifest_command {spec.manifest_command[0]!r} was not found") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"{where}: manifest_command did not finish within {timeout:.0f} s") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise UsageError(
            f"{where}: manifest_command exited with status {done.returncode}: "
            + (lines[-1][:200] if lines else "it printed nothing")
        )
    return parse(done.stdout, where)


def check_suite(suite: Suite) -> list[WorkloadSpec]:
    """The suite's workloads, if a fleet can run them: fio patterns on the decrypted view."""
    workloads = []
    for w in suite.workloads:
        if not isinstance(w, WorkloadSpec):
            raise UsageError(
                f"suite {suite.name}: {w.name} is an application workload; a fleet run sends fio jobs only"
            )
        if w.view != "decrypted":
            raise UsageError(
                f"suite {suite.name}: {w.name} reads a target's ciphertext, which a fleet run cannot locate "
                "on its hosts"
            )
        workloads.append(w)
    if suite.write_new_file:
        raise UsageError(
            f"suite {suite.name} writes a new file per trial, which needs the old one deleted on the host "
            "between trials; a fleet run cannot"
        )
    return workloads


def check_manifests(hosts: list[Host], workloads: list[WorkloadSpec]) -> tuple[int, bool]:
    """The size and data kind every usable host serves; refused when they differ."""
    usable = [h for h in hosts if h.manifest is not None]
    sizes = {h.spec.name: h.manifest.size for h in usable if h.manifest is not None}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"{n} {format_bytes(s)}" for n, s in sizes.items())
        raise UsageError(
            f"the hosts serve different data sizes ({listed}): start every serve with the same --size"
        )
    zero = {h.manifest.zero_data for h in usable if h.manifest is not None}
    if len(zero) > 1:
        raise UsageError(
            "some hosts write zeros and others random data: start every serve with the same --data"
        )
    size = next(iter(sizes.values()))
    check_size_range(size, f"the hosts' size {format_bytes(size)}")
    biggest = max(w.bs for w in workloads)
    if size < biggest:
        raise UsageError(
            f"the hosts serve {format_bytes(size)} per target, less than the suite's largest block "
            f"({format_bytes(biggest)})"
        )
    return size, zero.pop()


def manifest_notes(hosts: list[Host]) -> list[str]:
    """What differs between the usable hosts' manifests, short of refusing the run:
    targets some hosts lack (with why, where the host said), and engine,
    version or kernel differences a reader should weigh before comparing hosts."""
    usable = [(h.spec.name, h.manifest) for h in hosts if h.manifest is not None]
    notes = []
    names = list(dict.fromkeys(t.name for _n, m in usable for t in m.targets))
    for name in names:
        missing = [(n, m) for n, m in usable if m.target(name) is None]
        if not missing:
            continue
        why = []
        for n, m in missing:
            backend = name.partition(":")[2] or name
            said = next((s.get("reason") for s in m.skipped if s.get("backend") in (name, backend)), None)
            why.append(f"{n} ({said})" if said else f"{n} (not asked of its serve)")
        notes.append(
            f"{name} runs on {len(usable) - len(missing)} of {len(usable)} hosts; not on " + ", ".join(why)
        )
    facts: dict[str, Callable[[Manifest], object]] = {
        "ioengine": lambda m: m.ioengine,
        "cryptbench version": lambda m: m.version,
        "fio version": lambda m: m.environment.get("fio"),
        "kernel": lambda m: m.environment.get("kernel"),
    }
    for what, of in facts.items():
        seen = {n: of(m) for n, m in usable}
        if len(set(map(str, seen.values()))) > 1:
            notes.append(
                f"the hosts differ in {what}: " + ", ".join(f"{n} {v or 'unknown'}" for n, v in seen.items())
            )
    return notes


def plan_json(
    suite: Suite,
    workloads: list[WorkloadSpec],
    hosts: list[Host],
    size: int,
    zero: bool,
    rule: Stopping,
    seed: int,
    targets: list[str],
) -> JsonObject:
    return {
        "suite": suite.name,
        "workloads": [w.name for w in workloads],
        "primary_metrics": {w.name: primary_metric(w) for w in workloads},
        "workload_specs": {
            w.name: {"rw": w.rw, "bs": w.bs, "iodepth": w.iodepth, "view": w.view} for w in workloads
        },
        "apps": {},
        "backends": sorted({t.backend for h in hosts if h.manifest for t in h.manifest.targets}),
        "targets": targets,
        "states": [],
        "fs": "ext4",
        "write_new_file": False,
        "added_baselines": [],
        "skipped": [],
        "size": size,
        "repeats": rule.max_repeats,
        "stopping": rule.to_json(),
        "seed": seed,
        "io_mode": "each host's",
        "data": "zero" if zero else "random",
        "summary": None,
        "as_published": [],
        "ram": False,
        "ram_bytes": 0,
        "fleet": {"hosts": [h.spec.name for h in hosts]},
    }


def coordinator_environment() -> JsonObject:
    """Facts about the coordinator; each host's own are in its manifest (document's fleet.hosts)."""
    env = environment.collect(Path("/"))
    return {
        "role": "fleet coordinator",
        **{k: env[k] for k in ("hostname", "os", "kernel", "cpu_model", "cpu_count", "python", "cryptbench")},
        "fio": fio_version(),
    }


class Coordinator:
    """Runs blocks of trials over the hosts and stores each host's trial as it lands."""

    def __init__(
        self,
        store: Store,
        run_id: int,
        hosts: list[Host],
        size: int,
        zero: bool,
        workload_seeds: dict[str, int],
        jobs_dir: Path,
        progress: Progress,
    ) -> None:
        self.store, self.run_id, self.size, self.zero = store, run_id, size, zero
        self.hosts = {h.spec.name: h for h in hosts if h.manifest is not None}
        self.workload_seeds, self.jobs_dir, self.progress = workload_seeds, jobs_dir, progress
        self.lost: dict[str, str] = {}  # fleet target (HOST/NAME) -> why, naming it
        self.skipped: dict[str, int] = {}
        self.ok = self.failed = 0
        self.seq = 0
        # Spend's ledger: no host's device counter is in reach, so the bytes
        # written are the workloads' own count, from the store
        self.device: str | None = None

    def served(self, host: str, name: str) -> ManifestTarget:
        manifest = self.hosts[host].manifest
        assert manifest is not None
        found = manifest.target(name)
        assert found is not None
        return found

    def _job(
        self, host: str, name: str, text_of: Callable[[JobOptions], str], seed: int, tag: str
    ) -> tuple[str, Path]:
        manifest = self.hosts[host].manifest
        assert manifest is not None
        t = self.served(host, name)
        opts = JobOptions(
            Path(t.data_file), self.size, t.io_mode == "direct", manifest.ioengine, self.zero, seed
        )
        text = text_of(opts)
        client.check_job(text, manifest.scratch)
        path = self.jobs_dir / f"{tag}-{host}-{name}.fio"
        path.write_text(text)
        return text, path

    def _lose_host(self, host: str, why: str) -> None:
        h = self.hosts[host]
        if h.failed is not None:
            return
        h.failed = why
        self.store.set_fleet_host(self.run_id, host, "failed", why)
        assert h.manifest is not None
        for t in h.manifest.targets:
            target = f"{host}/{t.name}"
            self.lost.setdefault(target, f"{target}: host {host} stopped answering ({why})")

    def lay_out(self, name: str, hosts: list[str]) -> None:
        """Write each host's data file for `name` before any read trial; outside every clock."""
        live = [h for h in hosts if f"{h}/{name}" not in self.lost]
        if not live:
            return
        self.progress.phase(f"writing the {self.size >> 20} MiB data file on {name} on {len(live)} host(s)")
        jobs = {}
        for h in live:
            _text, path = self._job(h, name, render_layout, 0, "layout")
            jobs[h] = (self.hosts[h].spec.address, path)
        try:
            results = client.run_clients(jobs, FIO_TIMEOUT)
        except TrialError as e:
            for h in live:
                self.lost[f"{h}/{name}"] = f"{h}/{name}: its data file could not be written: {e}"
            return
        again = []
        for h, r in results.items():
            if r.lost:
                self._lose_host(h, r.error or "no answer")
            elif r.innocent:
                again.append(h)  # stopped for another host's silence: that one is out now
            elif r.error is not None:
                self.lost[f"{h}/{name}"] = f"{h}/{name}: its data file could not be written: {r.error}"
        if again:
            self.lay_out(name, again)

    def block(
        self, workload: WorkloadSpec, name: str, hosts: list[str], repeat: int, block: int, again: bool = True
    ) -> None:
        """One trial of `name` on each of `hosts` at once, each stored as its host's trial.

        Hosts whose trial was stopped only because another host fell silent run
        it again at once (`again`), in an invocation without the silent host."""
        live = []
        for h in hosts:
            target = f"{h}/{name}"
            if target in self.lost:
                self.skipped[target] = self.skipped.get(target, 0) + 1
                self.failed += 1
            else:
                live.append(h)
        if not live:
            return
        texts, jobs = {}, {}
        for h in live:
            texts[h], path = self._job(
                h,
                name,
                lambda o: render_job(workload, o),
                self.workload_seeds[workload.name],
                f"{self.seq:05d}-{workload.name}",
            )
            jobs[h] = (self.hosts[h].spec.address, path)
        started = now_iso()
        try:
            results = client.run_clients(jobs, FIO_TIMEOUT)
        except TrialError as e:
            results = {h: client.HostResult(None, None, str(e)) for h in live}
        rerun = [h for h in live if again and results[h].innocent]
        for h in live:
            r = results[h]
            if h in rerun:
                continue
            row = TrialRecord(
                seq=self.seq,
                block=block,
                repeat=repeat,
                workload=workload.name,
                target=f"{h}/{name}",
                started_at=started,
                job_file=texts[h],
                raw_output=r.raw,
                cache_method="fio invalidate=1 (the data file's pages only)",
            )
            self.seq += 1
            if r.measurement is not None:
                row.status = "ok"
                self.store.insert_trial(self.run_id, row, fleet_trial_metrics(r.measurement))
                self.ok += 1
            else:
                row.error = r.error
                self.store.insert_trial(self.run_id, row, [])
                self.failed += 1
                if r.lost:
                    self._lose_host(h, r.error or "no answer")
            self.progress.trial_done(
                TrialSpec(self.seq, block, repeat, workload, f"{h}/{name}"), r.measurement is not None
            )
        if rerun:
            self.block(workload, name, rerun, repeat, block, again=False)

    def run_block(self, workload: Workload, names: list[str], repeat: int, block: int) -> int:
        """A block's targets (HOST/NAME), grouped by what they are on their hosts:
        each group one fio --client invocation, in the order its first host drew
        it, and a block number of its own. Returns the next block number."""
        assert isinstance(workload, WorkloadSpec)
        groups: dict[str, list[str]] = {}
        for target in names:
            host, _, name = target.partition("/")
            groups.setdefault(name, []).append(host)
        for name, hosts in groups.items():
            self.block(workload, name, hosts, repeat, block)
            block += 1
        return block

    def finish(self) -> None:
        note_lost(self.store, self.run_id, self.lost, self.skipped)


def run_questions(workloads: list[WorkloadSpec], hosts: list[Host]) -> list[Question]:
    wanted = [(w.name, (primary_metric(w), info(primary_metric(w)).higher_is_better)) for w in workloads]
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
    return questions(wanted, baselines, asked)


def _store_hosts(store: Store, run_id: int, hosts: list[Host]) -> None:
    """Each host, its targets (named HOST/NAME) and what it skipped, and the run's notes."""
    for h in hosts:
        store.insert_fleet_host(
            run_id, h.spec.name, str(h.spec.address), h.manifest.stored() if h.manifest else None
        )
        if h.manifest is None:
            store.set_fleet_host(run_id, h.spec.name, "unusable", h.failed)
            store.add_note(run_id, f"host {h.spec.name} left out: {h.failed}")
            continue
        for t in h.manifest.targets:
            store.insert_target(run_id, t.on_host(h.spec.name))
        for s in h.manifest.skipped:
            store.add_note(run_id, f"host {h.spec.name} skipped {s.get('backend')}: {s.get('reason')}")
    for note in manifest_notes(hosts):
        store.add_note(run_id, note)
    store.add_note(run_id, CACHE_NOTE)
    store.add_note(run_id, NOT_MEASURED_NOTE)


def execute(
    suite: Suite,
    workloads: list[WorkloadSpec],
    hosts: list[Host],
    rule: Stopping,
    seed: int,
    store: Store,
    progress: Progress,
) -> FleetOutcome:
    size, zero = check_manifests(hosts, workloads)
    usable = [h for h in hosts if h.manifest is not None]
    targets = [
        f"{h.spec.name}/{t.name}" for h in usable if h.manifest is not None for t in h.manifest.targets
    ]
    run_id = store.insert_run(
        suite.name,
        plan_json(suite, workloads, hosts, size, zero, rule, seed, targets),
        coordinator_environment(),
        __version__,
    )
    completed, exit_code = False, 1  # until the trials end

    def finish(life: Lifecycle) -> None:
        # In the held section: the status is stored before a late signal can cut in.
        store.finish_run(run_id, life.status(completed))

    with Lifecycle(progress, finish) as life, failure_kept(store, run_id):
        _store_hosts(store, run_id, hosts)
        seeds = workload_seeds(seed, workloads)
        with tempfile.TemporaryDirectory(prefix="cryptbench-fleet-") as jobs_dir:
            coordinator = Coordinator(store, run_id, usable, size, zero, seeds, Path(jobs_dir), progress)
            if any(not w.is_write for w in workloads):
                names = list(dict.fromkeys(t.partition("/")[2] for t in targets))
                for name in names:
                    coordinator.lay_out(
                        name, [t.partition("/")[0] for t in targets if t.partition("/")[2] == name]
                    )
            controller = Controller(rule, run_questions(workloads, usable), seed)
            spend = Spend(coordinator, {w.name for w in workloads if w.is_write})

            record = stopping_recorder(store, run_id, controller, spend)
            try:
                interleave(
                    store,
                    run_id,
                    tuple(workloads),
                    targets,
                    controller,
                    seed,
                    lost=coordinator.lost,
                    progress=progress,
                    spent=spend.over,
                    run_block=coordinator.run_block,
                    on_change=record,
                    seconds=spend.seconds,
                )
            finally:
                coordinator.finish()
        alive = [h for h in usable if h.failed is None]
        if not alive:
            store.add_note(run_id, "every host stopped answering")
        completed, exit_code = True, 1 if coordinator.failed or len(alive) < len(hosts) else 0
    return FleetOutcome(
        run_id, life.status(completed), document.build(store, run_id), life.exit_code(exit_code)
    )


def run(
    *,
    hosts: Path,
    suite: str = "quick",
    repeats: int | None = None,
    precision: str | None = None,
    equivalence: str | None = None,
    overrun: str = "drop",
    min_repeats: int | None = None,
    max_repeats: int | None = None,
    max_time: str | None = None,
    seed: int | None = None,
    db: Path | None = None,
    progress: Progress | None = None,
    manifest_timeout: float = MANIFEST_TIMEOUT,
) -> FleetOutcome:
    specs = hosts_mod.load(hosts)
    suite_obj = load_suite(suite)
    workloads = check_suite(suite_obj)
    rule = stopping_rule(
        suite_obj, repeats, precision, min_repeats, max_repeats, None, max_time, None, equivalence, overrun
    )
    if seed is not None and not 0 <= seed < 2**32:
        raise UsageError("--seed must be from 0 to 4294967295")
    progress = progress or NullProgress()
    fleet: list[Host] = []
    for spec in specs:
        progress.phase(f"reading the manifest of {spec.name}")
        try:
            fleet.append(Host(spec, read_manifest(spec, manifest_timeout)))
        except UsageError as e:
            fleet.append(Host(spec, None, str(e)))
    if all(h.manifest is None for h in fleet):
        raise UnavailableError("no host could be used: " + "; ".join(str(h.failed) for h in fleet[:3]))
    store = Store.open(db or default_db_path())
    try:
        with interruptible():
            return execute(
                suite_obj,
                workloads,
                fleet,
                rule,
                seed if seed is not None else secrets.randbits(32),
                store,
                progress,
            )
    finally:
        store.close()


HELP = "run a suite on many hosts at once through their fio servers"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="fleet_command", metavar="COMMAND", parser_class=type(p), required=True)
    fr = sub.add_parser("run", help="run a suite on every host of hosts.toml, interleaved")
    fr.add_argument(
        "--hosts", required=True, type=Path, help="hosts.toml: each host's address and manifest_command"
    )
    fr.add_argument(
        "--suite", default="quick", help="built-in suite or TOML file of fio workloads (default quick)"
    )
    add_stopping(fr, max_bytes=False)
    fr.add_argument("--seed", type=int, help="seed for trial order and fio offsets (default: random)")
    add_db(fr)
    add_json(fr)
    add_details(fr)


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    with RichProgress(err) as progress:
        outcome = run(
            hosts=args.hosts,
            suite=args.suite,
            repeats=args.repeats,
            precision=args.precision,
            equivalence=args.equivalence,
            overrun=args.overrun,
            min_repeats=args.min_repeats,
            max_repeats=args.max_repeats,
            max_time=args.max_time,
            seed=args.seed,
            db=args.db,
            progress=progress,
        )
    for note in outcome.document.notes:
        err.print(f"note: {note}", soft_wrap=True)
    if args.json:
        print_json(outcome.document.to_json())
    else:
        screens.render(outcome.document, out, details=args.details)
    if outcome.status == "interrupted":
        err.print(f"interrupted; {outcome.document.trials.ok} finished trial(s) kept as run {outcome.run_id}")
    return outcome.exit_code
