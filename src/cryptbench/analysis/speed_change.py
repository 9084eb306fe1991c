"""A comparison read as a change in speed, whatever its metric's direction, and written
in the tool's one convention: the one reading and writing every renderer and rule shares
(below analysis/document.py, so that the rules the document is built with can use it
too; docs/methodology.md, "Reading the figures").

A change in speed in percent, negative when slower, whatever the metric's direction
(a time is read as its inverse). Its 95 % interval follows it: as `±h` only where the
interval is symmetric about the estimate once both halves are rounded to the printed
digits, else as `[lo, hi]`, so that no ± ever claims a reach the interval does not
have. A figure whose interval excludes no change ends in SIGNIFICANT, a mark that
survives NO_COLOR and pipes (colour only repeats it). A figure without an interval (a
side with one trial, or trials that all read one figure) says so with NO_INTERVAL instead
of looking like any other."""

from __future__ import annotations

from cryptbench.model.ranking_section import RankEntry
from cryptbench.model.result import Comparison


def speed_change(c: Comparison | RankEntry) -> tuple[float, tuple[float, float] | None, bool]:
    """A comparison as a change in speed, in percent (+12 faster, -40 slower, whatever
    the metric's direction), its interval (None without one), and whether that
    interval excludes no change."""
    pct = (c.ratio - 1) * 100
    if c.ci_low is None or c.ci_high is None:
        return pct, None, False
    return pct, ((c.ci_low - 1) * 100, (c.ci_high - 1) * 100), c.ci_high < 1 or c.ci_low > 1


SIGNIFICANT = "*"  # the 95 % interval excludes no change
# A side ran one trial, or its trials all read one figure (stats/estimates.no_spread): the
# interval is not known, whatever the number of trials ("n=1" said the first only).
NO_INTERVAL = "±?"
LEGEND = (
    "Change in speed against the baseline beside each target, % (negative: slower), and its 95% "
    f"interval (±h or [lo,hi]); {SIGNIFICANT}: it excludes no change; {NO_INTERVAL}: no interval."
)


# Beyond a hundredfold the digits say nothing more than the order of magnitude: a
# two-trial interval of a noisy pair can reach +2392634715304 %, and 14 digits would
# push every other figure of its table off an 80-column screen.
COMPACT_FROM = 10_000.0  # percent


def percent(x: float, digits: int = 0, sign: bool = True) -> str:
    """'+12', '-40', '+2.4e12': a percentage as a table or sentence prints it."""
    if abs(x) >= COMPACT_FROM:
        mantissa, exponent = f"{x:{'+' if sign else ''}.1e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{x:{'+' if sign else ''}.{digits}f}"


def symmetric(pct: float, low: float, high: float, digits: int = 0) -> bool:
    """Whether both halves of the interval print as the same number."""
    return round(pct - low, digits) == round(high - pct, digits)


def significant(interval: tuple[float, float] | None) -> bool:
    """The interval (in percent of change) lies wholly on one side of no change."""
    return interval is not None and (interval[1] < 0 or interval[0] > 0)


def change_cell(pct: float, interval: tuple[float, float] | None) -> str:
    """'-76±2*', '-33 [-89,+316]', '-11 ±?': a change in percent for a table's cell."""
    if interval is None:
        return f"{percent(pct)} {NO_INTERVAL}"
    lo, hi = interval
    mark = SIGNIFICANT if significant(interval) else ""
    if symmetric(pct, lo, hi):
        return f"{percent(pct)}±{percent(round(hi - pct), sign=False)}{mark}"
    return f"{percent(pct)} [{percent(lo)},{percent(hi)}]{mark}"


def change_words(pct: float, interval: tuple[float, float] | None, mark: bool = True) -> str:
    """'-33% [-89, +316]', '-11% (no interval)': a change in percent for a sentence,
    always with both ends of its interval; `mark`: SIGNIFICANT where it excludes no change
    (off where another test decides significance, as `compare`'s does)."""
    if interval is None:
        return f"{percent(pct)}% (no interval)"
    lo, hi = interval
    star = SIGNIFICANT if mark and significant(interval) else ""
    return f"{percent(pct)}% [{percent(lo)}, {percent(hi)}]{star}"
