"""`report --markdown` on recorded runs: every (workload, target) once, figures
as the document has them, and a table Markdown renders."""

from __future__ import annotations

import json

import pytest

from cryptbench.model.result import Document
from cryptbench.report import export_markdown
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"


@pytest.mark.parametrize("name", ["default-run.json", "quick-fscrypt-gocryptfs-ram.json"])
def test_one_row_per_workload_and_target(name: str) -> None:
    doc = json.loads((DOCS / name).read_text())
    text = export_markdown.render(Document.from_json(doc))
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| workload")]
    workloads = {r["workload"] for r in doc["results"]}
    assert len(rows) == len(workloads) * len(doc["targets"])
    assert all(line.count("|") == 6 for line in rows)  # five cells: no stray pipe splits one


def test_the_figures_are_the_documents() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    text = export_markdown.render(Document.from_json(doc))
    # fscrypt at seq1m-q8-read, as `cryptbench show` printed this run: 47.5 MB/s, 94 % slower than ext4-loop
    (row,) = [line for line in text.splitlines() if line.startswith("| seq1m-q8-read | fscrypt |")]
    (c,) = [
        c
        for c in doc["comparisons"]
        if (c["workload"], c["target"], c["baseline"]) == ("seq1m-q8-read", "fscrypt", "ext4-loop")
    ]
    assert "47.5 MB/s" in row and "| ext4-loop |" in row
    assert f"| {(c['ratio'] - 1) * 100:+.0f}% [" in row and row.endswith("]\\* |")  # * (escaped): significant
    plain = next(line for line in text.splitlines() if line.startswith("| seq1m-q8-read | plain |"))
    assert plain.endswith("|  |  |")  # plain has no baseline


def test_an_interval_that_spans_no_change_is_left_unmarked() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    text = export_markdown.render(Document.from_json(doc))
    (row,) = [line for line in text.splitlines() if line.startswith("| seq1m-q8-read | ext4-loop |")]
    assert row.endswith("| +23% [-69, +194] |")  # no *: it spans no change
    assert "\\* where the interval excludes no change" in text


def test_a_target_without_a_result_is_marked_failed() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    doc["results"] = [r for r in doc["results"] if (r["workload"], r["target"]) != ("seq1m-q8-read", "cryfs")]
    assert "| seq1m-q8-read | cryfs | failed | | |" in export_markdown.render(Document.from_json(doc))


def test_an_environment_field_an_old_run_lacks_reads_unknown() -> None:
    doc = json.loads((DOCS / "default-run.json").read_text())
    del doc["environment"]["kernel"]
    doc["environment"]["cpu_model"] = None
    first = export_markdown.render(Document.from_json(doc)).splitlines()[0]
    assert "kernel unknown" in first and "unknown, " in first and "None" not in first
