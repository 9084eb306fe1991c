"""A comparison read as a change in speed, whatever its metric's direction: the
one reading every renderer and rule shares (below analysis/document.py, so that the
rules the document is built with can use it too)."""

from __future__ import annotations

from cryptbench.result_model import Comparison, RankEntry


def speed_change(c: Comparison | RankEntry) -> tuple[float, tuple[float, float] | None, bool]:
    """A comparison as a change in speed, in percent (+12 faster, -40 slower, whatever
    the metric's direction), its interval (None without one), and whether that
    interval excludes no change."""
    pct = (c.ratio - 1) * 100
    if c.ci_low is None or c.ci_high is None:
        return pct, None, False
    return pct, ((c.ci_low - 1) * 100, (c.ci_high - 1) * 100), c.ci_high < 1 or c.ci_low > 1
