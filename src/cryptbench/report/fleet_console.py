"""The fleet part of a fleet run's terminal report: the hosts, and each overhead across them."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cryptbench.report.fleet_rows import SPREAD_NOTE, host_rows, overhead_rows


def render(doc: dict[str, Any], out: Console) -> None:
    fleet = doc.get("fleet")
    if not fleet:
        return
    out.print()
    hosts = Table(title="Fleet: hosts", title_justify="left")
    for col in ("host", "address", "status", "machine", "kernel", "xts(aes)", "targets"):
        hosts.add_column(col)
    for h in host_rows(fleet):
        status = "[green]ok[/green]" if h["ok"] else f"[red]{escape(h['status'])}[/red]"
        hosts.add_row(
            h["host"], h["address"], status, escape(h["machine"]), h["kernel"], h["xts_aes"], h["targets"]
        )
    out.print(hosts)
    rows = overhead_rows(fleet)
    if not rows:
        out.print("No encrypted target has a comparison on any host.")
        return
    table = Table(
        title="Fleet: overhead against each host's own baseline (share of its speed lost)",
        title_justify="left",
    )
    for col in ("workload", "target", "hosts", "median", "p10", "p90", "worst host", "stands out"):
        table.add_column(col, justify="right" if col in ("hosts", "median", "p10", "p90") else "left")
    for r in rows:
        table.add_row(
            *(escape(r[k]) for k in ("workload", "target", "hosts", "median", "p10", "p90")),
            escape(r["worst"]),
            escape(r["stand_out"]),
        )
    out.print(table)
    out.print(f"[dim]{SPREAD_NOTE}[/dim]")
