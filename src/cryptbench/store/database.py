"""The results database (SQLite). Written trial by trial, one transaction each,
so a crash loses at most the trial in flight."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from cryptbench.machine.interrupts import signals_blocked
from cryptbench.model.errors import CryptbenchError, StoreError
from cryptbench.model.json_types import DbRow
from cryptbench.model.result import JsonObject, Stopping, TargetInfo
from cryptbench.model.vocabulary import HostStatus, Medium, TrialStatus
from cryptbench.store.migrations import MIGRATIONS, SCHEMA_VERSION
from cryptbench.store.rows import (
    CipherRow,
    FleetHostRow,
    HistoryRow,
    MetricPoint,
    RunRow,
    StoredRun,
    TrialRow,
)


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "cryptbench" / "results.sqlite"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class TrialRecord:
    """One trial as the store keeps it: made before the trial, filled in by the
    measurement (trial/runner.py, or a fleet's coordinator), inserted once, ok or failed."""

    seq: int  # the trial's place in the run's order, from 0
    block: int  # the interleaved block it ran in
    repeat: int  # the round, from 0
    workload: str
    target: str
    started_at: str  # ISO 8601, UTC
    status: TrialStatus = TrialStatus.FAILED  # OK only once the trial's figures are in
    error: str | None = None  # why it failed, in words
    cache_method: str | None = None  # how the caches were dropped before it
    cache_resident_bytes: int | None = None  # bytes of its files still in the page cache after the drop
    job_file: str | None = None  # the fio job text, or an app task's parameters as JSON
    raw_output: str | None = None  # fio's JSON, or the task's result, as produced
    cpu_timeline: JsonObject | None = None  # CPU sampled through the trial (measure/cpu_timeline)


@dataclass(frozen=True)
class MetricValue:
    name: str
    unit: str
    value: float


LOCK_TIMEOUT = 30.0  # seconds another process may hold the database before we give up


def _enable_wal(db: sqlite3.Connection) -> None:
    """WAL, so readers never block the run writing.

    Switching a new database to WAL takes an exclusive lock, and SQLite may
    report "database is locked" at once instead of waiting its busy timeout
    (two runs opening a new database together hit this), so retry.
    """
    deadline = time.monotonic() + LOCK_TIMEOUT
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


_RUN_ID_RE = re.compile(r"[0-9]{1,18}")  # ASCII digits only, and within SQLite's INTEGER


def parse_run_ref(ref: str) -> int | None:
    """A run reference from the command line: its id, or None for 'latest'."""
    if ref == "latest":
        return None
    if not _RUN_ID_RE.fullmatch(ref):
        raise StoreError(f"run {ref[:40]!r} is not a run id (a number, or 'latest')")
    return int(ref)


K = TypeVar("K")


def split_rounds(
    by_round: Mapping[K, list[tuple[int, float]]],
) -> tuple[dict[K, list[float]], dict[K, list[int]]]:
    """(round, value) pairs, as Store.samples_by_round gives them, split into the values and
    the rounds they ran in, each in trial order."""
    return (
        {key: [v for _r, v in pairs] for key, pairs in by_round.items()},
        {key: [r for r, _v in pairs] for key, pairs in by_round.items()},
    )


class Store:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db = db
        self.path = path

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> Store:
        if path.exists() and not path.is_file():
            raise StoreError(f"database path {str(path)!r} is not a file")
        if not path.exists():
            if not create:
                raise StoreError(f"no results database at {str(path)!r} (run `cryptbench run` first)")
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(path, timeout=LOCK_TIMEOUT, isolation_level=None)
            _enable_wal(db)
            db.execute("PRAGMA foreign_keys=ON")
            version = db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.OperationalError as e:
            if "locked" in str(e):
                raise StoreError(
                    f"results database {str(path)!r} stayed locked by another process for "
                    f"{LOCK_TIMEOUT:.0f} s"
                ) from None
            raise StoreError(f"{str(path)!r} is not a cryptbench database: {e}") from None
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{str(path)!r} is not a cryptbench database: {e}") from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{str(path)!r} has schema {version}, newer than this cryptbench knows ({SCHEMA_VERSION})"
            )
        store = cls(db, path)
        store._migrate(version)
        return store

    def _migrate(self, version: int) -> None:
        # Each step re-reads the version inside its write transaction: two runs
        # opening a new database at once must not both create the tables.
        while version < SCHEMA_VERSION:
            with self.transaction():
                version = self.db.execute("PRAGMA user_version").fetchone()[0]
                if version >= SCHEMA_VERSION:
                    return
                if (
                    version == 0
                    and self.db.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0]
                ):
                    raise StoreError(f"{str(self.path)!r} is an SQLite database, but not cryptbench's")
                MIGRATIONS[version](self.db)
                self.db.execute(f"PRAGMA user_version = {version + 1}")
                version += 1

    def transaction(self) -> sqlite3.Connection:
        # a context manager that yields the connection, not a connection: callers only `with` it
        return _Tx(self.db)  # type: ignore[return-value]

    def close(self) -> None:
        self.db.close()

    # -- writing --------------------------------------------------------------------

    def insert_run(self, suite: str, plan: JsonObject, environment: JsonObject, tool_version: str) -> int:
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO runs (started_at, status, tool_version, suite, plan_json, environment_json)"
                " VALUES (?, 'running', ?, ?, ?, ?)",
                (now_iso(), tool_version, suite, json.dumps(plan), json.dumps(environment)),
            )
            return int(cur.lastrowid or 0)

    def update_environment(self, run_id: int, environment: JsonObject) -> None:
        with self.transaction():
            self.db.execute(
                "UPDATE runs SET environment_json=? WHERE id=?", (json.dumps(environment), run_id)
            )

    def add_note(self, run_id: int, note: str) -> None:
        with self.transaction():
            (notes,) = self.db.execute("SELECT notes_json FROM runs WHERE id=?", (run_id,)).fetchone()
            self.db.execute(
                "UPDATE runs SET notes_json=? WHERE id=?", (json.dumps([*json.loads(notes), note]), run_id)
            )

    @contextmanager
    def failure_kept(self, run_id: int) -> Iterator[None]:
        """A run's error is noted with the run, and raised again saying what is kept: the
        trials it finished, which `show` reads like those of any other run."""
        try:
            yield
        except CryptbenchError as e:
            self.add_note(run_id, f"failed: {e}")
            raise type(e)(f"{e}; finished trials are kept (cryptbench show {run_id})") from None

    def set_stopping(self, run_id: int, stopping: JsonObject) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET stopping_json=? WHERE id=?", (json.dumps(stopping), run_id))

    def finish_run(self, run_id: int, status: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET finished_at=?, status=? WHERE id=?", (now_iso(), status, run_id))

    def insert_target(self, run_id: int, target: TargetInfo) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT INTO targets (run_id, name, backend, baseline, encrypted, io_mode, direct_io,"
                " direct_io_reason, marker_in_backing, encryption_verified, details_json, medium, host,"
                " protection_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    target.name,
                    target.backend,
                    target.baseline,
                    int(target.encrypted),
                    target.io_mode,
                    target.direct_io,
                    target.direct_io_reason,
                    _opt_int(target.marker_in_backing),
                    _opt_int(target.encryption_verified),
                    json.dumps(target.details),
                    target.medium,
                    target.host,
                    None if target.protection is None else json.dumps(target.protection),
                ),
            )

    def insert_fleet_host(self, run_id: int, name: str, address: str, manifest: JsonObject | None) -> None:
        with self.transaction():
            self.db.execute(
                "INSERT INTO fleet_hosts (run_id, name, address, status, manifest_json) VALUES (?,?,?,?,?)",
                (run_id, name, address, HostStatus.OK, None if manifest is None else json.dumps(manifest)),
            )

    def set_fleet_host(self, run_id: int, name: str, status: str, reason: str | None) -> None:
        with self.transaction():
            self.db.execute(
                "UPDATE fleet_hosts SET status=?, reason=? WHERE run_id=? AND name=?",
                (status, reason, run_id, name),
            )

    def fleet_host_rows(self, run_id: int) -> list[FleetHostRow]:
        cur = self.db.execute("SELECT * FROM fleet_hosts WHERE run_id=? ORDER BY rowid", (run_id,))
        return [FleetHostRow.from_db(_row(cur, r)) for r in cur.fetchall()]

    def insert_cipher(
        self, run_id: int | None, result: JsonObject, environment: JsonObject, tool_version: str
    ) -> int:
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO ciphers (run_id, measured_at, tool_version, environment_json, result_json)"
                " VALUES (?,?,?,?,?)",
                (run_id, now_iso(), tool_version, json.dumps(environment), json.dumps(result)),
            )
            return int(cur.lastrowid or 0)

    def cipher_rows(self, run_id: int | None = None, limit: int = 1) -> list[CipherRow]:
        """A run's cipher measurement; with run_id None, the newest standalone ones first."""
        if run_id is None:
            cur = self.db.execute(
                "SELECT * FROM ciphers WHERE run_id IS NULL ORDER BY id DESC LIMIT ?", (limit,)
            )
        else:
            cur = self.db.execute(
                "SELECT * FROM ciphers WHERE run_id=? ORDER BY id DESC LIMIT ?", (run_id, limit)
            )
        return [CipherRow.from_db(_row(cur, r)) for r in cur.fetchall()]

    def insert_trial(self, run_id: int, trial: TrialRecord, metrics: list[MetricValue]) -> int:
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO trials (run_id, seq, block, repeat, workload, target, started_at, status,"
                " error, cache_method, cache_resident_bytes, job_file, raw_output)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    trial.seq,
                    trial.block,
                    trial.repeat,
                    trial.workload,
                    trial.target,
                    trial.started_at,
                    trial.status,
                    trial.error,
                    trial.cache_method,
                    trial.cache_resident_bytes,
                    trial.job_file,
                    trial.raw_output,
                ),
            )
            trial_id = int(cur.lastrowid or 0)
            self.db.executemany(
                "INSERT INTO metrics (trial_id, name, unit, value) VALUES (?,?,?,?)",
                [(trial_id, m.name, m.unit, m.value) for m in metrics],
            )
            if trial.cpu_timeline is not None:
                self.db.execute(
                    "INSERT INTO cpu_timelines (trial_id, timeline_json) VALUES (?,?)",
                    (trial_id, json.dumps(trial.cpu_timeline, separators=(",", ":"))),
                )
            return trial_id

    # -- reading --------------------------------------------------------------------

    def resolve_run(self, ref: str) -> int:
        run_id = parse_run_ref(ref)
        if run_id is None:
            row = self.db.execute("SELECT max(id) FROM runs").fetchone()
            if row[0] is None:
                raise StoreError(f"no runs stored in {self.path}")
            return int(row[0])
        if self.db.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() is None:
            raise StoreError(f"no run {run_id} in {self.path}")
        return run_id

    def stored_run(self, run_id: int, machine_ciphers: int) -> StoredRun:
        """All a run's document is built from, read at once: its row (the stopping record
        parsed), targets, trials, every metric's values with their rounds, a fleet's hosts,
        the run's cipher figures and the `machine_ciphers` newest standalone ones."""
        run, targets, trials = self.run_row(run_id), self.target_rows(run_id), self.trial_rows(run_id)
        by_round = self.samples_by_round(run_id)
        hosts, ciphers = self.fleet_host_rows(run_id), self.cipher_rows(run_id)
        machine = self.cipher_rows(None, limit=machine_ciphers)
        samples, rounds = split_rounds(by_round)
        stopping = Stopping.from_json(run.stopping) if run.stopping else None
        return StoredRun(run, targets, trials, samples, rounds, stopping, hosts, ciphers, machine)

    def run_row(self, run_id: int) -> RunRow:
        cur = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,))
        return RunRow.from_db(_row(cur, cur.fetchone()))

    def target_rows(self, run_id: int) -> list[TargetInfo]:
        cur = self.db.execute("SELECT * FROM targets WHERE run_id=? ORDER BY rowid", (run_id,))
        return [_target(_row(cur, r)) for r in cur.fetchall()]

    def trial_rows(self, run_id: int) -> list[TrialRow]:
        cur = self.db.execute(
            "SELECT id, seq, block, repeat, workload, target, started_at, status, error,"
            " cache_method, cache_resident_bytes FROM trials WHERE run_id=? ORDER BY seq",
            (run_id,),
        )
        return [
            TrialRow(id_, seq, block, repeat, workload, target, started, TrialStatus(status), *rest)
            for id_, seq, block, repeat, workload, target, started, status, *rest in cur.fetchall()
        ]

    def samples(self, run_id: int) -> dict[tuple[str, str, str], list[float]]:
        """Every metric value of a run by (workload, target, metric), in trial order."""
        return split_rounds(self.samples_by_round(run_id))[0]

    def samples_by_round(self, run_id: int) -> dict[tuple[str, str, str], list[tuple[int, float]]]:
        """Every metric value of a run as (round, value), by (workload, target, metric), in trial order."""
        out: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
        for workload, target, name, repeat, value in self.db.execute(
            "SELECT t.workload, t.target, m.name, t.repeat, m.value FROM metrics m JOIN trials t"
            " ON t.id=m.trial_id WHERE t.run_id=? ORDER BY t.seq",
            (run_id,),
        ):
            out.setdefault((workload, target, name), []).append((repeat, value))
        return out

    def trial_metrics(self, run_id: int) -> dict[int, dict[str, tuple[float, str]]]:
        """Each trial's metrics by trial id: name -> (value, unit)."""
        out: dict[int, dict[str, tuple[float, str]]] = {}
        for trial_id, name, value, unit in self.db.execute(
            "SELECT m.trial_id, m.name, m.value, m.unit FROM metrics m JOIN trials t ON t.id=m.trial_id"
            " WHERE t.run_id=? ORDER BY t.seq",
            (run_id,),
        ):
            out.setdefault(trial_id, {})[name] = (value, unit)
        return out

    def cpu_timelines(self, run_id: int) -> dict[int, JsonObject]:
        """Each trial's CPU timeline by trial id (trials stored before schema 4 have none)."""
        return {
            trial_id: json.loads(text)
            for trial_id, text in self.db.execute(
                "SELECT c.trial_id, c.timeline_json FROM cpu_timelines c JOIN trials t ON t.id=c.trial_id"
                " WHERE t.run_id=? ORDER BY t.seq",
                (run_id,),
            )
        }

    def metric_sum(self, run_id: int, name: str, workloads: set[str]) -> float:
        """The sum of one metric over a run's trials of the given workloads."""
        marks = ",".join("?" * len(workloads))
        (total,) = self.db.execute(
            "SELECT coalesce(sum(m.value), 0) FROM metrics m JOIN trials t ON t.id=m.trial_id"
            f" WHERE t.run_id=? AND m.name=? AND t.workload IN ({marks})",
            (run_id, name, *sorted(workloads)),
        ).fetchone()
        return float(total)

    def history(
        self,
        limit: int,
        *,
        backend: str | None = None,
        workload: str | None = None,
        host: str | None = None,
    ) -> list[HistoryRow]:
        """The newest runs first, at most `limit`, each only if it had a target of `backend`,
        trials of `workload` and ran on `host` (where given)."""
        where, args = _given(
            ("EXISTS (SELECT 1 FROM targets g WHERE g.run_id=r.id AND g.backend=?)", backend),
            ("EXISTS (SELECT 1 FROM trials t WHERE t.run_id=r.id AND t.workload=?)", workload),
            ("json_extract(r.environment_json, '$.hostname')=?", host),
        )
        if host is not None:
            # A fleet run ran on each of its hosts: the label from hosts.toml or the host's own name.
            where[-1] = (
                f"({where[-1]} OR EXISTS (SELECT 1 FROM fleet_hosts f WHERE f.run_id=r.id AND (f.name=? OR"
                " json_extract(f.manifest_json, '$.environment.hostname')=?)))"
            )
            args += [host, host]
        cur = self.db.execute(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.suite, r.plan_json,"
            " json_extract(r.environment_json, '$.hostname') AS host,"
            " (SELECT count(*) FROM trials t WHERE t.run_id=r.id AND t.status='ok') AS ok_trials,"
            " (SELECT count(*) FROM trials t WHERE t.run_id=r.id AND t.status!='ok') AS failed_trials,"
            " (SELECT min(c) FROM (SELECT count(*) AS c FROM trials t WHERE t.run_id=r.id AND t.status='ok'"
            " GROUP BY t.workload, t.target)) AS fewest_trials,"
            " (SELECT max(c) FROM (SELECT count(*) AS c FROM trials t WHERE t.run_id=r.id AND t.status='ok'"
            " GROUP BY t.workload, t.target)) AS most_trials,"
            " (SELECT group_concat(name, ',') FROM targets g WHERE g.run_id=r.id) AS targets"
            " FROM runs r"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY r.id DESC LIMIT ?",
            (*args, limit),
        )
        return [HistoryRow.from_db(_row(cur, r)) for r in cur.fetchall()]

    def metric_values(
        self, run_ids: list[int], metric: str, *, workload: str | None = None, backend: str | None = None
    ) -> list[MetricPoint]:
        """Every value of one metric in the given runs' good trials, with the trial's workload,
        target and the target's I/O mode, in run and trial order."""
        marks = ",".join("?" * len(run_ids))
        where, args = _given(("t.workload=?", workload), ("g.backend=?", backend))
        where += [f"t.run_id IN ({marks})", "m.name=?", "t.status='ok'"]
        args += [*run_ids, metric]
        cur = self.db.execute(
            "SELECT t.run_id, t.workload, t.target, g.io_mode, m.unit, m.value FROM metrics m"
            " JOIN trials t ON t.id=m.trial_id JOIN targets g ON g.run_id=t.run_id AND g.name=t.target"
            " WHERE " + " AND ".join(where) + " ORDER BY t.run_id, t.seq",
            args,
        )
        return [MetricPoint(*r) for r in cur.fetchall()]


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT, so two runs writing one database serialize cleanly.

    SIGINT/SIGTERM wait until the transaction has ended: a trial is stored
    whole or not at all, and no transaction is left open for the next one.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self._blocked = signals_blocked()

    def __enter__(self) -> sqlite3.Connection:
        self._blocked.__enter__()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._blocked.__exit__(None, None, None)
            raise
        return self.db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._blocked.__exit__(None, None, None)


