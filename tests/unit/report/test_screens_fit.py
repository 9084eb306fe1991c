"""Every screen of every stored run at 80 and at 120 columns: no line wider than the
terminal, no header or cell cut (Rich marks a cut with '…'), no column dropped. The
documents are those recorded by real runs (tests/fixtures/documents/), one of them
with the protection probes' findings (default-run-probed, `make run` on this VM)."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from cryptbench.model.result import Document
from cryptbench.report import screens
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"
NAMES = sorted(p.stem for p in DOCS.glob("*.json"))
WIDTHS = (80, 120)


def _screen(name: str, width: int, details: bool) -> str:
    doc = Document.from_json(json.loads((DOCS / f"{name}.json").read_text()))
    out = io.StringIO()
    screens.render(doc, Console(file=out, width=width, color_system=None), details=details)
    return out.getvalue()


@pytest.mark.parametrize("details", [False, True], ids=["answer", "details"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", NAMES)
def test_no_line_is_wider_than_the_terminal_and_nothing_is_cut(name: str, width: int, details: bool) -> None:
    text = _screen(name, width, details)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    cut = [line for line in lines if "…" in line]
    assert not cut, "\n".join(cut)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_protection_tables_keep_every_column_and_every_target(width: int) -> None:
    text = _screen("default-run-probed", width, details=True)
    start = text.index("What each target's backing hides")
    section = text[start : text.index("The evidence is in the JSON document", start)]
    words = section.split()
    for header in ("target", "read", "contents", "names", "sizes", "tree", "tampering"):
        assert header in words, header
    for header in ("space,", "small", "files", "large", "file", "fixed,", "baseline", "byte", "changed"):
        assert header in words, header
    doc = json.loads((DOCS / "default-run-probed.json").read_text())
    for t in doc["targets"]:
        rows = [line for line in section.splitlines() if line.split()[:1] == [t["name"]]]
        assert rows, t["name"]
        # every cell of its row (two tables' rows where split): the verdicts, the space
        cells = sum(len(r.split()) - 1 for r in rows)
        assert cells >= 5 + 4, (t["name"], rows)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", NAMES)
def test_every_workload_and_target_name_prints_whole(name: str, width: int) -> None:
    """A table squeezed to the terminal folds no name mid-word ('seq1m-q8-rea' over 'd'):
    each workload's and target's name stands whole on the lines of the details, or breaks
    after one of its '-'."""
    text = _screen(name, width, details=True)
    doc = json.loads((DOCS / f"{name}.json").read_text())
    names = {*doc["plan"]["workloads"], *(t["name"] for t in doc["targets"])}
    words = {w.strip("(),:;") for line in text.splitlines() for w in line.split()}
    # a break after a '-' is a place a name may break, and a part may stand for the whole
    # (a fleet host's fscrypt, a variant's -noqueue): its pieces between such places are
    # whole; any other part of a name that reads as one (a digit, '-' or '@' in it) was cut
    whole = {
        n[i:j]
        for n in names
        for i in range(len(n))
        for j in range(i + 1, len(n) + 1)
        if (i == 0 or n[i - 1] in "-/" or n[i] == "-") and (j == len(n) or n[j - 1] == "-")
    }
    folded = {
        w
        for w in words - whole
        if len(w) >= 6 and any(ch in w for ch in "-@0123456789") and any(w in n for n in names)
    }
    assert not folded
