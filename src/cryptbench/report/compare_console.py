"""`cryptbench compare` in the terminal: what differs between the runs, every change
with its interval and how its significance was decided, and each encrypted target's
change against its baseline in both runs side by side."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench.analysis.run_comparison import METHOD, Comparison
from cryptbench.model.units import format_value
from cryptbench.report.compare_cells import cost_cells, row_cells
from cryptbench.report.narrow import table_width


def render(comp: Comparison, out: Console) -> None:
    for label, r in (("A", comp.a), ("B", comp.b)):
        out.print(
            f"[bold]{label}[/bold]: run {r.run_id} of {r.db} "
            f"({r.suite}, {r.host}, {r.started_at[:19]}, {r.status})",
            highlight=False,
        )
    for d in comp.differences:
        if d.blocking:
            out.print(
                f"[red]compared with --force[/red]: {d.words()} (the figures measure different things)",
                highlight=False,
            )
        else:
            out.print(f"[dim]differs[/dim]: {d.words()}", highlight=False)
    for label, only in (("only in A", comp.only_in_a), ("only in B", comp.only_in_b)):
        if only:
            out.print(f"[dim]{label}[/dim]: {', '.join(only)}", highlight=False)
    out.print(_rows_table(comp, out.width))
    out.print(f"[dim]{METHOD}[/dim]", highlight=False)
    costs = cost_cells(comp)
    if costs:
        ot = Table(
            title="Each encrypted target's change in speed against its baseline, in each run",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for col in ("workload / target", "A", "B", "changed?"):
            ot.add_column(col, no_wrap=True, justify="left" if col[0] in "wc" else "right")
        pairs = [f"  {o.target} vs {o.baseline}" for o in costs]
        columns = [pairs, [o.a for o in costs], [o.b for o in costs], ["no clear change"]]
        two_lines = table_width(columns) > out.width  # the baseline under the target
        workload = None
        for o, pair in zip(costs, pairs, strict=True):
            if o.workload != workload:
                workload = o.workload
                ot.add_row(Text(workload, style="bold"))
            ot.add_row(
                f"  {o.target}\n    vs {o.baseline}" if two_lines else pair,
                o.a,
                o.b,
                "[bold]yes[/bold] (disjoint)" if o.changed else "no clear change",
            )
        out.print(ot)
    out.print(comp.summary(), highlight=False)


def _rows_table(comp: Comparison, width: int) -> Table:
    """A row per target under a row per workload: with each side's median and trials, B's change
    in speed against A with its interval, and whether it is significant; where that is wider
    than the terminal, the medians share a column."""
    cells = row_cells(comp)
    wide = [
        [
            f"  {r.target}",
            f"{format_value(r.a_median, r.unit)} ({r.a_n})",
            f"{format_value(r.b_median, r.unit)} ({r.b_n})",
            c.words,
            f"{c.mark}: {c.evidence}",
        ]
        for r, c in zip(comp.rows, cells, strict=True)
    ]
    heads_wide = ("workload / target", "A (n)", "B (n)", "B against A", "significant?")
    sections = [f"{r.workload}" for r in comp.rows]
    columns = [[*col, head] for col, head in zip(zip(*wide, strict=True), heads_wide, strict=True)]
    columns[0] += sections
    compact = table_width(columns) > width
    table = Table(
        title="B's speed against A's, per workload and target", title_justify="left", box=box.SIMPLE_HEAD
    )
    heads = ("workload / target", "A → B (trials)", "B is / significant?") if compact else heads_wide
    for col in heads:
        table.add_column(col, no_wrap=True, justify="right" if col in ("A (n)", "B (n)") else "left")
    workload = None
    for r, c, row in zip(comp.rows, cells, wide, strict=True):
        if r.workload != workload:
            workload = r.workload
            table.add_row(Text(workload, style="bold"))
        style = "bold" if r.significant else ""
        if compact:
            a = f"{format_value(r.a_median, r.unit)} ({r.a_n}) →"
            b = f"{format_value(r.b_median, r.unit)} ({r.b_n})"
            table.add_row(row[0], f"{a}\n{b}", Text(f"{c.words}\n{c.mark}: {c.evidence}", style=style))
        else:
            table.add_row(*row[:3], Text(row[3], style=style), Text(row[4], style=style))
    return table
