"""`cryptbench report --html`: one self-contained page (styles and charts inline,
nothing fetched), readable on a phone and on a desktop.

The page is the document (analysis/document.py) and the charts
(report/charts.py) put through one Jinja2 template; the figures in its
tables are formatted by the same functions as the terminal and Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cryptbench import __version__
from cryptbench.analysis.speed_change import LEGEND
from cryptbench.model.result import Document
from cryptbench.model.units import format_rate, format_value
from cryptbench.model.warning_kinds import RunWarning, WarningKind
from cryptbench.report import protection_rows
from cryptbench.report.fleet_rows import SPREAD_NOTE, cost_rows, host_rows
from cryptbench.report.pages import ENV, PageChart
from cryptbench.report.sentences import (
    command_lines,
    environment_rows,
    precision_line,
    sources,
    stopping_lines,
    summary_rows,
    the_answer,
)

# The chart sections, in the page's order: (Chart.kind, heading, a sentence under it).
CHART_SECTIONS = (
    ("ranking", "Which costs least", ""),
    (
        "bars",
        "Results by workload family",
        "Plain and each target side by side, in the unit each workload uses.",
    ),
    ("overhead", "Cost against the baseline", ""),
    ("latency", "Latency percentiles", ""),
    ("cpu", "CPU over time", ""),
    ("file-size", "Throughput against file size", ""),
)


def full_rows(doc: Document) -> list[dict[str, str]]:
    def fmt(v: float | None, unit: str) -> str:
        return "" if v is None else format_value(v, unit)

    return [
        {
            "workload": r.workload,
            "target": r.target,
            "metric": r.metric,
            "n": str(r.n),
            "median": fmt(r.median, r.unit),
            "ci": "" if r.ci_low is None else f"{fmt(r.ci_low, r.unit)} to {fmt(r.ci_high, r.unit)}",
            "cv": "" if r.cv is None else f"{r.cv:.1%}",
            "min": fmt(r.min, r.unit),
            "max": fmt(r.max, r.unit),
        }
        for r in doc.results
    ]


def efficiency_rows(doc: Document) -> list[dict[str, str]]:
    def rate(v: float | None) -> str:
        return "?" if v is None else format_rate(v)

    out = []
    for e in doc.efficiency:
        own, plain = e.cpu_seconds_per_gb, e.plain_cpu_seconds_per_gb
        out.append(
            {
                "target": e.target,
                "workload": e.workload,
                "achieved": rate(e.achieved),
                "plain": rate(e.plain),
                "ceiling": rate(e.ceiling),
                "efficiency": "?" if e.efficiency is None else f"{e.efficiency:.0%}",
                "limit": e.limit or "?",
                "cpu": "-" if own is None else f"{own:.1f}" + ("" if plain is None else f" ({plain:.1f})"),
            }
        )
    return out


@dataclass(frozen=True)
class WarningGroup:
    """The run's warnings of one kind, as the page lists them."""

    kind: str
    serious: bool  # a kind that puts the figures in doubt (failed trials, unproven encryption, …)
    warnings: list[RunWarning]


def warning_groups(doc: Document) -> list[WarningGroup]:
    """The warnings by kind, serious kinds (failed trials, unproven encryption, …) first."""
    groups: dict[WarningKind, list[RunWarning]] = {}
    for w in doc.warnings:
        groups.setdefault(w.kind, []).append(w)
    order = sorted(groups, key=lambda k: (not k.serious, -len(groups[k])))
    return [WarningGroup(k, k.serious, groups[k]) for k in order]


def render(doc: Document, charts: Sequence[PageChart], space: PageChart | None = None) -> str:
    """The page: `charts` in their sections, and `space` (charts.space_chart) beside what
    each target hides."""
    by_kind: dict[str, list[dict[str, str]]] = {kind: [] for kind, _, _ in CHART_SECTIONS}
    for c in charts:
        by_kind[c.kind].append({"name": c.name, "title": c.title, "caption": c.caption, "svg": c.svg()})
    efficiency = efficiency_rows(doc)
    hides = protection_rows.rows(doc)
    sections = [("ranking", "Which costs least")]
    sections += [("protection", "What each hides")] if hides else []
    sections += [("verdict", "Diagnosis"), ("environment", "Environment")]
    fleet = doc.fleet
    sections += [("fleet", "Fleet")] if fleet else []
    sections += [(kind, title) for kind, title, _ in CHART_SECTIONS[1:] if by_kind[kind]]
    sections += [("efficiency", "Where the cost goes")] if efficiency else []
    sections += [("warnings", "Warnings"), ("numbers", "Numbers")]
    return ENV.get_template("report.html.j2").render(
        tool_version=__version__,
        doc=doc,
        env=doc.environment,
        sections=sections,
        environment=environment_rows(doc),
        chart_sections=CHART_SECTIONS,
        charts_by_kind=by_kind,
        efficiency=efficiency,
        ceiling_sources=sources(doc),
        stopping=stopping_lines(doc.stopping),
        # a scratch space already encrypted is said first: it changes what every figure means
        ranking_sentences=the_answer(doc)
        + ([] if doc.plan.existing else protection_rows.cheapest_lines(doc)),
        command_lines=command_lines(doc),
        protection_rows=hides,
        protection_columns=protection_rows.columns(),
        protection_caption=protection_rows.CAPTION,
        space_chart=space if hides else None,
        protection_broken=protection_rows.broken(doc),
        precision=precision_line(doc),
        legend=LEGEND,
        warning_groups=warning_groups(doc),
        summary=summary_rows(doc),
        full=full_rows(doc),
        # Saying why a chart is missing: runs stored before schema 4 kept only each trial's totals.
        cpu_missing=not by_kind["cpu"],
        fleet_hosts=host_rows(fleet) if fleet else [],
        fleet_costs=cost_rows(fleet) if fleet else [],
        fleet_note=SPREAD_NOTE,
    )
