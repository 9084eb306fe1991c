"""Figures the attack tests produce; `make test` prints them at the end.

docs/reliability.md quotes these numbers. A test adds to a figure only after
it has checked the outcome, so a figure counts attacks survived, not tried.
"""

from __future__ import annotations

from collections import Counter

FIGURES: Counter[str] = Counter()


def count(figure: str, n: int = 1) -> None:
    FIGURES[figure] += n
