"""`cryptbench history`: the runs stored so far, newest first, filtered by backend,
workload and host; with `--workload` or `--metric`, each target's median of that
metric run by run, oldest to newest (the terminal draws it as a sparkline)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptbench.errors import UsageError
from cryptbench.report.document import primary_of
from cryptbench.store import Store, default_db_path


@dataclass(frozen=True)
class Point:
    run_id: int
    started_at: str  # ISO 8601, UTC
    median: float  # of the run's trials, in the series' unit
    n: int  # trials
    size: int | None  # bytes per trial in that run
    io_mode: str  # direct or buffered, as that run's target ran


@dataclass(frozen=True)
class Series:
    """One workload and target's median of a metric, run by run (oldest first)."""

    workload: str
    target: str
    metric: str
    unit: str
    points: list[Point]

    def caveats(self) -> list[str]:
        """What changed between the points besides the system under test."""
        out = []
        if len({p.size for p in self.points if p.size is not None}) > 1:
            out.append("bytes per trial differ between these runs")
        if len({p.io_mode for p in self.points}) > 1:
            out.append("I/O mode differs between these runs")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "target": self.target,
            "metric": self.metric,
            "unit": self.unit,
            "points": [p.__dict__ for p in self.points],
            "caveats": self.caveats(),
        }


@dataclass(frozen=True)
class History:
    runs: list[dict[str, Any]]  # newest first
    metric: str | None = None  # the series' metric; None: no series asked for
    series: list[Series] = field(default_factory=list)

    def run_ids(self) -> list[int]:
        """The runs a series can have a point in, oldest first (the sparkline's columns)."""
        return [r["id"] for r in reversed(self.runs)]

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "metric": self.metric, "series": [s.to_json() for s in self.series]}


def _runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        plan = json.loads(r.pop("plan_json"))
        out.append(
            {
                **r,
                "size": plan.get("size"),
                "repeats": plan.get("repeats"),
                "targets": (r["targets"] or "").split(",") if r["targets"] else [],
                "primary_metrics": plan.get("primary_metrics", {}),
            }
        )
    return out


def _series(
    store: Store, runs: list[dict[str, Any]], metric: str, workload: str | None, backend: str | None
) -> list[Series]:
    by_id = {r["id"]: r for r in runs}
    values: dict[tuple[str, str], dict[int, list[float]]] = {}
    units: dict[tuple[str, str], str] = {}
    modes: dict[tuple[str, str, int], str] = {}
    for v in store.metric_values(list(by_id), metric, workload=workload, backend=backend):
        key = (v["workload"], v["target"])
        values.setdefault(key, {}).setdefault(v["run_id"], []).append(v["value"])
        units[key] = v["unit"]
        modes[(*key, v["run_id"])] = v["io_mode"]
    out = []
    for key, per_run in values.items():
        points = [
            Point(
                run_id,
                by_id[run_id]["started_at"],
                statistics.median(vs),
                len(vs),
                by_id[run_id]["size"],
                modes[(*key, run_id)],
            )
            for run_id, vs in sorted(per_run.items())
        ]
        out.append(Series(key[0], key[1], metric, units[key], points))
    return sorted(out, key=lambda s: (s.workload, s.target))


def run(
    *,
    limit: int = 20,
    db: Path | None = None,
    backend: str | None = None,
    workload: str | None = None,
    host: str | None = None,
    metric: str | None = None,
) -> History:
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    path = db or default_db_path()
    if not path.exists():
        return History([])
    store = Store.open(path, create=False)
    try:
        runs = _runs(store.history(limit, backend=backend, workload=workload, host=host))
        if not runs or (metric is None and workload is None):
            return History(runs)
        # A workload's own metric (the newest run's, should a suite have changed it).
        chosen = metric or primary_of(runs[0], str(workload))
        series = _series(store, runs, chosen, workload, backend)
    finally:
        store.close()
    if not series and metric is not None:
        raise UsageError(
            f"no run shown has metric {metric[:40]!r}"
            + (f" at workload {workload[:60]!r}" if workload else "")
            + " (show RUN --json lists a run's metrics)"
        )
    return History(runs, chosen, series)
