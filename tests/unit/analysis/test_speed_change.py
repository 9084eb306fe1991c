"""One way of reading every figure (docs/methodology.md, "Reading the figures"): a change
in speed in percent, negative when slower, its interval as ±h only where symmetric and
[lo, hi] where not, * where it excludes no change, ±? where there is none. The
formatter is tested on its own, then every renderer is held to it on every document
recorded by a real run."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re

import pytest
from rich.console import Console

from cryptbench.analysis import run_comparison
from cryptbench.analysis.speed_change import change_cell, change_words, percent, speed_change, symmetric
from cryptbench.commands import check
from cryptbench.model.result import ComparisonKind, Document
from cryptbench.report import export_html, export_markdown, screens
from cryptbench.report.cost_console import qd_cell
from cryptbench.report.fleet_rows import cost_rows
from tests.support.golden import recorded
from tests.support.paths import TESTS

DOCS = TESTS / "fixtures" / "documents"
NAMES = sorted(p.stem for p in DOCS.glob("*.json"))


def test_a_cell_uses_plus_minus_only_where_the_interval_is_symmetric() -> None:
    assert change_cell(-96.2, (-97.1, -95.3)) == "-96±1*"
    # the cell: -33±348 claimed a reach of 348 on both sides of [-89, +316]
    assert change_cell(-33.0, (-89.0, 316.0)) == "-33 [-89,+316]"
    assert change_cell(-84.0, (-88.0, -79.0)) == "-84 [-88,-79]*"  # 4 below, 5 above
    assert change_cell(5.0, (-3.0, 13.0)) == "+5±8"  # symmetric, not significant: no mark
    assert change_cell(12.0, (2.0, 22.0)) == "+12±10*"  # faster, significantly
    assert change_cell(-11.0, None) == "-11 ±?"
    assert symmetric(10.0, 5.4, 14.6) and not symmetric(10.0, 5.4, 15.6)


def test_a_sentence_always_gives_both_ends() -> None:
    assert change_words(-33.0, (-89.0, 316.0)) == "-33% [-89, +316]"
    assert change_words(-96.2, (-97.1, -95.3)) == "-96% [-97, -95]*"
    assert change_words(-96.2, (-97.1, -95.3), mark=False) == "-96% [-97, -95]"
    assert change_words(-11.0, None) == "-11% (no interval)"


def test_beyond_a_hundredfold_only_the_order_of_magnitude_prints() -> None:
    # a two-trial interval from a recorded CI run: 14 digits pushed the table off 80 columns
    assert change_cell(346.0, (-100.0, 2392634715304.0)) == "+346 [-100,+2.4e12]"
    assert change_words(-69.0, (-99.6, 209237899078.0)) == "-69% [-100, +2.1e11]"
    assert percent(9999.4) == "+9999" and percent(10000.0) == "+1.0e4"
    assert percent(-12345.0, 1, sign=False) == "-1.2e4"
    assert percent(43.21, 1, sign=False) == "43.2"


def _doc(name: str) -> Document:
    return Document.from_json(json.loads((DOCS / f"{name}.json").read_text()))


def _text(doc: Document, details: bool) -> str:
    out = io.StringIO()
    screens.render(doc, Console(file=out, width=400, color_system=None), details=details)
    return out.getvalue()


@pytest.mark.parametrize("name", NAMES)
def test_every_renderer_writes_each_comparison_the_one_way(name: str) -> None:
    doc = _doc(name)
    answer, details = _text(doc, False), _text(doc, True)
    markdown, page = export_markdown.render(doc), html.unescape(export_html.render(doc, []))
    rows = {line.split()[0]: line for line in answer.splitlines() if line.split()}
    held = 0
    for c in doc.comparisons:
        pct, interval, _ = speed_change(c)
        words = change_words(pct, interval)
        if c.kind == ComparisonKind.BASELINE:
            # the answer's matrix: the cell on the target's own row (a variant's rows hold more)
            row = rows.get(c.target)
            if row is not None and f"vs {c.baseline}" in row:
                assert change_cell(pct, interval) in row, (c.target, c.workload, row)
            assert words in details and words.replace("*", "\\*") in markdown and words in page
            held += 1
    assert held
    # nowhere a ± with a reach the interval lacks: each printed belongs to a comparison whose
    # interval reaches that far on both sides (worked out here, not by the formatter)
    changes = [speed_change(c)[:2] for c in doc.comparisons]
    for text in (answer, details):
        for m in re.finditer(r"(?<![\w.\[])([+-]\d+)±(\d+)", text):
            value, reach = m.group(1), int(m.group(2))
            assert any(
                f"{pct:+.0f}" == value
                and iv is not None
                and round(pct - iv[0]) == round(iv[1] - pct) == reach
                for pct, iv in changes
            ), (name, m.group(0))


def test_the_queue_depth_table_is_a_change_in_speed_not_percent_slower() -> None:
    doc = _doc("qd-sweep-fscrypt")
    points = [p for c in doc.qd_curves for p in c.points]
    assert points
    details = _text(doc, True)
    for p in points:
        lo, hi = p.change_low, p.change_high
        interval = None if lo is None or hi is None else (lo, hi)
        assert qd_cell(p, compact=False) == change_words(p.change_percent, interval)
        assert qd_cell(p, compact=False) in details
    assert "percent slower" not in details


def _keys(value: object) -> set[str]:
    """Every key of a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


UNSIGNED = re.compile(r"(?<![+\-±\d.\w])\d+(?:\.\d+)?%")  # "40%" where "-40%" is meant


@pytest.mark.parametrize("name", NAMES)
def test_the_json_and_the_sentences_carry_changes_not_overheads(name: str) -> None:
    """The JSON's figures are changes in speed (a key says change, never overhead), and the
    sentences built from them (conclusions, queue-depth moves, the fleet's spread) sign
    every change as the tables do."""
    doc = recorded(name)
    data = json.loads(json.dumps(doc.to_json()))
    assert not {k for k in _keys(data) if "overhead" in k}
    for c in data["comparisons"]:
        assert c["change_percent"] == pytest.approx((c["ratio"] - 1) * 100)
    for curve in data["qd_curves"]:
        for p in curve["points"]:
            if p["change_low"] is not None:
                assert p["change_low"] <= p["change_percent"] <= p["change_high"]
    for line in doc.conclusions:
        assert not UNSIGNED.findall(line.replace("within ±", "")), line
    for d in doc.diagnosis:
        for s in d.sentences:
            if "queue depth" in s:
                assert not UNSIGNED.findall(s), s
    if doc.fleet:
        for row in cost_rows(doc.fleet):
            for key in ("median", "p10", "p90", "worst"):
                assert not UNSIGNED.findall(row[key]), row


def test_compare_and_check_write_changes_in_their_json() -> None:
    doc = _doc("quick-fscrypt-gocryptfs-ram")
    comp = run_comparison.compare(doc, dataclasses.replace(doc, run_id=99), db_a="a", db_b="b")
    data = json.loads(json.dumps(comp.to_json()))
    assert not {k for k in _keys(data) if "overhead" in k}
    slower = [c for c in data["costs"] if c["a_interval"] and c["a_interval"][1] < 0]
    assert slower and all(c["a"] < 0 for c in slower)  # slower: negative
    gate = check.evaluate(doc, -30.0)
    found = json.loads(json.dumps(gate.to_json()))
    assert found["floor_change_percent"] == -30.0
    assert all(f["change"] is None or f["passed"] == (f["change"] >= -30.0) for f in found["findings"])
    assert any(f["change"] is not None and f["change"] < 0 for f in found["findings"])
