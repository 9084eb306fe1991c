"""`cryptbench backends`: what can be measured here, and why not the rest."""

from __future__ import annotations

from typing import Any

from cryptbench.backends import REGISTRY


def run() -> list[dict[str, Any]]:
    rows = []
    for name, backend in REGISTRY.items():
        avail = backend.probe()
        rows.append(
            {
                "name": name,
                "available": avail.ok,
                "reason": avail.reason,
                "encrypted": backend.encrypted,
                "baseline": backend.baseline,
                "summary": backend.summary,
            }
        )
    return rows
