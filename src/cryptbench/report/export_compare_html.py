"""`cryptbench compare A B --html FILE`: the comparison as one self-contained page,
in the same style as the run report (the templates share `base.html.j2`)."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench import __version__
from cryptbench.report.charts import Chart
from cryptbench.report.export_html import ENV, environment_rows
from cryptbench.report.run_comparison import METHOD, Comparison, Row
from cryptbench.result_model import Document
from cryptbench.units import format_value


def _median(n: int, median: float, low: float | None, high: float | None, unit: str) -> str:
    interval = (
        "" if low is None or high is None else f" [{format_value(low, unit)}, {format_value(high, unit)}]"
    )
    return f"{format_value(median, unit)}{interval} ({n})"


def _ratio(r: Row) -> str:
    return f"{r.ratio:.3f}" + ("" if r.ratio_low is None else f" [{r.ratio_low:.3f}, {r.ratio_high:.3f}]")


def _overhead(value: float, interval: tuple[float, float] | None) -> str:
    return f"{value:.0f} %" + ("" if interval is None else f" [{interval[0]:.0f}, {interval[1]:.0f}]")


@dataclass(frozen=True)
class RowCells:
    """One row of the comparison table, formatted as the terminal prints it."""

    workload: str
    target: str
    metric: str
    a: str  # A's median [interval] (trials)
    b: str  # B's, the same way
    ratio: str  # B/A [interval]
    words: str  # B against A in words: "2.00 ± 1.14 times slower"
    evidence: str  # why the change is or is not significant
    significant: bool | None  # None: too few trials to tell
    mark: str  # "yes", "no" or "?"


@dataclass(frozen=True)
class OverheadCells:
    """One encrypted target's overhead against its baseline in each run, formatted."""

    workload: str
    target: str
    baseline: str
    a: str  # percent [interval] in run A
    b: str  # in run B
    changed: bool  # the two intervals are disjoint


def row_cells(comp: Comparison) -> list[RowCells]:
    return [
        RowCells(
            workload=r.workload,
            target=r.target,
            metric=r.metric,
            a=_median(r.a_n, r.a_median, r.a_low, r.a_high, r.unit),
            b=_median(r.b_n, r.b_median, r.b_low, r.b_high, r.unit),
            ratio=_ratio(r),
            words=r.times(),
            evidence=r.evidence(),
            significant=r.significant,
            mark={True: "yes", False: "no", None: "?"}[r.significant],
        )
        for r in comp.rows
    ]


def overhead_cells(comp: Comparison) -> list[OverheadCells]:
    return [
        OverheadCells(
            workload=o.workload,
            target=o.target,
            baseline=o.baseline,
            a=_overhead(o.a, o.a_interval),
            b=_overhead(o.b, o.b_interval),
            changed=o.changed,
        )
        for o in comp.overheads
    ]


def run_rows(a: Document, b: Document) -> list[tuple[str, str, str, bool]]:
    """Each environment line of the two runs side by side, and whether they differ."""
    ra, rb = dict(environment_rows(a)), dict(environment_rows(b))
    labels = list(dict.fromkeys([*ra, *rb]))
    return [
        (k, ra.get(k, "-"), rb.get(k, "-"), ra.get(k) != rb.get(k))
        for k in labels
        if k != "seed"  # differs between any two runs, by design
    ]


def render(comp: Comparison, a: Document, b: Document, chart: Chart) -> str:
    return ENV.get_template("compare.html.j2").render(
        tool_version=__version__,
        cmp=comp,
        a=a,
        b=b,
        runs=run_rows(a, b),
        chart={"name": chart.name, "title": chart.title, "caption": chart.caption, "svg": chart.svg()},
        rows=row_cells(comp),
        overheads=overhead_cells(comp),
        method=METHOD,
    )
