"""Where the cost goes, on the terminal: efficiency, the queue-depth curve, the diagnosis."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

LOW = 0.5  # efficiency below this is shown in red, as a layer that wastes half its bound


def _mb(x: float | None) -> str:
    return "?" if x is None else f"{x / 1e6:,.1f}"


def _cpu(e: dict[str, Any]) -> str:
    own, plain = e["cpu_seconds_per_gb"], e["plain_cpu_seconds_per_gb"]
    if own is None:
        return "-"
    return f"{own:.1f}" if plain is None else f"{own:.1f} ({plain:.1f})"


def _figure(e: dict[str, Any], which: str) -> Text:
    """plain's or the cipher's figure, bold where it is the bound."""
    value = e["plain"] if which == "plain" else e["ceiling"]
    return Text(_mb(value), style="bold" if e["limit"] == which else "")


def efficiency_table(doc: dict[str, Any]) -> Table | None:
    rows = doc.get("efficiency", [])
    if not rows:
        return None
    table = Table(
        title="Efficiency: achieved over the lower (bold) of plain on the same medium and the cipher",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("target", style="bold")
    table.add_column("workload")
    for header in ("MB/s", "plain", "cipher", "eff.", "CPU s/GB\n(plain)"):
        table.add_column(header, justify="right")
    by_target: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in rows:
        by_target[e["target"]].append(e)
    for target, es in by_target.items():
        for i, e in enumerate(es):
            eff = e["efficiency"]
            cell = Text("?" if eff is None else f"{eff:.0%}")
            if eff is not None and eff < LOW:
                cell.stylize("red")
            table.add_row(
                target if i == 0 else "",
                e["workload"],
                _mb(e["achieved"]),
                _figure(e, "plain"),
                _figure(e, "cipher"),
                cell,
                _cpu(e),
                end_section=i == len(es) - 1,
            )
    return table


def sources(doc: dict[str, Any]) -> list[str]:
    """Where the cipher ceilings came from: each source once, with the targets that use it."""
    users: dict[str, list[str]] = defaultdict(list)
    for e in doc.get("efficiency", []):
        if e["target"] not in users[e["ceiling_source"]]:
            users[e["ceiling_source"]].append(e["target"])
    return [f"{', '.join(ts)}: {source}" for source, ts in users.items()]


def qd_table(doc: dict[str, Any]) -> Table | None:
    curves = doc.get("qd_curves", [])
    if not curves:
        return None
    depths = sorted({p["iodepth"] for c in curves for p in c["points"]})
    table = Table(
        title="Cost against the baseline by queue depth (percent slower, 95% interval)", title_justify="left"
    )
    table.add_column("pattern")
    table.add_column("target")
    for d in depths:
        table.add_column(f"QD{d}", justify="right")
    for c in curves:
        at = {p["iodepth"]: p for p in c["points"]}
        cells = []
        for d in depths:
            p = at.get(d)
            if p is None:
                cells.append("-")
            elif p["overhead_low"] is None:
                cells.append(f"{p['overhead_percent']:.0f}%")
            else:
                lo, hi = p["overhead_low"], p["overhead_high"]
                cells.append(f"{p['overhead_percent']:.0f}% [{lo:.0f}, {hi:.0f}]")
        table.add_row(f"{c['rw']} {c['bs'] // 1024} KiB", f"{c['target']} vs {c['baseline']}", *cells)
    return table


def render(doc: dict[str, Any], console: Console) -> None:
    table = efficiency_table(doc)
    if table is not None:
        console.print()
        console.print(table)
        console.print(
            "[dim]MB/s are 10^6 bytes/s, medians; bound: the lower of plain's speed on the same medium "
            "and the cipher's ceiling for the cores the layer's cipher can use; CPU s/GB: CPU-seconds per "
            "GB moved, system-wide.[/dim]"
        )
        for line in sources(doc):
            console.print(f"[dim]cipher of {line}[/dim]")
    qd = qd_table(doc)
    if qd is not None:
        console.print()
        console.print(qd)
    if doc.get("diagnosis"):
        console.print()
        console.print("[bold]Diagnosis[/bold]")
        for d in doc["diagnosis"]:
            for sentence in d["sentences"]:
                console.print(f"• {sentence}")
