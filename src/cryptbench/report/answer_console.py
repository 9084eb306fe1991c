"""The default terminal report: the answer on one screen.

In order: one header line; which way of encrypting costs least (the ranking);
a compact matrix, a row per target and a column per workload, each cell the
change against the target's baseline with the half-width of its interval (and
for a variant, a second row against the target it varies in one option);
one line per encrypted target naming what limits it; one line counting the
warnings and the precision reached, with the command that shows everything
(`show N --details`, which prints the full report: screens.py).
"""

from __future__ import annotations

from collections import Counter

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench.analysis import study_summary, tuning
from cryptbench.analysis.diagnosis import Rule
from cryptbench.analysis.document import results_by_key
from cryptbench.analysis.speed_change import LEGEND, change_cell, speed_change
from cryptbench.model.metrics import PRIMARY
from cryptbench.model.result import Comparison, ComparisonKind, Document, Result
from cryptbench.model.units import format_value
from cryptbench.model.vocabulary import HostStatus
from cryptbench.report import protection_rows
from cryptbench.report.narrow import fold
from cryptbench.report.sentences import (
    command_lines,
    header,
    precision_line,
    scratch_encrypted,
    stack_line,
    the_answer,
)

# Rich's SIMPLE box pads each column by one space on either side and puts one between columns.
PADDING = 3
MIN_CELL = 6  # the narrowest workload column: its header's pieces fold to this


def _plain_cell(r: Result) -> str:
    if r.unit == "bytes/s":
        mb = r.median / 1e6
        return f"{mb:.0f}" if mb >= 10 else f"{mb:.1f}"
    return format_value(r.median, r.unit)


def _change_cell(c: Comparison) -> Text:
    pct, interval, differs = speed_change(c)
    if interval is None:
        return Text(change_cell(pct, None), style="yellow")
    # the colour repeats the mark, which survives NO_COLOR and pipes
    style = ("red" if pct < 0 else "green") if differs else ""
    return Text(change_cell(pct, interval), style=style)


def _cells(doc: Document, workloads: list[str]) -> list[tuple[str, str, list[Text]]]:
    """(target, what its cells are against, a cell per workload)."""
    results = results_by_key(doc)
    comps = {(c.workload, c.target, c.baseline): c for c in doc.comparisons}
    left_out = doc.plan.not_run
    rows = []
    for t in doc.targets:
        cells = []
        for w in workloads:
            r = results.get((w, t.name, doc.plan.primary(w)))
            if r is None and (w, t.name) in left_out:
                cells.append(Text("not run", style="dim"))  # the ranking's line says why
            elif r is None:
                cells.append(Text("failed", style="red"))
            elif not t.baseline:
                cells.append(Text(_plain_cell(r), style="dim"))
            else:
                c = comps.get((w, t.name, t.baseline))
                cells.append(Text("-") if c is None else _change_cell(c))
        against = (
            f"vs {t.baseline}" if t.baseline else ("MB/s" if _all_throughput(doc, workloads) else "median")
        )
        rows.append((t.name, against, cells))
        # a variant's second row: what its one option changes against the target it varies
        variant = {
            c.workload: c for c in doc.comparisons if c.target == t.name and c.kind == ComparisonKind.VARIANT
        }
        if variant:
            parent = next(iter(variant.values())).baseline
            rows.append(("", f"vs {parent}", [_variant_cell(variant.get(w)) for w in workloads]))
    return rows


def _variant_cell(c: Comparison | None) -> Text:
    return Text("-") if c is None else _change_cell(c)


def _all_throughput(doc: Document, workloads: list[str]) -> bool:
    return all(doc.plan.primary(w) == PRIMARY for w in workloads)


def _tables(doc: Document, width: int) -> list[Table]:
    """The matrix, split into several tables of workload columns where one would not fit."""
    workloads = [w for w in doc.plan.workloads if any(r.workload == w for r in doc.results)]
    rows = _cells(doc, workloads)
    if not rows or not workloads:
        return []
    first = max(len(name) for name, _a, _c in rows) + PADDING
    second = max(len(a) for _n, a, _c in rows) + PADDING
    cell = [max(MIN_CELL, *(len(c[i].plain) for _n, _a, c in rows)) for i in range(len(workloads))]
    tables, start = [], 0
    while start < len(workloads):
        # no padding outside the table's edges: the last column saves its gap
        room, end = width + PADDING - first - second, start
        while end < len(workloads) and (end == start or room >= cell[end] + PADDING):
            room -= cell[end] + PADDING
            end += 1
        # room left over widens a column to its whole name, so that its header folds no more
        # than it must (a screen's lines are the answer's budget)
        widths = {}
        for i in range(start, end):
            widths[i] = cell[i] + min(room, max(0, len(workloads[i]) - cell[i]))
            room -= widths[i] - cell[i]
        table = Table(box=box.SIMPLE, pad_edge=False, show_edge=False, padding=(0, 1))
        table.add_column("target", style="bold", no_wrap=True)
        table.add_column("", no_wrap=True, style="dim")
        for i in range(start, end):
            table.add_column(
                fold(workloads[i], widths[i]), justify="right", no_wrap=True, min_width=widths[i]
            )
        for name, against, cells in rows:
            table.add_row(name, against, *cells[start:end])
        tables.append(table)
        start = end
    return tables


