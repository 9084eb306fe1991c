"""The terminal report: one table, the targets, warnings and conclusions."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench.metrics import CATALOG, PRIMARY
from cryptbench.units import format_bytes, format_rate, format_seconds


def _fmt(value: float, unit: str) -> str:
    if unit == "bytes/s":
        return format_rate(value)
    if unit == "s":
        return format_seconds(value)
    if unit == "1/s":
        return f"{value:,.0f}/s"
    if unit == "fraction":
        return f"{value:.0%}"
    if unit == "s/GB":
        return f"{value:.2f} s/GB"
    return f"{value:.3g} {unit}"


def _interval(lo: float | None, hi: float | None, unit: str) -> str:
    if lo is None or hi is None:
        return "[no interval]"
    if unit == "bytes/s":
        return f"[{lo / 1e6:.0f}, {hi / 1e6:.0f}]" if hi < 1e9 else f"[{lo / 1e9:.2f}, {hi / 1e9:.2f}]"
    return f"[{_fmt(lo, unit)}, {_fmt(hi, unit)}]"


def _overhead(c: dict[str, Any]) -> Text:
    pct = c["overhead_percent"]
    if c["ci_low"] is None:
        body = f"{-pct:+.0f}% vs {c['baseline']}"
        return Text(body, style="yellow")
    lo, hi = (c["ci_low"] - 1) * 100, (c["ci_high"] - 1) * 100
    differs = c["ci_high"] < 1 or c["ci_low"] > 1
    style = ("red" if pct > 0 else "green") if differs else "dim"
    return Text(f"{-pct:+.0f}% [{lo:+.0f}, {hi:+.0f}] vs {c['baseline']}", style=style)


def render(doc: dict[str, Any], console: Console, metric: str = PRIMARY) -> None:
    info = CATALOG[metric]
    plan = doc["plan"]
    modes = sorted({t["io_mode"] for t in doc["targets"]})
    title = (
        f"cryptbench run {doc['run_id']} — {doc['suite']} suite, {format_bytes(plan['size'])} per target, "
        f"{plan['repeats']} repeats, {'/'.join(modes)} I/O, {plan['data']} data"
    )
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("workload", style="bold")
    targets = [t["name"] for t in doc["targets"]]
    for t in targets:
        table.add_column(t, justify="right")
    results = {(r["workload"], r["target"], r["metric"]): r for r in doc["results"]}
    comps: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in doc["comparisons"]:
        comps.setdefault((c["workload"], c["target"]), []).append(c)
    for w in doc["plan"]["workloads"]:
        if not any((w, t, metric) in results for t in targets):
            continue
        cells: list[Text | str] = [w]
        for t in targets:
            r = results.get((w, t, metric))
            if r is None:
                cells.append(Text("failed", style="red"))
                continue
            cell = Text(f"{_fmt(r['median'], info.unit)}\n{_interval(r['ci_low'], r['ci_high'], info.unit)}")
            if metric == PRIMARY:
                for c in comps.get((w, t), []):
                    cell.append("\n")
                    cell.append_text(_overhead(c))
            cells.append(cell)
        table.add_row(*cells)
    console.print(table)
    unit_note = "MB/s (10^6 bytes/s)" if info.unit == "bytes/s" else info.unit
    console.print(
        f"[dim]Median {info.label} in {unit_note} with its 95% bootstrap interval; "
        "+/-% is the change against the named baseline with its 95% interval "
        "(red/green: the interval excludes no change).[/dim]"
    )
    console.print()
    for t in doc["targets"]:
        proof = ""
        if t["encrypted"]:
            proof = ", encryption verified" if t["encryption_verified"] else ", ENCRYPTION NOT VERIFIED"
        reason = f" ({t['direct_io_reason']})" if t["io_mode"] == "buffered" and t["direct_io_reason"] else ""
        console.print(f"[bold]{t['name']}[/bold]: {t['io_mode']} I/O{reason}{proof}")
    if doc["warnings"]:
        console.print()
        for w in doc["warnings"]:
            where = "/".join(x for x in (w["target"], w["workload"]) if x)
            console.print(
                f"[yellow]warning[/yellow] {w['kind']}{' ' + where if where else ''}: {w['message']}"
            )
    if doc["conclusions"]:
        console.print()
        for line in doc["conclusions"]:
            console.print(f"• {line}")
    if doc["trials"]["failed"]:
        console.print(f"[red]{doc['trials']['failed']} trial(s) failed[/red]; see the warnings above.")
