"""Each kind of warning has its rule beside it, named after it, and the rules find
on recorded documents what the document lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cryptbench.report import warning_rules
from cryptbench.report.warning_rules import WarningKind
from cryptbench.result_model import Document

DOCS = Path(__file__).parent.parent / "fixtures" / "documents"


def test_every_kind_has_its_rule_and_every_rule_is_applied() -> None:
    applied = {*warning_rules.RUN_RULES, *warning_rules.RESULT_RULES}
    applied |= {
        warning_rules.failed_trials,
        warning_rules.cache_not_dropped,
        warning_rules.imprecise,
        warning_rules.io_mode_mismatch,
    }
    assert {r.__name__ for r in applied} == {k.value.replace("-", "_") for k in WarningKind}


@pytest.mark.parametrize("name", sorted(p.stem for p in DOCS.glob("*.json")))
def test_the_rules_find_the_recorded_warnings_that_need_no_trials(name: str) -> None:
    """Recorded documents hold what the rules found when they were built; the rules
    that read only the document find the same again, in the same order."""
    doc = json.loads((DOCS / f"{name}.json").read_text())
    trial_kinds = {WarningKind.FAILED_TRIALS, WarningKind.CACHE_NOT_DROPPED}
    again = [
        w.to_json() for w in warning_rules.find(Document.from_json(doc), []) if w.kind not in trial_kinds
    ]
    recorded = [w for w in doc["warnings"] if w["kind"] not in trial_kinds]
    assert again == recorded
