"""The rows of `cryptbench compare` formatted as cells, once for the terminal
(compare_console.py) and the page (export_compare_html.py): neither renderer imports
the other, and the terminal's never loads Matplotlib."""

from __future__ import annotations

from dataclasses import dataclass

from cryptbench.analysis.run_comparison import Comparison
from cryptbench.analysis.speed_change import change_words
from cryptbench.model.units import format_value


def _median(n: int, median: float, low: float | None, high: float | None, unit: str) -> str:
    interval = (
        "" if low is None or high is None else f" [{format_value(low, unit)}, {format_value(high, unit)}]"
    )
    return f"{format_value(median, unit)}{interval} ({n})"


@dataclass(frozen=True)
class RowCells:
    """One row of the comparison table, formatted as the terminal prints it."""

    workload: str
    target: str
    metric: str
    a: str  # A's median [interval] (trials)
    b: str  # B's, the same way
    words: str  # B against A as a change in speed: "-50% [-60, -38]"
    evidence: str  # why the change is or is not significant
    significant: bool | None  # None: too few trials to tell
    mark: str  # "yes", "no" or "?"


@dataclass(frozen=True)
class CostCells:
    """One encrypted target's change in speed against its baseline in each run, formatted."""

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
            words=r.change(),
            evidence=r.evidence(),
            significant=r.significant,
            mark={True: "yes", False: "no", None: "?"}[r.significant],
        )
        for r in comp.rows
    ]


def cost_cells(comp: Comparison) -> list[CostCells]:
    return [
        CostCells(
            workload=o.workload,
            target=o.target,
            baseline=o.baseline,
            a=change_words(o.a, o.a_interval),
            b=change_words(o.b, o.b_interval),
            changed=o.changed,
        )
        for o in comp.costs
    ]
