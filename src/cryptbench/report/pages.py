"""The Jinja2 environment both HTML pages (export_html.py, export_compare_html.py) render
through: one loader over report/templates, autoescaped. Neutral: it renders nothing."""

from __future__ import annotations

from typing import Protocol

import jinja2


class PageChart(Protocol):
    """What a page needs of a chart (charts.Chart is one): the pages take charts drawn by
    the command, and so never load Matplotlib themselves."""

    @property
    def name(self) -> str: ...  # file stem, and the id prefix inside the page
    @property
    def kind(self) -> str: ...  # the page section it belongs to
    @property
    def title(self) -> str: ...
    @property
    def caption(self) -> str: ...  # what is drawn, in words, under the chart

    def svg(self) -> str: ...


ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("cryptbench", "report/templates"),
    autoescape=True,  # names and messages come from suites and the system: text, never markup
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
