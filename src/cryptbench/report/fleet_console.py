"""The fleet part of a fleet run's terminal report: the hosts, and each cost across them."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cryptbench.model.result import Document
from cryptbench.report.fleet_rows import SPREAD_NOTE, cost_rows, host_rows


def render(doc: Document, out: Console) -> None:
    fleet = doc.fleet
    if not fleet:
        return
    out.print()
    out.print("[bold]Fleet: hosts[/bold]")
    for h in host_rows(fleet):
        status = "[green]ok[/green]" if h["ok"] else f"[red]{escape(h['status'])}[/red]"
        out.print(
            f"  [bold]{escape(h['host'])}[/bold] ({escape(h['address'])}): {status}; {escape(h['machine'])}, "
            f"kernel {escape(h['kernel'])}, xts(aes) {escape(h['xts_aes'])}; targets {escape(h['targets'])}",
            highlight=False,
        )
    rows = cost_rows(fleet)
    if not rows:
        out.print("No encrypted target has a comparison on any host.")
        return
    # a row per target under a row per workload, and what stands out listed under the table,
    # so the figures keep their width at 80 columns
    table = Table(
        title="Fleet: change in speed against each host's own baseline, % (negative: slower)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("workload / target", no_wrap=True)
    for col in ("hosts", "median", "p10", "p90", "worst host"):
        table.add_column(col, justify="left" if col == "worst host" else "right", no_wrap=True)
    workload, notes = None, []
    for r in rows:
        if r["workload"] != workload:
            workload = r["workload"]
            table.add_row(Text(workload, style="bold"))
        mark = ""
        if r["stand_out"] != "-":
            notes.append(f"{r['workload']}, {r['target']}: {r['stand_out']}")
            mark = f" [{len(notes)}]"
        table.add_row(
            f"  {escape(r['target'])}",
            *(escape(r[k]) for k in ("hosts", "median", "p10", "p90")),
            escape(r["worst"]) + mark,
        )
    out.print(table)
    out.print("[bold]stands out[/bold]: " + ("none" if not notes else ""))
    for i, note in enumerate(notes, 1):
        out.print(f"  [{i}] {escape(note)}", highlight=False)
    out.print(f"[dim]{SPREAD_NOTE}[/dim]")
