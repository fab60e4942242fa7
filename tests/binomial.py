"""Binomial tails for statistical test criteria (plain Python, no scipy).

A test that counts failures over n independent trials (seeds, games, random networks)
passes while the count is at most `max_failures(n, p_fail)`; its own false-failure rate is
then `tail(n, p_fail, allowed + 1)` < 1e-3 whenever the true per-trial failure rate is at
most p_fail. p_fail is `upper_bound(misses, trials)`, a one-sided 99% Clopper-Pearson bound
from counts measured offline over many seeds (stated next to each test's criterion).

Trials over a fixed set of positions, each with its own rate, are independent but not
identically distributed: their failure count exceeds m no more often than a binomial one
at their mean rate does, for any m >= n * mean (Hoeffding, 1956; `max_failures` never
returns less), so a pooled offline count over the same positions bounds it too.
"""

from __future__ import annotations

import math

FALSE_FAILURE = 1e-3
"""The most a statistical test may fail when nothing is wrong."""


def pmf(n: int, p: float, k: int) -> float:
    """P(X = k) for X ~ Binomial(n, p)."""
    if not 0 <= k <= n:
        return 0.0
    if p in (0.0, 1.0):
        return float(k == round(p * n))
    log_comb = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    return math.exp(log_comb + k * math.log(p) + (n - k) * math.log1p(-p))


def tail(n: int, p: float, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    return min(1.0, math.fsum(pmf(n, p, i) for i in range(k, n + 1)))


def cdf(n: int, p: float, k: int) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    return min(1.0, math.fsum(pmf(n, p, i) for i in range(min(k, n) + 1)))


def max_failures(n: int, p_fail: float, alpha: float = FALSE_FAILURE) -> int:
    """The fewest failures m >= n * p_fail of n trials with P(more than m) < alpha at
    rate p_fail: a test allowing m failures fails falsely less often than alpha."""
    for m in range(math.ceil(n * p_fail), n + 1):
        if tail(n, p_fail, m + 1) < alpha:
            return m
    return n


def min_successes(n: int, p_success: float, alpha: float = FALSE_FAILURE) -> int:
    """The most successes k of n trials with P(fewer than k) < alpha at rate p_success."""
    return n - max_failures(n, 1.0 - p_success, alpha)


def interval(n: int, p: float, alpha: float = FALSE_FAILURE) -> tuple[int, int]:
    """Two-sided acceptance region (low, high) for X ~ Binomial(n, p): the largest low with
    P(X < low) < alpha / 2 and the smallest high with P(X > high) < alpha / 2, so a test
    asserting low <= X <= high fails falsely less often than alpha. Never narrower than
    [floor(n * p), ceil(n * p)]."""
    probs = [pmf(n, p, k) for k in range(n + 1)]
    low, below = 0, 0.0
    while low < n and below + probs[low] < alpha / 2:
        below += probs[low]
        low += 1
    high, above = n, 0.0
    while high > 0 and above + probs[high] < alpha / 2:
        above += probs[high]
        high -= 1
    return min(low, math.floor(n * p)), max(high, math.ceil(n * p))


def upper_bound(failures: int, trials: int, confidence: float = 0.99) -> float:
    """One-sided Clopper-Pearson upper confidence bound on a failure rate seen as
    `failures` in `trials` (the p at which seeing so few has probability 1 - confidence)."""
    if failures >= trials:
        return 1.0
    low, high = failures / trials, 1.0
    for _ in range(200):
        mid = (low + high) / 2
        if cdf(trials, mid, failures) > 1.0 - confidence:
            low = mid
        else:
            high = mid
    return high


def lower_bound(successes: int, trials: int, confidence: float = 0.99) -> float:
    """One-sided Clopper-Pearson lower confidence bound on a success rate."""
    return 1.0 - upper_bound(trials - successes, trials, confidence)