def _given(*filters: tuple[str, Any]) -> tuple[list[str], list[Any]]:
    """The SQL conditions whose value was given, and those values in order."""
    chosen = [(sql, value) for sql, value in filters if value is not None]
    return [sql for sql, _ in chosen], [value for _, value in chosen]


def _row(cur: sqlite3.Cursor, row: tuple[Any, ...]) -> DbRow:
    return {d[0]: v for d, v in zip(cur.description, row, strict=True)}


def _target(row: DbRow) -> TargetInfo:
    def flag(v: int | None) -> bool | None:
        return None if v is None else bool(v)

    return TargetInfo(
        name=row["name"],
        backend=row["backend"],
        baseline=row["baseline"],
        encrypted=bool(row["encrypted"]),
        io_mode=row["io_mode"],
        direct_io=row["direct_io"],
        direct_io_reason=row["direct_io_reason"],
        marker_in_backing=flag(row["marker_in_backing"]),
        encryption_verified=flag(row["encryption_verified"]),
        details=json.loads(row["details_json"]),
        medium=Medium(row["medium"] or "device"),
        host=row["host"],  # a fleet run's host label; None on one machine
        protection=json.loads(row["protection_json"]) if row["protection_json"] else None,
    )


def _opt_int(v: bool | None) -> int | None:
    return None if v is None else int(v)
