"""`cryptbench backends` in the terminal: a short table, then what each backend is and
why the unavailable ones are not, one wrapped paragraph each (readable at 80 columns)."""

from __future__ import annotations

import re
import textwrap

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cryptbench.model.json_types import JsonObject

INDENT = "    "  # continuation lines of a paragraph


NBSP = "\u00a0"  # textwrap breaks only at ASCII whitespace: this keeps "40 MB/s" on one line


def _paragraph(head: str, text: str, width: int) -> str:
    kept = re.sub(r"(\d) (?=[A-Za-z%/]+\b)", rf"\1{NBSP}", f"{head}: {text}")
    wrapped = textwrap.fill(
        kept,
        width=width,
        initial_indent="  ",
        subsequent_indent=INDENT,
        break_on_hyphens=False,
        break_long_words=False,
    )
    return wrapped.replace(NBSP, " ")


def render(rows: list[JsonObject], out: Console) -> None:
    table = Table(box=box.SIMPLE, pad_edge=False, show_edge=False)
    for col in ("backend", "here", "encrypted", "baseline"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        table.add_row(
            r["name"],
            "[green]yes[/green]" if r["available"] else "[red]no[/red]",
            "yes" if r["encrypted"] else "no",
            r["baseline"] or "-",
        )
    out.print(table)
    width = max(40, min(out.width, 100))
    out.print()
    out.print("[bold]What each is[/bold]")
    for r in rows:
        out.print(escape(_paragraph(r["name"], r["summary"], width)), highlight=False)
    # backends that share a reason (the three LUKS ones without device-mapper) share a paragraph
    why: dict[str, list[str]] = {}
    for r in rows:
        if not r["available"]:
            why.setdefault(r["reason"], []).append(r["name"])
    if why:
        out.print()
        out.print("[bold]Not available here[/bold]")
        for reason, names in why.items():
            out.print(escape(_paragraph(", ".join(names), reason, width)), highlight=False)
