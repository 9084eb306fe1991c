"""Schema migrations, chained by `PRAGMA user_version`.

Migration i takes a database at version i to version i + 1. Never edit a
migration that has shipped; add the next one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _execute_all(db: sqlite3.Connection, sql: str) -> None:
    # executescript() would COMMIT first and break the migration's transaction.
    for statement in sql.split(";"):
        if statement.strip():
            db.execute(statement)


def _v0_to_v1(db: sqlite3.Connection) -> None:
    _execute_all(
        db,
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,          -- ISO 8601, UTC
            finished_at TEXT,
            status TEXT NOT NULL,              -- running, complete, interrupted, failed
            tool_version TEXT NOT NULL,
            suite TEXT NOT NULL,
            plan_json TEXT NOT NULL,
            environment_json TEXT NOT NULL,
            notes_json TEXT NOT NULL DEFAULT '[]'
        );
        CREATE TABLE targets (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,
            backend TEXT NOT NULL,
            baseline TEXT,
            encrypted INTEGER NOT NULL,
            io_mode TEXT NOT NULL,             -- direct or buffered, as the trials ran
            direct_io TEXT NOT NULL,           -- what O_DIRECT does here (probed)
            direct_io_reason TEXT NOT NULL,
            marker_in_backing INTEGER,
            encryption_verified INTEGER,
            details_json TEXT NOT NULL,
            PRIMARY KEY (run_id, name)
        );
        CREATE TABLE trials (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            seq INTEGER NOT NULL,              -- position in the run's trial order
            block INTEGER NOT NULL,            -- interleaving block
            repeat INTEGER NOT NULL,
            workload TEXT NOT NULL,
            target TEXT NOT NULL,
            started_at TEXT NOT NULL,
            status TEXT NOT NULL,              -- ok or failed
            error TEXT,
            cache_method TEXT,
            cache_resident_bytes INTEGER,      -- bytes of data + backing in page cache at start
            job_file TEXT,
            raw_output TEXT                    -- fio's JSON, as fio printed it
        );
        CREATE INDEX trials_run ON trials(run_id);
        CREATE TABLE metrics (
            trial_id INTEGER NOT NULL REFERENCES trials(id),
            name TEXT NOT NULL,
            unit TEXT NOT NULL,
            value REAL NOT NULL,
            PRIMARY KEY (trial_id, name)
        );
        """,
    )


def _v1_to_v2(db: sqlite3.Connection) -> None:
    # How the run decided to stop repeating: the rule, each question's answer,
    # what the trials spent (stats/stopping.py). Runs before this version have '{}'.
    db.execute("ALTER TABLE runs ADD COLUMN stopping_json TEXT NOT NULL DEFAULT '{}'")


def _v2_to_v3(db: sqlite3.Connection) -> None:
    # --ram: a target on the device or its twin on RAM. And the cipher ceilings:
    # `cryptbench cipher` stores one row with run_id NULL; a run stores the
    # ceilings it measured for its own backends with its run_id.
    _execute_all(
        db,
        """
        ALTER TABLE targets ADD COLUMN medium TEXT NOT NULL DEFAULT 'device';
        CREATE TABLE ciphers (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES runs(id),
            measured_at TEXT NOT NULL,         -- ISO 8601, UTC
            tool_version TEXT NOT NULL,
            environment_json TEXT NOT NULL,
            result_json TEXT NOT NULL          -- pipeline/cipher_speed.py's document
        );
        CREATE INDEX ciphers_run ON ciphers(run_id)
        """,
    )


def _v3_to_v4(db: sqlite3.Connection) -> None:
    # CPU over time during each trial (measure/cpu_timeline.py), for the report's
    # chart; trials stored before this version have none.
    db.execute(
        """
        CREATE TABLE cpu_timelines (
            trial_id INTEGER PRIMARY KEY REFERENCES trials(id),
            timeline_json TEXT NOT NULL        -- started_at (epoch s), ends (s), system and helpers (cores)
        )
        """
    )


def _v4_to_v5(db: sqlite3.Connection) -> None:
    # Fleet runs (cryptbench fleet run): each target belongs to a host, and
    # each host's manifest and fate are kept with the run. A run on one
    # machine has NULL hosts and no fleet_hosts rows.
    _execute_all(
        db,
        """
        ALTER TABLE targets ADD COLUMN host TEXT;
        CREATE TABLE fleet_hosts (
            run_id INTEGER NOT NULL REFERENCES runs(id),
            name TEXT NOT NULL,                -- the label from hosts.toml
            address TEXT NOT NULL,             -- its fio server, as the coordinator reached it
            status TEXT NOT NULL,              -- ok, failed (stopped answering), unusable (no manifest)
            reason TEXT,                       -- why, when not ok
            manifest_json TEXT,                -- what it served, as its manifest_command printed it
            PRIMARY KEY (run_id, name)
        )
        """,
    )


def _v5_to_v6(db: sqlite3.Connection) -> None:
    # What each target's backing hides, as the protection probes found it (JSON of
    # protection/findings.py's Protection); targets of earlier runs have none.
    db.execute("ALTER TABLE targets ADD COLUMN protection_json TEXT")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _v0_to_v1,
    _v1_to_v2,
    _v2_to_v3,
    _v3_to_v4,
    _v4_to_v5,
    _v5_to_v6,
]
SCHEMA_VERSION = len(MIGRATIONS)
