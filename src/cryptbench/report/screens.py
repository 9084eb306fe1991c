"""What a command prints for a stored run, put together from the renderers: the answer
on one screen (answer_console.py), its sentences alone with -q, or with --details (or another metric than each
workload's own) everything: console.py's figures, the costs (cost_console.py), the
conclusions, and a fleet's hosts (fleet_console.py). The one module that imports
renderers; it prints nothing of its own."""

from __future__ import annotations

from rich.console import Console

from cryptbench.model.result import Document
from cryptbench.report import answer_console, console, cost_console, fleet_console


def render(
    doc: Document, out: Console, metric: str | None = None, *, details: bool = False, quiet: bool = False
) -> None:
    if quiet:
        answer_console.answer_only(doc, out)
        return
    if not details and metric is None:
        answer_console.render(doc, out)
        return
    console.figures(doc, out, metric)
    cost_console.render(doc, out)
    console.closing(doc, out)
    fleet_console.render(doc, out)
