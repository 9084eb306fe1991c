"""What the store gives back: one frozen dataclass per kind of row, its JSON columns
already parsed. A reader names the fields it uses, and a renamed column fails in the
type checker, not in a report. (A target comes back as result.TargetInfo, the
document's own record of it.)"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cryptbench.model.json_types import DbRow
from cryptbench.model.result import JsonObject, Stopping, TargetInfo
from cryptbench.model.vocabulary import HostStatus, RunStatus, TrialStatus


def _json(text: str | None, empty: Any) -> Any:
    """A JSON column; `empty` when it is NULL or blank."""
    return json.loads(text) if text else empty


@dataclass(frozen=True)
class RunRow:
    id: int
    started_at: str  # ISO 8601, UTC
    finished_at: str | None  # ISO 8601, UTC; None while running or after a crash
    status: RunStatus
    tool_version: str
    suite: str
    plan: JsonObject  # plan.Plan.to_json() as the run stored it
    environment: JsonObject  # measure/environment.collect() on the machine
    notes: list[str]  # what the run noted, in order
    stopping: JsonObject  # stopping.StoppingRule's JSON; {} for runs stored before schema 2

    @classmethod
    def from_db(cls, row: DbRow) -> RunRow:
        return cls(
            row["id"],
            row["started_at"],
            row["finished_at"],
            row["status"],
            row["tool_version"],
            row["suite"],
            json.loads(row["plan_json"]),
            json.loads(row["environment_json"]),
            json.loads(row["notes_json"]),
            _json(row.get("stopping_json"), {}),
        )


@dataclass(frozen=True)
class TrialRow:
    id: int
    seq: int  # position in the run's trial order
    block: int  # interleaving block
    repeat: int
    workload: str
    target: str
    started_at: str  # ISO 8601, UTC
    status: TrialStatus
    error: str | None  # why it failed
    cache_method: str | None  # how the page cache was dropped before it
    cache_resident_bytes: int | None  # bytes of data and backing still cached at its start


@dataclass(frozen=True)
class FleetHostRow:
    name: str  # the label from hosts.toml
    address: str  # its fio server, as the coordinator reached it
    status: HostStatus
    reason: str | None  # why, when not ok
    manifest: JsonObject  # what it served, as its manifest_command printed it; {} when none

    @classmethod
    def from_db(cls, row: DbRow) -> FleetHostRow:
        return cls(
            row["name"],
            row["address"],
            HostStatus(row["status"]),
            row["reason"],
            _json(row["manifest_json"], {}),
        )


@dataclass(frozen=True)
class CipherRow:
    id: int
    run_id: int | None  # the run that measured it; None for `cryptbench cipher`
    measured_at: str  # ISO 8601, UTC
    tool_version: str
    environment: JsonObject  # the machine it was measured on
    result: JsonObject  # pipeline/cipher_speed.py's document

    @classmethod
    def from_db(cls, row: DbRow) -> CipherRow:
        return cls(
            row["id"],
            row["run_id"],
            row["measured_at"],
            row["tool_version"],
            json.loads(row["environment_json"]),
            json.loads(row["result_json"]),
        )


@dataclass(frozen=True)
class HistoryRow:
    """One run as `cryptbench history` lists it."""

    id: int
    started_at: str  # ISO 8601, UTC
    finished_at: str | None  # ISO 8601, UTC
    status: RunStatus
    suite: str
    host: str | None  # the machine's hostname; a fleet run's coordinator
    ok_trials: int  # count
    failed_trials: int  # count
    targets: list[str]  # in the order provisioned
    size: int | None  # bytes per trial
    repeats: int | None  # the plan's repeats: a fixed count, or an adaptive run's most
    primary_metrics: dict[str, str]  # workload -> its primary metric
    # count of good trials of the (workload, target) that had the fewest, and the most;
    # None when the run stored no good trial
    fewest_trials: int | None = None
    most_trials: int | None = None

    @classmethod
    def from_db(cls, row: DbRow) -> HistoryRow:
        plan = json.loads(row["plan_json"])
        return cls(
            row["id"],
            row["started_at"],
            row["finished_at"],
            RunStatus(row["status"]),
            row["suite"],
            row["host"],
            row["ok_trials"],
            row["failed_trials"],
            row["targets"].split(",") if row["targets"] else [],
            plan.get("size"),
            plan.get("repeats"),
            plan.get("primary_metrics", {}),
            row.get("fewest_trials"),
            row.get("most_trials"),
        )

    def to_json(self) -> JsonObject:
        return dict(self.__dict__)


@dataclass(frozen=True)
class MetricPoint:
    """One value of a metric in a good trial, as `history` charts it."""

    run_id: int
    workload: str
    target: str
    io_mode: str  # direct or buffered, as that run's target ran
    unit: str  # the metric's unit
    value: float  # in that unit


Samples = dict[tuple[str, str, str], list[float]]  # (workload, target, metric) -> values, trial order


@dataclass(frozen=True)
class StoredRun:
    """A run as its document is built from it, read at once (Store.stored_run)."""

    run: RunRow
    targets: list[TargetInfo]  # in the order the run provisioned them
    trials: list[TrialRow]  # in trial order
    samples: Samples  # every metric's values
    rounds: dict[tuple[str, str, str], list[int]]  # the round each of those values ran in
    stopping: Stopping | None  # what decided how many trials ran; None for runs stored before schema 2
    fleet_hosts: list[FleetHostRow]  # a fleet run's hosts; empty for a local run
    ciphers: list[CipherRow]  # the run's own cipher figures (at most one)
    machine_ciphers: list[CipherRow]  # the newest standalone ones, of any machine, newest first
