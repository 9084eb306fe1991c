"""The rows of `cryptbench compare` formatted as cells, once for the terminal
(compare_console.py) and the page (export_compare_html.py): neither renderer imports
the other, and the terminal's never loads Matplotlib."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.analysis.run_comparison import Comparison, Row
from cryptbench.analysis.speed_change import change_words
from cryptbench.units import format_value


def _median(n: int, median: float, low: float | None, high: float | None, unit: str) -> str:
    interval = (
        "" if low is None or high is None else f" [{format_value(low, unit)}, {format_value(high, unit)}]"
    )
    return f"{format_value(median, unit)}{interval} ({n})"


def _ratio(r: Row) -> str:
    return f"{r.ratio:.3f}" + ("" if r.ratio_low is None else f" [{r.ratio_low:.3f}, {r.ratio_high:.3f}]")


def _overhead(value: float, interval: tuple[float, float] | None) -> str:
    """An overhead (percent slower) written as every figure is: a change in speed, '-31% [-52, -2]*'."""
    return change_words(-value, None if interval is None else (-interval[1], -interval[0]))


@dataclass(frozen=True)
class RowCells:
    """One row of the comparison table, formatted as the terminal prints it."""

    workload: str
    target: str
    metric: str
    a: str  # A's median [interval] (trials)
    b: str  # B's, the same way
    ratio: str  # B/A [interval]
    words: str  # B against A as a change in speed: "-50% [-60, -38]"
    evidence: str  # why the change is or is not significant
    significant: bool | None  # None: too few trials to tell
    mark: str  # "yes", "no" or "?"


@dataclass(frozen=True)
class OverheadCells:
    """One encrypted target's overhead against its baseline in each run, formatted."""

    workload: str
    target: str
    baseline: str
    a: str  # change in speed, percent [interval], in run A
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
            words=r.change(),
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
