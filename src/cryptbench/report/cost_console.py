"""Where the cost goes, on the terminal: efficiency, the queue-depth curve, the diagnosis."""

from __future__ import annotations

from collections import defaultdict

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cryptbench.analysis.speed_change import change_cell, change_words
from cryptbench.model.result import Document, EfficiencyRow, QdPoint
from cryptbench.model.units import format_mb_per_s
from cryptbench.report.narrow import table_width
from cryptbench.report.sentences import sources

LOW = 0.5  # efficiency below this is shown in red, as a layer that wastes half its bound


def _cpu(e: EfficiencyRow) -> str:
    own, plain = e.cpu_seconds_per_gb, e.plain_cpu_seconds_per_gb
    if own is None:
        return "-"
    return f"{own:.1f}" if plain is None else f"{own:.1f} ({plain:.1f})"


def _figure(e: EfficiencyRow, which: str) -> Text:
    """plain's or the cipher's figure, bold where it is the bound."""
    value = e.plain if which == "plain" else e.ceiling
    return Text(format_mb_per_s(value, "?"), style="bold" if e.limit == which else "")


def efficiency_table(doc: Document) -> Table | None:
    """A row per workload under a row naming the target: a target's name can be as long as
    image-qcow2-aes256@rewrite and would otherwise squeeze the figures at 80 columns."""
    rows = doc.efficiency
    if not rows:
        return None
    table = Table(
        title="Efficiency: achieved over the lower (bold) of plain on the same medium and the cipher",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("target / workload", no_wrap=True)
    for header in ("MB/s", "plain", "cipher", "eff.", "CPU s/GB\n(plain)"):
        table.add_column(header, justify="right", no_wrap=True)
    by_target: dict[str, list[EfficiencyRow]] = defaultdict(list)
    for e in rows:
        by_target[e.target].append(e)
    for target, es in by_target.items():
        table.add_row(Text(target, style="bold"))
        for i, e in enumerate(es):
            eff = e.efficiency
            cell = Text("?" if eff is None else f"{eff:.0%}")
            if eff is not None and eff < LOW:
                cell.stylize("red")
            table.add_row(
                f"  {e.workload}",
                format_mb_per_s(e.achieved, "?"),
                _figure(e, "plain"),
                _figure(e, "cipher"),
                cell,
                _cpu(e),
                end_section=i == len(es) - 1,
            )
    return table


def qd_cell(p: QdPoint | None, compact: bool) -> str:
    """A depth's change in speed in percent (the tool's one convention), with its
    interval: ± only where symmetric."""
    if p is None:
        return "-"
    lo, hi = p.change_low, p.change_high
    interval = None if lo is None or hi is None else (lo, hi)
    return change_cell(p.change_percent, interval) if compact else change_words(p.change_percent, interval)


def qd_table(doc: Document, width: int = 200) -> Table | None:
    """A row per target under a row naming the pattern. Each cell holds the interval where the
    table fits `width` that way ('-65% [-78, -52]'), else the compact cell ('-65±13*')."""
    curves = doc.qd_curves
    if not curves:
        return None
    depths = sorted({p.iodepth for c in curves for p in c.points})
    names = [f"{c.target} vs {c.baseline}" for c in curves]
    full = [[qd_cell({p.iodepth: p for p in c.points}.get(d), False) for d in depths] for c in curves]
    needed = table_width([names, *zip(*full, strict=True)])
    compact = needed > width
    what = "interval, compact" if compact else "interval"
    table = Table(
        title=f"Change in speed against the baseline by queue depth (%, with its 95% {what})"
        if compact
        else "Change in speed against the baseline by queue depth (%, with the 95% interval)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    # compact and still too wide: a name wraps at its spaces, and a cell between its figure and
    # its interval, each piece whole
    table.add_column("pattern / target", no_wrap=not compact)
    for d in depths:
        table.add_column(f"QD{d}", justify="right", no_wrap=not compact)
    pattern = None
    for c, name in zip(curves, names, strict=True):
        here = f"{c.rw} {c.bs // 1024} KiB"
        if here != pattern:
            table.add_row(Text(here, style="bold"))
            pattern = here
        at = {p.iodepth: p for p in c.points}
        table.add_row(f"  {name}", *(qd_cell(at.get(d), compact) for d in depths))
    return table


def render(doc: Document, console: Console) -> None:
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
    qd = qd_table(doc, console.width)
    if qd is not None:
        console.print()
        console.print(qd)
    if doc.diagnosis:
        console.print()
        console.print("[bold]Diagnosis[/bold]")
        for d in doc.diagnosis:
            for sentence in d.sentences:
                console.print(f"• {sentence}")
