"""The result document's JSON Schema (docs/result-schema.json), generated from the typed
model: the shipped file is the generator's output, every document recorded by a real run
validates against it, and a document missing a field, or with a field of the wrong type,
does not."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from cryptbench.report import json_schema
from tests.support.paths import REPO

ROOT = REPO
SHIPPED = ROOT / "docs" / "result-schema.json"
DOCS = ROOT / "tests" / "fixtures" / "documents"
NAMES = sorted(p.stem for p in DOCS.glob("*.json"))


def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SHIPPED.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schema_is_the_generated_one() -> None:
    # after a change to model/result.py, write it again:
    #   .venv/bin/python -m cryptbench.report.json_schema > docs/result-schema.json
    assert SHIPPED.read_text() == json_schema.text()


@pytest.mark.parametrize("name", NAMES)
def test_every_recorded_document_validates(name: str) -> None:
    doc = json.loads((DOCS / f"{name}.json").read_text())
    errors = [e.message for e in _validator().iter_errors(doc)]
    assert errors == []


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("a result's median", lambda d: d["results"][0].pop("median")),
        ("a target's name", lambda d: d["targets"][1].pop("name")),
        ("the schema version", lambda d: d.pop("schema_version")),
        ("a comparison's kind", lambda d: d["comparisons"][0].update(kind="sideways")),
        ("a ranking entry's ratio", lambda d: d["ranking"][0]["overall"][0].update(ratio="high")),
        ("a warning's message", lambda d: d["warnings"][0].pop("message")),
    ],
)
def test_a_document_missing_a_field_or_mistyped_does_not(where: str, change: object) -> None:
    doc = copy.deepcopy(json.loads((DOCS / "default-run.json").read_text()))
    assert callable(change)
    change(doc)
    assert list(_validator().iter_errors(doc)), where
