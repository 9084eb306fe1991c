"""db-fsync: small transactions committed to SQLite on the target, each one
durable before the next begins (synchronous=FULL), as a mail index or a
photo catalog does; transactions per second. fsync-bound: it shows what a
layer's fsync costs, which bulk throughput hides.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import ClassVar

from cryptbench.engines.apps.base import AppEnv, AppResult, AppWorkload, PhaseClock, remove_tree
from cryptbench.engines.apps.data import incompressible
from cryptbench.engines.apps.params import Params
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo

ROW = 1024  # bytes of payload per transaction
PER_TRANSACTION = 64 << 10  # bytes of --size per transaction, so --size scales the count
MIN_TRANSACTIONS = 16
MAX_TRANSACTIONS = 2000  # beyond this a default-sized run would take minutes on slow layers
JOURNALS = ("delete", "wal")


@dataclass(frozen=True)
class DbFsync(AppWorkload):
    app: ClassVar[str] = "db-fsync"
    writes: ClassVar[bool] = True
    primary: ClassVar[str] = "transactions_per_second"
    rate_metric: ClassVar[str | None] = "transactions_per_second"
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo("transactions_per_second", "transactions/s", True, "transactions per second"),
    )
    summary: ClassVar[str] = "small SQLite transactions, each durable (synchronous=FULL); transactions/s"

    name: str
    transactions: int = 0  # count; 0: one per 64 KiB of --size, from 16 to 2000
    journal: str = "delete"  # SQLite journal mode: delete (its default) or wal
    row_size: int = ROW  # bytes per row

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> DbFsync:
        p = Params(params, where)
        count = p.integer("transactions", 0, 1, 1_000_000)
        journal = p.choice("journal", "delete", JOURNALS)
        row = p.size("row_size", ROW, 16, 1 << 20)
        p.done()
        return cls(name, count, journal, row)

    def count(self, size: int) -> int:
        if self.transactions:
            return self.transactions
        return max(MIN_TRANSACTIONS, min(MAX_TRANSACTIONS, size // PER_TRANSACTION))

    def target_bytes(self, size: int) -> int:
        return self.count(size) * (self.row_size + 512) + (1 << 20)

    def describe(self, size: int) -> JsonObject:
        return {
            **super().describe(size),
            "transactions": self.count(size),
            "journal": self.journal,
            "row_size": self.row_size,
        }

    def run(self, env: AppEnv) -> AppResult:
        n = self.count(env.size)
        payload = incompressible(env.seed, self.row_size * n, "rows")
        env.root.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(env.root / "app.sqlite", isolation_level=None)
        clock = PhaseClock()
        try:
            db.execute(f"PRAGMA journal_mode={self.journal}")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB)")
            with clock.phase("commit") as c:
                for i in range(n):
                    db.execute("BEGIN")
                    row = payload[i * self.row_size : (i + 1) * self.row_size]
                    db.execute("INSERT INTO rows (body) VALUES (?)", (row,))
                    db.execute("COMMIT")
                    c.bytes += self.row_size
                    c.items += 1
        finally:
            db.close()
        return AppResult(tuple(clock.phases), n, {"transactions": n, "journal": self.journal})

    def clean(self, env: AppEnv) -> None:
        remove_tree(env.root)
