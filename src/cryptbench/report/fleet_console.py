"""The fleet part of a fleet run's terminal report: the hosts, and each overhead across them."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _pct(v: float | None) -> str:
    # Overheads as `check` words them: the share of the baseline's speed lost.
    return "-" if v is None else f"{v:.0f} %"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.0f}, {high:.0f}]"


def render(doc: dict[str, Any], out: Console) -> None:
    fleet = doc.get("fleet")
    if not fleet:
        return
    out.print()
    hosts = Table(title="Fleet: hosts", title_justify="left")
    for col in ("host", "address", "status", "machine", "kernel", "xts(aes)", "targets"):
        hosts.add_column(col)
    for h in fleet["hosts"]:
        status = "[green]ok[/green]" if h["status"] == "ok" else f"[red]{h['status']}[/red]: {h['reason']}"
        hosts.add_row(
            h["name"],
            h["address"],
            status,
            f"{h['hostname'] or '?'} ({h['cpu_model'] or '?'})",
            h["kernel"] or "?",
            h["xts_aes"] or "?",
            ", ".join(h["targets"]),
        )
    out.print(hosts)
    rows = fleet["overheads"]
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
        outliers = ", ".join(
            f"{s['host']} {_pct(s['overhead'])} ({s['direction']} than the others' {_pct(s['others'])})"
            for s in r["stand_out"]
        )
        table.add_row(
            r["workload"],
            f"{r['target']} vs {r['baseline']}",
            str(r["hosts"]),
            _pct(r["median"]),
            _pct(r["p10"]),
            _pct(r["p90"]),
            f"{r['worst_host']} {_pct(r['worst'])}{_interval(r['worst_low'], r['worst_high'])}",
            outliers or "-",
        )
    out.print(table)
    out.print(
        "[dim]Each host's overhead is its target against its own baseline; a host stands out when its "
        "whole 95 % interval lies beyond the median of the other hosts' overheads (3 hosts or more).[/dim]"
    )
