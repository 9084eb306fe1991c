"""`cryptbench history`: the runs stored so far, newest first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptbench.errors import UsageError
from cryptbench.store import Store, default_db_path


def run(*, limit: int = 20, db: Path | None = None) -> list[dict[str, Any]]:
    if limit < 1:
        raise UsageError("--limit must be at least 1")
    path = db or default_db_path()
    if not path.exists():
        return []
    store = Store.open(path, create=False)
    try:
        rows = store.history(limit)
    finally:
        store.close()
    out = []
    for r in rows:
        plan = json.loads(r.pop("plan_json"))
        out.append(
            {
                **r,
                "size": plan.get("size"),
                "repeats": plan.get("repeats"),
                "targets": (r["targets"] or "").split(",") if r["targets"] else [],
            }
        )
    return out
