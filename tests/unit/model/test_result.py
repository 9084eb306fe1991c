"""The typed result model keeps the JSON contract byte for byte: each recorded
document (tests/fixtures/documents, written by real runs) read into the model and
written out again is the same text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.model.result import Document
from cryptbench.model.stored_run import RunPlan
from tests.support.paths import TESTS

DOCS = sorted((TESTS / "fixtures" / "documents").glob("*.json"))


def _indent(text: str) -> int:
    return len(text.split("\n", 2)[1]) - len(text.split("\n", 2)[1].lstrip(" "))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.stem)
def test_a_recorded_document_round_trips_byte_for_byte(path: Path) -> None:
    text = path.read_text()
    doc = Document.from_json(json.loads(text))
    assert json.dumps(doc.to_json(), indent=_indent(text)) + "\n" == text


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.stem)
def test_the_model_holds_types_not_dicts(path: Path) -> None:
    doc = Document.from_json(json.loads(path.read_text()))
    assert doc.targets and all(isinstance(t.encrypted, bool) for t in doc.targets)
    assert doc.results and all(r.n == len(r.samples) for r in doc.results)
    assert all(c.target in {t.name for t in doc.targets} for c in doc.comparisons)
    assert doc.trials.ok > 0 and doc.stopping is not None and doc.stopping.answers


def test_a_document_without_optional_sections_writes_none_of_their_keys() -> None:
    d = json.loads(DOCS[0].read_text())
    for key in ("stopping", "device_writes", "study_summary", "fleet"):
        d.pop(key, None)
    out = Document.from_json(d).to_json()
    assert not {"stopping", "device_writes", "study_summary", "fleet"} & out.keys()
    assert list(out) == list(d)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.stem)
def test_the_plan_is_written_as_every_recorded_run_stored_it(path: Path) -> None:
    """RunPlan.write, which a local run's Plan and a fleet run's coordinator both call,
    writes back each recorded run's plan: the same keys and values, and a local run's in
    the order it stored them (the fleet fixture's keys were stored sorted)."""
    raw = json.loads(path.read_text())["plan"]
    written = RunPlan.write(**raw).raw
    assert written == raw
    if "fleet" not in raw:
        assert list(written) == list(raw)


def test_a_plan_leaves_out_what_only_the_other_kind_of_run_records() -> None:
    raw = json.loads((DOCS[0].parent / "fleet-three-hosts.json").read_text())["plan"]
    local_only = {"not_run", "target_dir", "space_needed", "keys", "needs", "trial_time", "ioengine"}
    assert not local_only & set(RunPlan.write(**raw).raw)
    assert RunPlan.write(**{**raw, "summary": None}).raw["summary"] is None  # both record it, None or not
