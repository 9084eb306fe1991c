"""`cryptbench suites`: the built-in suites, and for a study preset, which
study it follows and what it corrects."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from cryptbench.engines.apps import AppWorkload
from cryptbench.suite import builtin_suites, load_suite, primary_metric
from cryptbench.units import format_bytes


def _workload(w: Any) -> dict[str, Any]:
    if isinstance(w, AppWorkload):
        # the parameters the suite set, beside the app's summary
        # every app workload is a dataclass; the check is what lets fields() be typed
        params: list[str] = (
            [
                f"{f.name}={getattr(w, f.name)}"
                for f in fields(w)
                if f.name != "name" and getattr(w, f.name) != f.default
            ]
            if is_dataclass(w)
            else []
        )
        what = f"{w.app}{' (' + ', '.join(params) + ')' if params else ''}: {w.summary}"
        return {"name": w.name, "kind": "app", "app": w.app, "what": what, "metric": primary_metric(w)}
    what = f"fio rw={w.rw} bs={format_bytes(w.bs)} iodepth={w.iodepth}"
    if w.view == "backing":
        what += ", the ciphertext backing, read-only"
    return {"name": w.name, "kind": "fio", "what": what, "metric": primary_metric(w)}


def run(name: str | None = None) -> list[dict[str, Any]]:
    """Every built-in suite, or the one named (a built-in name or a suite file)."""
    names = [name] if name is not None else builtin_suites()
    rows = []
    for n in names:
        s = load_suite(n)
        rows.append(
            {
                "name": s.name,
                "description": s.description,
                "follows": s.follows,
                "corrects": s.corrects,
                "size": s.size,
                "repeats": s.repeats,
                "backends": list(s.backends or []),
                "states": list(s.states or []),
                "workloads": [_workload(w) for w in s.workloads],
                "summary": s.summary,
                "as_published": [_workload(w) for w in s.as_published],
            }
        )
    return rows
