"""A fleet's hosts before a run: each one's manifest read (its `manifest_command`),
the manifests checked against the suite and each other, and each host, its targets and
what differs between them stored with the run."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from cryptbench.fleet.hosts import HostSpec
from cryptbench.fleet.manifest import Manifest, parse
from cryptbench.model.errors import UsageError
from cryptbench.model.units import format_bytes
from cryptbench.model.vocabulary import HostStatus
from cryptbench.planning.suite import Suite, WorkloadSpec, check_size_range
from cryptbench.store.database import Store

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


def store_hosts(store: Store, run_id: int, hosts: list[Host]) -> None:
    """Each host, its targets (named HOST/NAME) and what it skipped, and the run's notes."""
    for h in hosts:
        store.insert_fleet_host(
            run_id, h.spec.name, str(h.spec.address), h.manifest.stored() if h.manifest else None
        )
        if h.manifest is None:
            store.set_fleet_host(run_id, h.spec.name, HostStatus.UNUSABLE, h.failed)
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
