"""`cryptbench history` in the terminal: the runs, then each series as a sparkline
with one column per run shown (oldest left), so targets' lines line up."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from cryptbench.commands.history import History, Series
from cryptbench.units import format_value

BARS = "▁▂▃▄▅▆▇█"
GAP = "·"  # a run shown above that has no figure for this workload and target


def sparkline(values: list[float | None]) -> str:
    """One character per value, scaled from the lowest (▁) to the highest (█); a flat line
    sits in the middle; a missing value is a dot."""
    known = [v for v in values if v is not None]
    if not known:
        return GAP * len(values)
    low, high = min(known), max(known)
    out = []
    for v in values:
        if v is None:
            out.append(GAP)
        elif high == low:
            out.append(BARS[len(BARS) // 2 - 1])
        else:
            out.append(BARS[round((v - low) / (high - low) * (len(BARS) - 1))])
    return "".join(out)


def line(series: Series, columns: list[int]) -> str:
    medians = {p.run_id: p.median for p in series.points}
    return sparkline([medians.get(run_id) for run_id in columns])


def render(history: History, out: Console) -> None:
    table = Table()
    for col in (
        "run",
        "started (UTC)",
        "host",
        "status",
        "suite",
        "size",
        "repeats",
        "targets",
        "trials ok/failed",
    ):
        table.add_column(col)
    for r in history.runs:
        table.add_row(
            str(r["id"]),
            r["started_at"][:19].replace("T", " "),
            r["host"] or "-",
            r["status"],
            r["suite"],
            f"{(r['size'] or 0) >> 20} MiB",
            "adaptive" if r["repeats"] is None else str(r["repeats"]),
            ", ".join(r["targets"]),
            f"{r['ok_trials']}/{r['failed_trials']}",
        )
    out.print(table)
    if not history.series:
        if history.metric is None:
            out.print(
                "[dim]a metric over time, per target: cryptbench history --workload W [--metric M][/dim]",
                highlight=False,
            )
        return
    columns = history.run_ids()
    st = Table(title=f"{history.metric}: median per run, oldest left (runs {columns[0]} … {columns[-1]})")
    for col in ("workload", "target", "over time", "first", "last", "lowest", "highest", "note"):
        st.add_column(col, no_wrap=col == "over time")
    for s in history.series:
        values = [p.median for p in s.points]
        st.add_row(
            s.workload,
            s.target,
            line(s, columns),
            format_value(values[0], s.unit),
            format_value(values[-1], s.unit),
            format_value(min(values), s.unit),
            format_value(max(values), s.unit),
            "; ".join(s.caveats()),
        )
    out.print(st)
    out.print(
        f"[dim]Each mark is one run's median ({GAP}: no figure in that run); each line is scaled to "
        "its own lowest and highest. Whether a step is more than noise: cryptbench compare A B.[/dim]",
        highlight=False,
    )
