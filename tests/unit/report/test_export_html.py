"""The HTML report from a recorded document: every section, each chart inline,
nothing fetched from anywhere, the document's figures in its tables."""

from __future__ import annotations

import json
import re

import pytest

from cryptbench.analysis import ranking
from cryptbench.model.result import Document
from cryptbench.report import charts, export_html
from cryptbench.report.sentences import change_text, median_text
from tests.support.html_page import Page
from tests.support.paths import TESTS

FIXTURES = TESTS / "fixtures" / "documents"


@pytest.fixture(scope="module")
def page_and_doc() -> tuple[Page, Document, list[charts.Chart]]:
    doc = Document.from_json(json.loads((FIXTURES / "quick-fscrypt-gocryptfs-ram.json").read_text()))
    made = charts.build(doc, [])
    page = Page()
    page.feed(export_html.render(doc, made))
    return page, doc, made


def test_every_section_and_each_chart_inline(page_and_doc: tuple[Page, Document, list[charts.Chart]]) -> None:
    page, _doc, made = page_and_doc
    assert page.sections == [
        "ranking", "verdict", "environment", "bars", "overhead", "latency", "efficiency", "warnings",
        "numbers",
    ]  # fmt: skip
    # the ranking's chart opens the page, whatever order the charts were made in
    assert page.charts[0] == "ranking" and sorted(page.charts) == sorted(c.name for c in made)
    assert page.svgs == len(made)
    # Built without timelines (as for a run stored before schema 4): the page says why no CPU chart.
    assert "No CPU-over-time chart" in " ".join(page.text)


def test_nothing_is_fetched_from_anywhere(page_and_doc: tuple[Page, Document, list[charts.Chart]]) -> None:
    page, _doc, _made = page_and_doc
    assert page.external == []  # no link, image or script outside the file (SVG xmlns is not a fetch)
    assert not page.tags & {"script", "link", "img", "iframe"}


def test_the_verdict_is_the_diagnosis(page_and_doc: tuple[Page, Document, list[charts.Chart]]) -> None:
    page, doc, _made = page_and_doc
    text = " ".join(page.text)
    for d in doc.diagnosis:
        for sentence in d.sentences:
            assert sentence in text


def test_the_tables_hold_the_documents_figures(
    page_and_doc: tuple[Page, Document, list[charts.Chart]],
) -> None:
    page, doc, _made = page_and_doc
    summary = page.rows["summary-table"]
    assert len(summary) == len(doc.plan.workloads) * len(doc.targets)
    r = next(
        r
        for r in doc.results
        if (r.workload, r.target, r.metric) == ("rnd4k-q32-write", "gocryptfs", "throughput")
    )
    c = next(
        c
        for c in doc.comparisons
        if (c.workload, c.target, c.baseline) == ("rnd4k-q32-write", "gocryptfs", "plain")
    )
    assert ["rnd4k-q32-write", "gocryptfs", median_text(r), "plain", change_text(c)] in summary
    assert len(page.rows["full-table"]) == len(doc.results)


def test_the_page_opens_with_the_ranking(page_and_doc: tuple[Page, Document, list[charts.Chart]]) -> None:
    page, doc, made = page_and_doc
    text = " ".join(" ".join(page.text).split())
    first, *_ = ranking.sentences(doc)
    assert first.startswith("On the device: cheapest here: gocryptfs")
    # the ranking's sentences come before the diagnosis
    assert text.index(first) < text.index(doc.diagnosis[0].sentences[0])
    chart = next(c for c in made if c.name == "ranking")
    labels = [t.get_text() for ax in chart.figure.axes for t in ax.get_yticklabels()]
    # one panel per medium and family: overall, sequential, random, on the device and on RAM
    assert labels[:2] == ["gocryptfs (cheapest)", "fscrypt"] and len(chart.figure.axes) == 6


def test_warnings_are_grouped_by_kind_and_collapsed(
    page_and_doc: tuple[Page, Document, list[charts.Chart]],
) -> None:
    _page, doc, _made = page_and_doc
    html = export_html.render(doc, [])
    kinds = {w.kind for w in doc.warnings}
    assert html.count('<details class="warnings"') == len(kinds)
    assert '<details class="warnings" data-kind="' in html and "<details open" not in html


def test_names_from_a_suite_are_text_not_markup() -> None:
    doc = json.loads((FIXTURES / "quick-fscrypt-gocryptfs-ram.json").read_text())
    doc["suite"] = "<script>alert(1)</script>"
    html = export_html.render(Document.from_json(doc), [])
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_phone_width_layout_rules_are_there(page_and_doc: tuple[Page, Document, list[charts.Chart]]) -> None:
    doc = page_and_doc[1]
    html = export_html.render(doc, [])
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert re.search(r"@media \(max-width: \d+px\)", html)
    # charts scale to the screen, down to a size whose text stays readable, then scroll
    assert ".plot svg { width: 100%; min-width: 34rem; height: auto;" in html
