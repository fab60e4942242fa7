"""Confidence intervals used across azjax: Wilson intervals for match scores and other
proportions, Student-t intervals for unbounded means over seeds, percentile-bootstrap
intervals for bounded means (they stay inside the values' range), normal quantiles (no
scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np


def normal_quantile(level: float) -> float:
    """z such that a standard normal lies in [-z, z] with probability `level` (0.95 -> 1.96)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson_interval(score: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a share `score` observed over `n` games."""
    if n <= 0:
        return 0.0, 1.0
    z = normal_quantile(level)
    denom = 1.0 + z * z / n
    centre = (score + z * z / (2 * n)) / denom
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer `df` (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 1:
        total, term = 0.0, 1.0
        if df > 1:
            total = term
            for k in range(1, (df - 3) // 2 + 1):
                term *= c2 * (2 * k) / (2 * k + 1)
                total += term
            return 2 / math.pi * (theta + s * math.cos(theta) * total)
        return 2 / math.pi * theta
    total, term = 1.0, 1.0
    for k in range(1, (df - 2) // 2 + 1):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p >= 0.5) of Student's t with integer `df` >= 1, by bisection."""
    if not 0.5 <= p < 1 or df < 1:
        raise ValueError(f"need 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")
    target = 2 * p - 1
    low, high = 0.0, 1.0
    while _t_two_sided(high, df) < target:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if _t_two_sided(mid, df) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _observed(values: Sequence[float]) -> tuple[np.ndarray, float]:
    """The values as float64 and their mean (nan where there are none)."""
    x = np.asarray(values, np.float64)
    return x, float(x.mean()) if x.size else math.nan


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the t-interval for the mean (nan bounds with one value)."""
    x, mean = _observed(values)
    if x.size < 2:
        return mean, math.nan, math.nan
    half = t_quantile(0.5 + level / 2, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


def bootstrap_ci(values: Sequence[float], level: float = 0.95, resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the percentile-bootstrap interval for the mean of `values`.

    Every resampled mean lies between the smallest and the largest value, so the
    interval of a bounded metric (a share in [0, 1]) never leaves its range, as a
    t-interval over a few seeds can. The resamples are drawn from a fixed `seed`, so the
    same values always give the same interval.

    Args:
      values: the observations, e.g. one share per seed (at least one).
      level: the confidence level.
      resamples: bootstrap resamples.
      seed: the resampling seed.

    Returns:
      The mean and the interval's bounds (nan bounds with one value, nan throughout with
      none).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    x, mean = _observed(values)
    if x.size < 2:
        return mean, math.nan, math.nan
    picks = np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))
    means = x[picks].mean(axis=1)
    low, high = np.quantile(means, [0.5 - level / 2, 0.5 + level / 2])
    return mean, float(low), float(high)
