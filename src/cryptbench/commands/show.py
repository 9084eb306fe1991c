"""`cryptbench show ID|latest`: one stored run, as run printed it."""

from __future__ import annotations

from pathlib import Path

from cryptbench.report import document
from cryptbench.result_model import Document
from cryptbench.store import Store, default_db_path


def run(*, ref: str = "latest", db: Path | None = None) -> Document:
    store = Store.open(db or default_db_path(), create=False)
    try:
        return document.build(store, store.resolve_run(ref))
    finally:
        store.close()
