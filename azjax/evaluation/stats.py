"""Confidence intervals used across azjax, from `scipy.stats`: Wilson intervals for match
scores, Student-t intervals for means over seeds (clipped to [0, 1] for a share), exact
(Clopper-Pearson) intervals for k of m seeds with a flag.

Seeds are the unit: a summary over training seeds treats each seed's figure as one draw,
never the games inside a seed. `tests/test_interval_coverage.py` measures each interval's
coverage by simulation at 2 to 10 seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")


def normal_quantile(level: float) -> float:
    """z such that a standard normal lies in [-z, z] with probability `level` (0.95 -> 1.96)."""
    _check_level(level)
    return float(stats.norm.ppf(0.5 + level / 2.0))


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (0.5 <= p < 1) of Student's t with `df` >= 1 degrees of freedom."""
    if not 0.5 <= p < 1 or df < 1:
        raise ValueError(f"need 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")
    return float(stats.t.ppf(p, df))


def wilson_interval(score: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a share `score` observed over `n` games.

    A match score counts a draw as half a win, so `score * n` need not be a whole number;
    the formula takes it as it is.

    Args:
      score: the observed share in [0, 1].
      n: the games it was observed over ((0, 1) where there are none).
      level: the confidence level.

    Returns:
      (low, high) within [0, 1].
    """
    if n <= 0:
        return 0.0, 1.0
    z = normal_quantile(level)
    denom = 1.0 + z * z / n
    centre = (score + z * z / (2 * n)) / denom
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / denom
    # At a score of 0 or 1 the bound is 0 or 1 exactly; the formula loses it to rounding.
    low = 0.0 if score <= 0 else max(0.0, centre - half)
    high = 1.0 if score >= 1 else min(1.0, centre + half)
    return low, high


def _observed(values: Sequence[float]) -> tuple[np.ndarray, float]:
    """The values as float64 and their mean (nan where there are none)."""
    x = np.asarray(values, np.float64)
    return x, float(x.mean()) if x.size else math.nan


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the Student-t interval for the mean of `values` (one per seed).

    Args:
      values: the observations.
      level: the confidence level.

    Returns:
      The mean and the interval's bounds (nan bounds with fewer than two values;
      nan throughout with none). Equal values give a zero-width interval.
    """
    _check_level(level)
    x, mean = _observed(values)
    if x.size < 2:
        return mean, math.nan, math.nan
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    if sem == 0.0:
        return mean, mean, mean
    low, high = stats.t.interval(level, x.size - 1, loc=mean, scale=sem)
    return mean, float(low), float(high)


def flag_ci(flags: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(share, low, high): the exact (Clopper-Pearson) interval for the share of seeds
    with a flag, k of m. Its coverage is at least `level` at every true share.

    Args:
      flags: one 0/1 value per seed.
      level: the confidence level.

    Returns:
      k/m and the interval's bounds (nan throughout with no seeds); 3 of 3 gives
      about [0.29, 1].
    """
    _check_level(level)
    x, share = _observed(flags)
    if x.size == 0:
        return share, math.nan, math.nan
    if not np.all((x == 0) | (x == 1)):
        raise ValueError(f"flags must be 0 or 1, got {sorted(set(x.tolist()))}")
    interval = stats.binomtest(int(x.sum()), int(x.size)).proportion_ci(
        confidence_level=level, method="exact")
    return share, float(interval.low), float(interval.high)


def share_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high) for a share in [0, 1] measured once per seed: the Student-t
    interval for the mean, clipped to [0, 1].

    Where every seed sits at the same bound (all 100%, or all 0%), the seeds show no
    spread to scale a t-interval by; the interval is then the exact one for m of m
    seeds reaching that bound (`flag_ci`), which bounds the mean too: a share of 1 on a
    fraction p of seeds makes the mean at least p. Three seeds at 100% give about
    [0.29, 1], not [1, 1].

    Args:
      values: one share per seed, each in [0, 1].
      level: the confidence level.

    Returns:
      The mean and the interval's bounds (nan bounds with fewer than two values, or
      with equal values inside (0, 1), which leave nothing to estimate a spread from).
    """
    x, mean = _observed(values)
    if x.size and (x.min() < 0 or x.max() > 1):
        raise ValueError(f"shares must lie in [0, 1], got {x.min()} to {x.max()}")
    if x.size >= 2 and x.min() == x.max():
        if mean in (0.0, 1.0):
            _, low, high = flag_ci(np.ones(x.size) if mean == 1.0 else np.zeros(x.size),
                                   level)
            return mean, low, high
        return mean, math.nan, math.nan
    mean, low, high = mean_ci(x, level)
    if math.isnan(low):
        return mean, low, high
    return mean, max(0.0, low), min(1.0, high)


def paired_difference(a: Sequence[float], b: Sequence[float], level: float = 0.95
                      ) -> tuple[float, float, float, float]:
    """(mean difference, low, high, p): a paired t-test of b - a over seeds, seed i of
    `a` paired with seed i of `b` (the same training seed under two configurations).

    Args:
      a: one figure per seed of the first configuration.
      b: the same seeds' figures under the second.
      level: the confidence level of the interval.

    Returns:
      The mean of b - a, its t-interval and the two-sided p-value (nan with fewer than
      two pairs).
    """
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired figures need one per seed in each, got {x.size} and "
                         f"{y.size}")
    diff = y - x
    mean, low, high = mean_ci(diff, level)
    if diff.size < 2 or diff.std(ddof=1) == 0:
        return mean, low, high, math.nan
    return mean, low, high, float(stats.ttest_rel(y, x).pvalue)


def welch_difference(a: Sequence[float], b: Sequence[float], level: float = 0.95
                     ) -> tuple[float, float, float, float]:
    """(mean difference, low, high, p): Welch's t-test of mean(b) - mean(a) over seeds,
    for configurations trained on different seeds.

    Args:
      a: one figure per seed of the first configuration (at least two).
      b: one figure per seed of the second (at least two).
      level: the confidence level of the interval.

    Returns:
      The difference of means, its Welch t-interval and the two-sided p-value (nan
      bounds and p with fewer than two seeds in either).
    """
    _check_level(level)
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    diff = float(y.mean() - x.mean()) if x.size and y.size else math.nan
    if x.size < 2 or y.size < 2:
        return diff, math.nan, math.nan, math.nan
    result = stats.ttest_ind(y, x, equal_var=False)
    interval = result.confidence_interval(level)
    return diff, float(interval.low), float(interval.high), float(result.pvalue)


def difference_cells(diff: float, low: float, high: float, p: float
                     ) -> tuple[str, str, str]:
    """A difference of shares as a table prints it, in points of percentage.

    Args:
      diff: the difference (a share's scale: 0.05 is 5 points).
      low: its interval's low end (nan: none).
      high: its interval's high end.
      p: its p-value (nan: none).

    Returns:
      ('+5.0', '-1.2 to +11.2', '0.08'), with '-' for a missing interval or p.
    """
    interval = "-" if math.isnan(low) else f"{100 * low:+.1f} to {100 * high:+.1f}"
    return f"{100 * diff:+.1f}", interval, "-" if math.isnan(p) else f"{p:.2g}"