LIMITS = {
    "inconsistent-bound": "bounds that contradict its speed",
    "device-bound": "the device",
    "kernel-cipher-bound": "the kernel's cipher",
    "userspace-cipher-bound": "its userspace cipher",
    "daemon-bound": "its FUSE daemon",
    "cpu-saturated": "the CPU, saturated",
    "layer-bound": "the layer itself",
    "unknown": "not identified (no diagnosis rule fits)",
}


def limit_lines(doc: Document) -> list[str]:
    """One line per diagnosed target: the limit found at most of its workloads."""
    lines = []
    for d in doc.diagnosis:
        findings = d.findings
        if not findings:
            continue
        counts = Counter(f.rule for f in findings)
        # the diagnosis orders its groups (known rules before unknown, then by count)
        rule = min(counts, key=lambda r: (r == Rule.UNKNOWN, -counts[r]))
        effs = sorted(f.efficiency for f in findings if f.efficiency is not None)
        median = f" (median {effs[len(effs) // 2]:.0%} of its bound)" if effs else ""
        hint = ""
        if rule == Rule.UNKNOWN and any("cryptbench cipher" in f.sentence for f in findings):
            hint = "; `cryptbench cipher` measures its cipher"
        lines.append(
            f"{d.target}: {LIMITS.get(rule, rule)} at {counts[rule]} of {len(findings)}{median}{hint}"
        )
    return lines


def warnings_lines(doc: Document) -> list[Text]:
    counts = Counter(w.kind for w in doc.warnings)
    line = Text()
    if not counts:
        line.append("No warnings")
    else:
        kinds = sorted(counts, key=lambda k: (not k.serious, -counts[k]))
        line.append("Warnings: ")
        for i, k in enumerate(kinds):
            line.append(", " if i else "")
            line.append(f"{counts[k]} {k}", style="red" if k.serious else "yellow")
    line.append(".")
    return [
        line,
        Text(f"Precision: {precision_line(doc)}."),
        Text(f"Every figure, warning and the diagnosis: cryptbench show {doc.run_id} --details"),
    ]


def answer_only(doc: Document, console: Console) -> None:
    """-q: which way costs least, and the cheapest that protects each property, in words;
    no header, table or legend."""
    encrypted = scratch_encrypted(doc)
    for line in the_answer(doc):
        console.print(Text(line, style="bold yellow") if line == encrypted else line)
    for line in [] if doc.plan.existing else protection_rows.cheapest_lines(doc):
        console.print(line)


def render(doc: Document, console: Console) -> None:
    console.print(Text(header(doc), style="bold"))
    stack = stack_line(doc)
    if stack:
        console.print(Text(stack, style="dim"))
    answer_only(doc, console)
    commands = command_lines(doc)
    if commands:
        console.print()
        for line in commands:
            console.print(Text(line))
        console.print(
            "[dim]Time of each command with its median's 95% interval; on each target the change in "
            "speed (negative: slower) with its 95% interval, and the change in time beside it.[/dim]"
        )
    console.print()
    for table in _tables(doc, console.width):
        console.print(table)
    console.print(Text(LEGEND, style="dim"))
    if any(c.kind == ComparisonKind.VARIANT for c in doc.comparisons):
        console.print(
            "[dim]A row with no target name holds the target above it against the one it differs "
            "from in one option: what that option changes.[/dim]"
        )
    hides = protection_rows.hides_line(doc)
    if hides:
        console.print()
        console.print(hides)
    limits = limit_lines(doc)
    if limits:
        console.print()
        console.print("[bold]What limits each[/bold] (at how many workloads; the diagnosis in the details):")
        for line in limits:
            console.print(line)
    summary = doc.study_summary
    if summary is not None and summary.page_cache:
        console.print()
        for p in summary.page_cache:
            console.print(f"• {study_summary.page_cache_line(p)}")
    fleet = doc.fleet
    if fleet:
        console.print()
        console.print(f"Fleet: {len(fleet.hosts)} hosts; each overhead's spread over them is in the details.")
        for h in fleet.hosts:
            if h.status != HostStatus.OK:
                console.print(Text(f"{h.name} {h.status}: {h.reason or 'no reason recorded'}", style="red"))
    advice = tuning.advise(doc)
    if advice is not None:
        console.print()
        for line in tuning.lines(advice):
            console.print(Text(line))
    console.print()
    for text in warnings_lines(doc):
        console.print(text)
    if doc.trials.failed:
        console.print(f"[red]{doc.trials.failed} trial(s) failed[/red]; the details say where and why.")
