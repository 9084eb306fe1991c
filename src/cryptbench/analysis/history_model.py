"""What `cryptbench history` found: the runs stored so far and, when asked, each
target's median of one metric run by run. Built by commands/history.py from the
store, drawn by report/history_table.py, printed as JSON by the command."""

from __future__ import annotations

from dataclasses import dataclass, field

from cryptbench.model.json_types import JsonObject
from cryptbench.store.rows import HistoryRow


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

    def to_json(self) -> JsonObject:
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
    runs: list[HistoryRow]  # newest first
    metric: str | None = None  # the series' metric; None: no series asked for
    series: list[Series] = field(default_factory=list)

    def run_ids(self) -> list[int]:
        """The runs a series can have a point in, oldest first (the sparkline's columns)."""
        return [r.id for r in reversed(self.runs)]

    def to_json(self) -> JsonObject:
        return {
            "runs": [r.to_json() for r in self.runs],
            "metric": self.metric,
            "series": [s.to_json() for s in self.series],
        }
