"""`cryptbench history`: the runs stored so far, newest first, filtered by backend,
workload and host; with `--workload` or `--metric`, each target's median of that
metric run by run, oldest to newest (the terminal draws it as a sparkline)."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from cryptbench.analysis.history_model import History, Point, Series
from cryptbench.commands.common_args import add_db, add_json
from cryptbench.model.errors import UsageError
from cryptbench.model.metrics import PRIMARY
from cryptbench.planning.request import request_from_args
from cryptbench.report.json_output import print_json
from cryptbench.store.database import Store, default_db_path
from cryptbench.store.rows import HistoryRow


def _series(
    store: Store, runs: list[HistoryRow], metric: str, workload: str | None, backend: str | None
) -> list[Series]:
    by_id = {r.id: r for r in runs}
    values: dict[tuple[str, str], dict[int, list[float]]] = {}
    units: dict[tuple[str, str], str] = {}
    modes: dict[tuple[str, str, int], str] = {}
    for v in store.metric_values(list(by_id), metric, workload=workload, backend=backend):
        key = (v.workload, v.target)
        values.setdefault(key, {}).setdefault(v.run_id, []).append(v.value)
        units[key] = v.unit
        modes[(*key, v.run_id)] = v.io_mode
    out = []
    for key, per_run in values.items():
        points = [
            Point(
                run_id,
                by_id[run_id].started_at,
                statistics.median(vs),
                len(vs),
                by_id[run_id].size,
                modes[(*key, run_id)],
            )
            for run_id, vs in sorted(per_run.items())
        ]
        out.append(Series(key[0], key[1], metric, units[key], points))
    return sorted(out, key=lambda s: (s.workload, s.target))


@dataclass(frozen=True)
class HistoryRequest:
    """What `history` was asked, as given (request.request_from_args builds it)."""

    limit: int = 20  # runs, newest first
    db: Path | None = None  # None: the default database
    backend: str | None = None  # only runs that measured it
    workload: str | None = None  # only runs that ran it; with it, each target's median run by run
    host: str | None = None  # only runs on this host (a fleet's hosts included)
    metric: str | None = None  # the series' metric; None: the workload's own


def run(request: HistoryRequest) -> History:
    r = request
    if r.limit < 1:
        raise UsageError("--limit must be at least 1")
    path = r.db or default_db_path()
    if r.db is None and not path.exists():
        return History([])  # nothing run yet; a path the user named must exist, as for show
    store = Store.open(path, create=False)
    try:
        runs = store.history(r.limit, backend=r.backend, workload=r.workload, host=r.host)
        if not runs or (r.metric is None and r.workload is None):
            return History(runs)
        # A workload's own metric (the newest run's, should a suite have changed it).
        chosen = r.metric or runs[0].primary_metrics.get(str(r.workload), PRIMARY)
        series = _series(store, runs, chosen, r.workload, r.backend)
    finally:
        store.close()
    if not series and r.metric is not None:
        raise UsageError(
            f"no run shown has metric {r.metric[:40]!r}"
            + (f" at workload {r.workload[:60]!r}" if r.workload else "")
            + " (show RUN --json lists a run's metrics)"
        )
    return History(runs, chosen, series)


HELP = "runs stored so far; with --workload or --metric, each target's figure over time"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=20, help="the newest N runs that match (default 20)")
    p.add_argument("--backend", help="only runs with a target of this backend (and only its targets' series)")
    p.add_argument("--workload", help="only runs of this workload; draws its metric over time per target")
    p.add_argument("--host", help="only runs on this host name")
    p.add_argument(
        "--metric", help="the metric drawn over time (default: the workload's own; throughput, lat_p99, …)"
    )
    add_db(p)
    add_json(p, "the runs and series")


def main(args: argparse.Namespace, out: Console, err: Console) -> int:
    from cryptbench.report import history_table

    found = run(request_from_args(HistoryRequest, args))
    if args.json:
        print_json(found.to_json())
        return 0
    if not found.runs:
        filtered = any(v is not None for v in (args.backend, args.workload, args.host))
        out.print("no stored run matches" if filtered else "no runs stored yet (cryptbench run)")
        return 0
    history_table.render(found, out)
    return 0
