"""Summaries, bootstrap confidence intervals and ratios.

Intervals are 95 % percentile-bootstrap intervals (SciPy), with a generator
seeded from the run's seed so `show` reproduces exactly what `run` printed.
With n samples the interval of a median can never be narrower than what n
samples support; with n < 2 there is no interval at all, and we say so rather
than print one.

Nor is there one where every value agrees to the last digit (no_spread): two
rounds whose ratios come out equal, trials that all read one figure. That is a
spread below what the figures resolve (fio's runtime is in milliseconds: a
trial of 2 ms reads 1.5x one of 3 ms, every time), not a spread of zero; an
interval of zero width there would call a quantum of the clock "beyond
doubt". The stopping rule reads it as no interval yet, and runs on.

A ratio of two targets whose trials ran in the same interleaved rounds is
paired: each round's log-ratio cancels what the machine did to both in that
round (its speed drifting, another tenant's load), and the interval is
Student's t on their mean. Not a bootstrap over rounds: with the 3 to 10
rounds a run has, a percentile bootstrap of them covers 72 % to 90 % where it
claims 95 % (benchmarks/coverage.py prints both). Otherwise the ratio of the
medians, with the unpaired bootstrap. Which one a comparison gets follows from
how its trials ran, never from which interval is narrower.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 10_000
MODIFIED_Z_LIMIT = 3.5  # Iglewicz and Hoaglin's cut-off for outliers
MIN_OUTLIER_SAMPLES = 5  # a median absolute deviation of fewer points says nothing
# When samples agree closely their MAD is tiny and the Z-score flags deviations
# of a few percent; those do not matter to anyone reading a benchmark.
MIN_OUTLIER_DEVIATION = 0.10  # fraction of the median


@dataclass(frozen=True)
class Summary:
    n: int  # samples
    median: float  # in the metric's unit
    mean: float
    sd: float  # sample standard deviation (ddof=1); 0 when n < 2
    cv: float  # sd / mean, a fraction; 0 when n < 2
    min: float
    max: float
    ci_low: float | None  # 95 % bootstrap interval of the median; None when n < 2
    ci_high: float | None


UNPAIRED = "unpaired"  # the ratio of the medians, each side's trials resampled on their own
PAIRED = "paired"  # the geometric mean of per-round ratios, Student's t over rounds
PAIRED_MIN_ROUNDS = 2  # a t interval needs two rounds


@dataclass(frozen=True)
class Ratio:
    ratio: float  # a fraction: median(target) / median(baseline); paired, the geometric mean of round ratios
    ci_low: float | None  # 95 % interval; None when either side has n < 2 (paired: fewer than 2 rounds)
    ci_high: float | None
    method: str = UNPAIRED  # UNPAIRED or PAIRED: how the interval was made


def figure_seed(run_seed: int, *parts: str) -> int:
    """A stable seed per figure (run seed, workload, target, …), so that `show`
    and the stopping rule during `run` get exactly the interval `run` printed."""
    h = run_seed
    for p in parts:
        for ch in p.encode():
            h = (h * 131 + ch) % (2**32)
    return h


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# A spread smaller than this fraction of the values is rounding in the arithmetic
# (160/200 and 80/100 differ in their last bit as logarithms), never a measurement's.
AGREE = 1e-9


def no_spread(*samples: np.ndarray) -> bool:
    """Every sample's values agree to the last digit: their spread is below what the
    figures resolve, not zero, and none can be estimated from them (the module's doc)."""
    return all(np.ptp(x) <= AGREE * np.max(np.abs(x)) for x in samples)


def _logs_agree(*log_ratios: np.ndarray) -> bool:
    """no_spread for log-ratios: their difference already is a fraction, and they lie
    about 0, where a share of their own size would be no tolerance at all."""
    return all(np.ptp(d) <= AGREE for d in log_ratios)


def summarize(values: list[float], seed: int = 0) -> Summary:
    if not values:
        raise ValueError("no samples")
    x = np.asarray(values, dtype=float)
    n = len(x)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    lo = hi = None
    if n >= 2 and not no_spread(x):
        lo, hi = _bootstrap((x,), lambda a, axis: np.median(a, axis=axis), seed)
    return Summary(
        n=n,
        median=float(np.median(x)),
        mean=mean,
        sd=sd,
        cv=sd / mean if n > 1 and mean else 0.0,
        min=float(x.min()),
        max=float(x.max()),
        ci_low=lo,
        ci_high=hi,
    )


def ratio(target: list[float], baseline: list[float], seed: int = 0) -> Ratio:
    a = np.asarray(target, dtype=float)
    b = np.asarray(baseline, dtype=float)
    point = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2 or no_spread(a, b):
        return Ratio(point, None, None)
    lo, hi = _bootstrap((a, b), lambda x, y, axis: np.median(x, axis=axis) / np.median(y, axis=axis), seed)
    return Ratio(point, lo, hi)


def round_pairs(
    target: list[float],
    target_rounds: list[int] | None,
    baseline: list[float],
    baseline_rounds: list[int] | None,
) -> list[tuple[float, float]] | None:
    """(target, baseline) round by round, when the comparison pairs: both sides' rounds
    known, one trial a round on each side, every round of the target's also one of the
    baseline's (a baseline may run on in rounds for other targets), at least
    PAIRED_MIN_ROUNDS of them, and every value above zero (a log-ratio needs it).
    None otherwise: the comparison is then unpaired."""
    if target_rounds is None or baseline_rounds is None:
        return None
    if len(set(target_rounds)) != len(target) or len(set(baseline_rounds)) != len(baseline):
        return None
    base = dict(zip(baseline_rounds, baseline, strict=True))
    if len(target) < PAIRED_MIN_ROUNDS or not set(target_rounds) <= set(base):
        return None
    pairs = [(a, base[r]) for r, a in zip(target_rounds, target, strict=True)]
    return pairs if all(a > 0 and b > 0 for a, b in pairs) else None


def t_quantile(p: float, dof: float) -> float:
    """Student's t quantile: what scipy.stats.t.ppf computes (it calls this function),
    without importing scipy.stats, the largest part of a command's start (`python -X
    importtime -c "from scipy import stats"`), and many times that in the kernel lab's
    emulated guest."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, p))


def _t_interval(mean: float, variance_of_mean: float, dof: float) -> tuple[float, float]:
    """exp of mean ± t(97.5 %, dof) standard errors: a ratio's interval from log-ratios."""
    half = t_quantile(0.5 + CONFIDENCE / 2, dof) * float(np.sqrt(variance_of_mean))
    return float(np.exp(mean - half)), float(np.exp(mean + half))


def paired_ratio(pairs: list[tuple[float, float]]) -> Ratio:
    """The geometric mean of the rounds' ratios, with Student's t interval on their mean log."""
    d = np.log(np.array([a for a, _ in pairs])) - np.log(np.array([b for _, b in pairs]))
    point = float(np.exp(d.mean()))
    if len(d) < PAIRED_MIN_ROUNDS:
        return Ratio(point, None, None, PAIRED)
    if _logs_agree(d):  # every round's ratio the same: no spread to estimate
        return Ratio(point, None, None, PAIRED)
    lo, hi = _t_interval(float(d.mean()), float(d.var(ddof=1)) / len(d), len(d) - 1)
    return Ratio(point, lo, hi, PAIRED)


def speed_ratio(
    target: list[float],
    baseline: list[float],
    higher_is_better: bool | None,
    seed: int = 0,
    target_rounds: list[int] | None = None,
    baseline_rounds: list[int] | None = None,
) -> Ratio:
    """The target's speed over the baseline's: for a time (lower is better)
    that is the baseline's time over the target's. Paired by round where the
    trials' rounds are given and pair (round_pairs), else unpaired."""
    pairs = round_pairs(target, target_rounds, baseline, baseline_rounds)
    if higher_is_better is False:
        target, baseline = baseline, target
        pairs = None if pairs is None else [(b, a) for a, b in pairs]
    return ratio(target, baseline, seed) if pairs is None else paired_ratio(pairs)


def geometric_mean_ratio(pairs: list[tuple[list[float], list[float]]], seed: int = 0) -> Ratio:
    """The geometric mean, over workloads, of median(a) / median(b) for each (a, b) pair of
    samples, with a percentile-bootstrap interval that resamples every sample on its own
    (unpaired: trials of different targets are not matched). No interval when any sample
    has fewer than 2 values."""
    arrays = [np.asarray(x, dtype=float) for pair in pairs for x in pair]

    def statistic(*xs: np.ndarray, axis: int = -1) -> np.ndarray:
        logs = [
            np.log(np.median(a, axis=axis) / np.median(b, axis=axis))
            for a, b in zip(xs[::2], xs[1::2], strict=True)
        ]
        return np.exp(np.mean(logs, axis=0))

    point = float(statistic(*arrays))
    if any(len(a) < 2 for a in arrays) or no_spread(*arrays):
        return Ratio(point, None, None)
    lo, hi = _bootstrap(tuple(arrays), statistic, seed)
    return Ratio(point, lo, hi)


def paired_geometric_mean(workloads: list[list[tuple[float, float]]]) -> Ratio:
    """The geometric mean, over workloads, of each one's paired ratio (its rounds' geometric
    mean), with a t interval whose variance adds the workloads' (they are resampled apart,
    as their rounds need not be the same) and whose degrees of freedom are Welch and
    Satterthwaite's. No interval when a workload has fewer than 2 rounds."""
    logs = [np.log(np.array([a for a, _ in p])) - np.log(np.array([b for _, b in p])) for p in workloads]
    k = len(logs)
    point = float(np.exp(np.mean([d.mean() for d in logs])))
    if any(len(d) < PAIRED_MIN_ROUNDS for d in logs):
        return Ratio(point, None, None, PAIRED)
    if _logs_agree(*logs):
        return Ratio(point, None, None, PAIRED)
    parts = [float(d.var(ddof=1)) / len(d) / k**2 for d in logs]  # each workload's share of the variance
    variance = sum(parts)
    dof = variance**2 / sum(v**2 / (len(d) - 1) for v, d in zip(parts, logs, strict=True) if v)
    lo, hi = _t_interval(float(np.log(point)), variance, dof)
    return Ratio(point, lo, hi, PAIRED)


def equivalent(r: Ratio, margin: float | None) -> bool:
    """The whole interval lies within ±margin (ratio units) of no change: no measurable
    difference, however wide the interval is inside it."""
    if margin is None or r.ci_low is None or r.ci_high is None:
        return False
    return 1 - margin <= r.ci_low and r.ci_high <= 1 + margin


EQUAL, TIED, COSTLIER = "equal", "tied", "costlier"


def standing(direct: Ratio, margin: float | None) -> str:
    """How a target stands against the cheapest, from their direct comparison (its speed
    over the cheapest's): EQUAL when that interval lies within ±margin of no change,
    COSTLIER when it lies wholly below no change, else TIED: the run cannot tell them
    apart (the interval reaches 1, or there is none). An interval wholly above 1 (the
    direct comparison disagrees with the two against plain) is tied, never costlier."""
    if equivalent(direct, margin):
        return EQUAL
    if direct.ci_high is not None and direct.ci_high < 1:
        return COSTLIER
    return TIED


def halfwidth(r: Ratio) -> float | None:
    """How far the 95 % interval of a ratio reaches from the estimate, in
    ratio units (0.05: five percentage points of change either way, the way
    the report prints "-62% [-66, -58]"); the larger side, since percentile
    intervals are not symmetric. None without an interval."""
    if r.ci_low is None or r.ci_high is None:
        return None
    return max(r.ratio - r.ci_low, r.ci_high - r.ratio)


def _bootstrap(data: tuple[np.ndarray, ...], statistic: Callable[..., Any], seed: int) -> tuple[float, float]:
    if all(np.ptp(d) == 0 for d in data):
        value = float(statistic(*data, axis=-1))
        return value, value  # every resample is the same: the interval is a point
    return percentile_bootstrap(data, statistic, _rng(seed))


def percentile_bootstrap(
    data: tuple[np.ndarray, ...], statistic: Callable[..., Any], rng: np.random.Generator
) -> tuple[float, float]:
    """The percentile bootstrap interval of `statistic` over RESAMPLES resamples, each
    sample resampled on its own: the figures scipy.stats.bootstrap(data, statistic,
    method="percentile", vectorized=True, paired=False, n_resamples=RESAMPLES, rng=rng)
    gives, drawn in the same order from `rng` (unit/test_stats.py holds the two equal),
    without importing scipy.stats (see t_quantile)."""
    resampled = [d[rng.integers(0, d.shape[-1], (RESAMPLES, d.shape[-1]))] for d in data]
    theta = np.sort(statistic(*resampled, axis=-1))
    alpha = (1 - CONFIDENCE) / 2
    return _quantile(theta, alpha), _quantile(theta, 1 - alpha)


def _quantile(ordered: np.ndarray, p: float) -> float:
    """Hyndman and Fan's method 7 ('linear'), in scipy.stats.quantile's own arithmetic
    (numpy's differs in the last digit now and then)."""
    n = len(ordered)
    jg = p * n + (1 - p)
    jp1 = jg // 1
    g = 0.0 if jp1 - 1 < 0 else jg % 1
    j, k = (int(min(max(i, 0.0), n - 1)) for i in (jp1 - 1, jp1))
    return float((1 - g) * ordered[j] + g * ordered[k])


def outliers(values: list[float]) -> list[int]:
    """Indices whose modified Z-score (median/MAD based) exceeds 3.5 and which
    lie at least 10 % away from the median."""
    x = np.asarray(values, dtype=float)
    if len(x) < MIN_OUTLIER_SAMPLES:
        return []
    med = np.median(x)
    mad = np.median(np.abs(x - med))
    if mad == 0:
        return []
    z = 0.6745 * (x - med) / mad
    far = np.abs(x - med) >= MIN_OUTLIER_DEVIATION * abs(med)
    return [int(i) for i in np.flatnonzero((np.abs(z) > MODIFIED_Z_LIMIT) & far)]


DRIFT_P = 0.01  # Spearman's test across trial order
DRIFT_MIN_SAMPLES = 6
DRIFT_MIN_CHANGE = 0.10  # fraction of the median, first trial to last along the trend
BIMODAL_MIN_SAMPLES = 10  # fewer split normal samples too often (tests/unit/stats/test_estimates.py counts)
BIMODAL_MIN_GROUP = 3  # values on each side of the gap, and at least a fifth of them
BIMODAL_MIN_GAP = 0.10  # fraction of the median


@dataclass(frozen=True)
class Drift:
    change: float  # fraction of the median, first trial to last along the Theil-Sen line
    rho: float  # Spearman's rank correlation with trial order
    p: float


def drift(values: list[float]) -> Drift | None:
    """A trend across trials (in their order), or None: Spearman's rho
    significant at 1 % and a Theil-Sen slope moving at least 10 % of the
    median from the first trial to the last."""
    n = len(values)
    if n < DRIFT_MIN_SAMPLES or np.ptp(values) == 0:
        return None
    from scipy import stats as sps  # here: SciPy is most of the command line's start-up time

    order = np.arange(n)
    rho, p = sps.spearmanr(order, values)
    if not p < DRIFT_P:
        return None
    slope = sps.theilslopes(values, order).slope
    change = float(slope * (n - 1) / np.median(values))
    if abs(change) < DRIFT_MIN_CHANGE:
        return None
    return Drift(change, float(rho), float(p))


def modes(values: list[float]) -> tuple[list[float], list[float]] | None:
    """Two clusters split by a gap, or None: the widest gap between sorted
    values is wider than either side's own range and than 10 % of the median,
    with at least 3 values (and a fifth of them) on each side. A median of
    such a sample describes neither cluster."""
    n = len(values)
    if n < BIMODAL_MIN_SAMPLES:
        return None
    x = sorted(values)
    least = max(BIMODAL_MIN_GROUP, -(-n // 5))
    best = None
    for i in range(least, n - least + 1):
        gap = x[i] - x[i - 1]
        if best is None or gap > best[0]:
            best = (gap, i)
    if best is None:
        return None
    gap, i = best
    low, high = x[:i], x[i:]
    if gap <= max(low[-1] - low[0], high[-1] - high[0]) or gap < BIMODAL_MIN_GAP * float(np.median(x)):
        return None
    return low, high
