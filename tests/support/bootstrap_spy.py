"""Every bootstrap draw the statistics make, recorded: which samples were resampled, with
which seed. Two figures that must be the same interval (the stopping rule's and the
report's) are held to the same draws, since with few trials most seeds reach one interval."""

from __future__ import annotations

from typing import Any

import pytest

from cryptbench.stats import estimates

Draw = tuple[int, tuple[tuple[float, ...], ...]]  # (seed, the samples resampled)


def spy_on_bootstrap(monkeypatch: pytest.MonkeyPatch) -> list[Draw]:
    """The list each later bootstrap appends its draw to."""
    drawn: list[Draw] = []
    bootstrap = estimates._bootstrap

    def spy(data: tuple[Any, ...], statistic: Any, seed: int) -> tuple[float, float]:
        drawn.append((seed, tuple(tuple(d.tolist()) for d in data)))
        return bootstrap(data, statistic, seed)

    monkeypatch.setattr(estimates, "_bootstrap", spy)
    return drawn
