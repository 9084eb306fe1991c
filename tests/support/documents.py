"""Documents and plans made for unit tests: a stored document's fixture with other
protection findings, and a plan built from a request as the command line builds it."""

from __future__ import annotations

import json
from pathlib import Path

from cryptbench.model.result import Document
from cryptbench.planning.plan import Plan, build_plan
from cryptbench.planning.request import RunRequest
from tests.support.paths import TESTS

DOCUMENTS = TESTS / "fixtures" / "documents"  # JSON documents run printed


def doc_with(protection: dict[str, dict[str, object]]) -> Document:
    """default-run.json with each named target's protection replaced by the one given."""
    raw = json.loads((DOCUMENTS / "default-run.json").read_text())
    for t in raw["targets"]:
        if t["name"] in protection:
            t["protection"] = protection[t["name"]]
    return Document.from_json(raw)


def plan_with(tmp_path: Path, **over: object) -> Plan:
    """A small plain quick-suite plan in `tmp_path`, with the request's fields in `over`."""
    kw: dict[str, object] = {
        "backends": "plain",
        "suite": "quick",
        "size": "8M",
        "repeats": 2,
        "seed": 1,
        "target": str(tmp_path),
        "io_mode": "auto",
        "data": "random",
        "db": tmp_path / "r.sqlite",
    }
    kw.update(over)
    return build_plan(RunRequest(**kw))  # type: ignore[arg-type]
