"""`cryptbench compare` in the terminal: what differs between the runs, every change
with its interval and how its significance was decided, the overheads side by side."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cryptbench.report.export_compare_html import overhead_cells, row_cells
from cryptbench.report.run_comparison import METHOD, Comparison
from cryptbench.units import format_value


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
    table = Table(title="B's speed against A's, per workload and target")
    for col in ("workload", "target", "A (n)", "B (n)", "B/A [95 % CI]", "B is", "significant?"):
        table.add_column(col, overflow="fold")
    for r, cells in zip(comp.rows, row_cells(comp), strict=True):
        words = f"[bold]{cells['words']}[/bold]" if r.significant else cells["words"]
        mark = f"[bold]{cells['mark']}[/bold]" if r.significant else cells["mark"]
        table.add_row(
            r.workload,
            r.target,
            f"{format_value(r.a_median, r.unit)} ({r.a_n})",
            f"{format_value(r.b_median, r.unit)} ({r.b_n})",
            cells["ratio"],
            words,
            f"{mark}: {cells['evidence']}",
        )
    out.print(table)
    out.print(f"[dim]{METHOD}[/dim]", highlight=False)
    overheads = overhead_cells(comp)
    if overheads:
        ot = Table(title="Each encrypted target's overhead against its baseline, in each run")
        for col in ("workload", "target", "against", "A", "B", "changed?"):
            ot.add_column(col, overflow="fold")
        for o in overheads:
            ot.add_row(
                o["workload"],
                o["target"],
                o["baseline"],
                o["a"],
                o["b"],
                "[bold]yes[/bold]: intervals disjoint" if o["changed"] else "no clear change",
            )
        out.print(ot)
    out.print(comp.summary(), highlight=False)
