"""`cryptbench history` in the terminal: the runs, then each series as a sparkline
with one column per run shown (oldest left), so targets' lines line up."""

from __future__ import annotations

import textwrap

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cryptbench.analysis.history_model import History, Series
from cryptbench.model.units import format_value
from cryptbench.report.narrow import table_width
from cryptbench.store.rows import HistoryRow

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


def _trials_each(r: HistoryRow) -> str:
    """'3 to 4': the good trials each workload and target got, as run (never the plan's most)."""
    if r.fewest_trials is None or r.most_trials is None:
        return "-"
    if r.fewest_trials == r.most_trials:
        return str(r.most_trials)
    return f"{r.fewest_trials} to {r.most_trials}"


def _run_cells(r: HistoryRow) -> dict[str, str]:
    return {
        "run": str(r.id),
        "started (UTC)": r.started_at[:16].replace("T", " "),
        "host": r.host or "-",
        "suite": r.suite,
        "size": f"{(r.size or 0) >> 20} MiB",
        "trials each": _trials_each(r),
        "trials ok/failed": f"{r.ok_trials}/{r.failed_trials}",
        "status": r.status,
        "targets": ", ".join(r.targets),
    }


NARROW = ("run", "started (UTC)", "host", "suite", "trials ok/failed", "status")  # the rest listed below


def runs_table(history: History, out: Console) -> None:
    """The runs, a row each; where every column would not fit, size, trials each and targets are
    listed under the table, one wrapped line per run."""
    cells = [_run_cells(r) for r in history.runs]
    every = list(cells[0]) if cells else list(NARROW)
    wide = table_width([[c[k] for c in cells] + [k] for k in every]) <= out.width
    columns = every if wide else list(NARROW)
    table = Table(box=box.SIMPLE_HEAD)
    for col in columns:
        table.add_column(
            col, no_wrap=col != "targets", justify="right" if col in ("run", "trials ok/failed") else "left"
        )
    for c in cells:
        table.add_row(*(c[k] for k in columns))
    out.print(table)
    if not wide:
        width = max(40, out.width)
        for c in cells:
            text = f"run {c['run']}: {c['size']}, {c['trials each']} trials each; {c['targets']}"
            out.print(escape(textwrap.fill(text, width=width, subsequent_indent="    ")), highlight=False)


def render(history: History, out: Console) -> None:
    runs_table(history, out)
    if not history.series:
        if history.metric is None:
            out.print(
                "[dim]a metric over time, per target: cryptbench history --workload W [--metric M][/dim]",
                highlight=False,
            )
        return
    columns = history.run_ids()
    rows = []
    for s in history.series:
        values = [p.median for p in s.points]
        rows.append(
            [
                f"  {s.target}",
                line(s, columns),
                format_value(values[0], s.unit),
                format_value(values[-1], s.unit),
                format_value(min(values), s.unit),
                format_value(max(values), s.unit),
            ]
        )
    heads = ["workload / target", "over time", "first", "last", "lowest", "highest"]
    names = [s.workload for s in history.series]
    full = [[*col, head] for col, head in zip(zip(*rows, strict=True), heads, strict=True)]
    full[0] += names
    keep = 6 if table_width(full) <= out.width else 4  # lowest and highest go first
    st = Table(
        title=f"{history.metric}: median per run, oldest left (runs {columns[0]} … {columns[-1]})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for i, col in enumerate(heads[:keep]):
        st.add_column(col, no_wrap=True, justify="right" if i >= 2 else "left")
    notes: list[str] = []
    workload = None
    for s, row in zip(history.series, rows, strict=True):
        if s.workload != workload:
            workload = s.workload
            st.add_row(Text(workload, style="bold"))
        cells = row[:keep]
        if s.caveats():
            notes.append(f"{s.workload}, {s.target}: {'; '.join(s.caveats())}")
            cells[0] += f" [{len(notes)}]"
        st.add_row(*cells)
    out.print(st)
    for i, note in enumerate(notes, 1):
        out.print(f"  [{i}] {escape(note)}", highlight=False)
    lowest = "" if keep == 6 else " Lowest and highest: a wider terminal, or --json."
    out.print(
        f"[dim]Each mark is one run's median ({GAP}: no figure in that run); each line is scaled to "
        f"its own lowest and highest. Whether a step is more than noise: cryptbench compare A B."
        f"{lowest}[/dim]",
        highlight=False,
    )
