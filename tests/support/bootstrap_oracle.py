"""Exact bootstrap distributions of tiny samples, an oracle independent of SciPy's
resampling: every resample of every sample enumerated, each equally likely."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np


def _medians(sample: Sequence[float]) -> np.ndarray:
    """The median of every resample (with replacement, same size) of one sample."""
    return np.median(np.array(list(itertools.product(sample, repeat=len(sample)))), axis=1)


def exact_distribution(
    samples: Sequence[Sequence[float]], statistic: Callable[[list[float]], float]
) -> list[float]:
    """The statistic of the samples' medians over every combination of their resamples, sorted."""
    per_sample = [_medians(s) for s in samples]
    values = [statistic(list(combo)) for combo in itertools.product(*per_sample)]
    return sorted(values)


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of an exact distribution (the smallest value whose CDF reaches q)."""
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def ratio_of_medians(medians: list[float]) -> float:
    return medians[0] / medians[1]


def geometric_mean_of_ratios(medians: list[float]) -> float:
    logs = [math.log(a / b) for a, b in zip(medians[::2], medians[1::2], strict=True)]
    return math.exp(sum(logs) / len(logs))
