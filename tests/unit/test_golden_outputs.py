"""What every renderer prints for the documents recorded by real runs
(tests/fixtures/documents), kept byte for byte in tests/golden/outputs/: a change of
output shows here as a diff, and a refactoring that means to change nothing must
leave every file as it is.

After a change of output that is meant, write the files again and read the diff:
    CRYPTBENCH_GOLDEN=write .venv/bin/pytest tests/unit/test_golden_outputs.py
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from cryptbench.analysis import diagnosis, document, ranking, warning_rules
from cryptbench.report import charts, export_html, export_markdown, screens
from cryptbench.result_model import Document

DOCS = Path(__file__).parent.parent / "fixtures" / "documents"
GOLDEN = Path(__file__).parent.parent / "golden" / "outputs"
NAMES = sorted(p.stem for p in DOCS.glob("*.json"))
WRITE = os.environ.get("CRYPTBENCH_GOLDEN") == "write"


def _console_text(doc: Document, width: int, details: bool) -> str:
    out = io.StringIO()
    screens.render(doc, Console(file=out, width=width, color_system=None), details=details)
    return out.getvalue()


def _json(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


def _derived(doc: Document) -> str:
    """The sections document.build derives from the core (targets, results,
    comparisons), recomputed from the recorded core: trials are not in a document,
    so the rules that read them see none."""
    return _json(
        {
            "qd_curves": [c.to_json() for c in document.qd_curves(doc)],
            "conclusions": document.conclusions(doc),
            "warnings": [w.to_json() for w in warning_rules.find(doc, [])],
            "diagnosis": [d.to_json() for d in diagnosis.diagnose(doc)],
        }
    )


def _charts(doc: Document) -> str:
    """Which charts the page draws, with their titles and captions (the SVG itself is
    Matplotlib's, not ours)."""
    return _json([[c.kind, c.name, c.title, c.caption] for c in charts.build(doc, [])])


RENDERERS: dict[str, Callable[[Document], str]] = {
    "answer-80.txt": lambda d: _console_text(d, 80, details=False),
    "answer-120.txt": lambda d: _console_text(d, 120, details=False),
    "details-80.txt": lambda d: _console_text(d, 80, details=True),
    "details-120.txt": lambda d: _console_text(d, 120, details=True),
    "report.md": export_markdown.render,
    "ranking.json": lambda d: _json([s.to_json() for s in ranking.build(d)]),
    "derived.json": _derived,
    "charts.json": _charts,
    "page.html": lambda d: export_html.render(d, []),
}


def _doc(name: str) -> Document:
    """The recorded document with its ranking built anew, as `show` builds it from the store
    (a fixture keeps the ranking of the day it was recorded)."""
    doc = Document.from_json(json.loads((DOCS / f"{name}.json").read_text()))
    return dataclasses.replace(doc, ranking=ranking.build(doc))


def test_every_recorded_document_is_covered() -> None:
    assert len(NAMES) >= 5


@pytest.mark.parametrize("kind", sorted(RENDERERS))
@pytest.mark.parametrize("name", NAMES)
def test_output_is_byte_identical(name: str, kind: str) -> None:
    text = RENDERERS[kind](_doc(name))
    path = GOLDEN / f"{name}.{kind}"
    if WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path}: write them (this module's docstring says how)"
    assert text == path.read_text(), f"{path} differs: diff it against this output"
