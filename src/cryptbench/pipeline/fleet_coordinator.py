"""A fleet run's trials: each block's targets (HOST/NAME) grouped by what they are on
their hosts, each group one `fio --client` invocation over every host that serves it,
and each host's figure stored as its own trial. A RoundExecutor (schedule.interleave).

A host that stops answering is marked failed with fio's words for it and its remaining
trials are not run; a host whose trial was lost with its invocation while it answered
(another host fell silent, or fio dropped it without a word) runs it again once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cryptbench.engines.fio import FIO_TIMEOUT
from cryptbench.engines.jobs import JobOptions, render_job, render_layout
from cryptbench.fleet import client
from cryptbench.fleet.manifest import ManifestTarget
from cryptbench.model.errors import TrialError
from cryptbench.model.vocabulary import HostStatus, TrialStatus
from cryptbench.pipeline.fleet_hosts import Host
from cryptbench.planning.suite import Workload, WorkloadSpec
from cryptbench.store.database import Store, TrialRecord, now_iso
from cryptbench.trial.context import Progress, TrialSpec
from cryptbench.trial.figures import fleet_trial_metrics
from cryptbench.trial.schedule import note_lost


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
        self.store.set_fleet_host(self.run_id, host, HostStatus.FAILED, why)
        assert h.manifest is not None
        for t in h.manifest.targets:
            target = f"{host}/{t.name}"
            self.lost.setdefault(target, f"{target}: host {host} stopped answering ({why})")

    def lay_out(self, name: str, hosts: list[str], again: bool = True) -> None:
        """Write each host's data file for `name` before any read trial; outside every clock.

        Hosts whose layout was stopped for no fault of their own write it again
        once (`again`); a second such stop loses their data file."""
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
        rerun = []
        for h, r in results.items():
            if r.lost:
                self._lose_host(h, r.error or "no answer")
            elif r.innocent and again:
                rerun.append(h)  # its job was lost with the invocation, not for its own silence
            elif r.error is not None:
                self.lost[f"{h}/{name}"] = f"{h}/{name}: its data file could not be written: {r.error}"
        if rerun:
            self.lay_out(name, rerun, again=False)

    def block(
        self, workload: WorkloadSpec, name: str, hosts: list[str], repeat: int, block: int, again: bool = True
    ) -> None:
        """One trial of `name` on each of `hosts` at once, each stored as its host's trial.

        Hosts whose trial was lost with the invocation, not for their own silence
        (another host fell silent, or fio dropped them without a word yet they
        then ran a probe job), run it again at once (`again`), without the silent host."""
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
                row.status = TrialStatus.OK
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

    def finish(self) -> tuple[int, int]:
        note_lost(self.store, self.run_id, self.lost, self.skipped)
        return self.ok, self.failed
