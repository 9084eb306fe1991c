"""One question and its interval's half-width, as the stopping rule's tests
(tests/unit/stats/test_stopping.py) and the allocator's (tests/unit/trial/test_allocator.py)
both ask them."""

from __future__ import annotations

from cryptbench.stats import estimates
from cryptbench.stats.stopping import Question, Rounds, Samples, interval


def one_question(baseline: str | None = "plain") -> Question:
    """`enc` at workload `w`, against `baseline` (None: its own median), on throughput."""
    return Question("w", "enc", baseline, "throughput", True)


def halfwidth(
    q: Question, samples: Samples, seed: int, rounds: Rounds | None = None
) -> tuple[float | None, int]:
    """The question's interval's half-width (ratio units; None without one), and its samples."""
    r, n = interval(q, samples, seed, rounds)
    return (None if r is None else estimates.halfwidth(r)), n
