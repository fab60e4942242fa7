"""tests/binomial.py, the tails behind the statistical criteria, on hand-computed values."""

from __future__ import annotations

import math

import binomial
import pytest


def test_pmf_tail_and_cdf_by_hand():
    # three fair coins: 1, 3, 3, 1 eighths
    assert [8 * binomial.pmf(3, 0.5, k) for k in range(4)] == pytest.approx([1, 3, 3, 1])
    assert binomial.tail(3, 0.5, 2) == pytest.approx(0.5)
    assert binomial.cdf(3, 0.5, 0) == pytest.approx(1 / 8)
    assert binomial.tail(4, 0.1, 1) == pytest.approx(1 - 0.9**4)
    assert binomial.tail(5, 0.2, 5) == pytest.approx(0.2**5)
    assert binomial.cdf(10, 0.1, 1) == pytest.approx(0.9**10 + 10 * 0.1 * 0.9**9)
    assert binomial.tail(7, 0.3, 0) == 1.0 and binomial.cdf(7, 0.3, 7) == pytest.approx(1.0)
    assert binomial.pmf(4, 0.0, 0) == 1.0 and binomial.pmf(4, 1.0, 4) == 1.0
    assert binomial.pmf(4, 1.0, 3) == 0.0
    # large n: no overflow, and the two tails add up
    assert binomial.tail(20000, 0.5, 10001) + binomial.cdf(20000, 0.5, 10000) == pytest.approx(1.0)


def test_max_failures_and_min_successes_by_hand():
    # 10 trials failing at 1%: P(>0) = 0.0956, P(>1) = 0.00427, P(>2) = 1.1e-4
    assert binomial.max_failures(10, 0.01) == 2
    assert binomial.max_failures(10, 0.01, alpha=0.01) == 1
    assert binomial.max_failures(10, 0.0) == 0
    assert binomial.max_failures(3, 0.5) == 3  # no criterion can be met: all may fail
    # never below the mean (where a pooled rate would not bound unequal rates): P(X > 0)
    # = 0.75 < 0.8, but 0 < 2 * 0.5
    assert binomial.max_failures(2, 0.5, alpha=0.8) == 1
    assert binomial.min_successes(10, 0.99) == 8
    # the false-failure rate of the returned criterion is below alpha, of one fewer not
    m = binomial.max_failures(100, 0.05)
    assert binomial.tail(100, 0.05, m + 1) < 1e-3 <= binomial.tail(100, 0.05, m)


def test_two_sided_interval_by_hand():
    # three fair coins: P(X < 1) = P(X > 2) = 1/8, P(X < 2) = 1/2
    assert binomial.interval(3, 0.5, alpha=0.3) == (1, 2)  # 1/8 < 0.15 on each side
    assert binomial.interval(3, 0.5, alpha=0.2) == (0, 3)  # 1/8 >= 0.1: nothing excluded
    assert binomial.interval(10, 0.0) == (0, 0) and binomial.interval(10, 1.0) == (10, 10)
    # each excluded tail is below alpha / 2, and one more value excluded would not be
    for n, p, alpha in ((100, 0.3, 1e-3), (8000, 0.25, 1e-3 / 9), (40, 0.05, 0.01)):
        low, high = binomial.interval(n, p, alpha)
        assert low <= n * p <= high
        assert binomial.cdf(n, p, low - 1) < alpha / 2 <= binomial.cdf(n, p, low)
        assert binomial.tail(n, p, high + 1) < alpha / 2 <= binomial.tail(n, p, high)
        # the same ends as the one-sided helpers at alpha / 2 each
        assert (low, high) == (binomial.min_successes(n, p, alpha / 2),
                               binomial.max_failures(n, p, alpha / 2))


def test_clopper_pearson_bounds():
    # no failure in n trials: the bound solves (1 - p)^n = 0.01
    for n in (10, 300, 5000):
        assert binomial.upper_bound(0, n) == pytest.approx(1 - 0.01 ** (1 / n), rel=1e-9)
    # all failures in n trials: the bound is 1; all successes: the lower bound is 0.01^(1/n)
    assert binomial.upper_bound(7, 7) == 1.0
    assert binomial.lower_bound(20, 20) == pytest.approx(0.01 ** (1 / 20), rel=1e-9)
    # otherwise the bound is where seeing at most k failures has probability 1%
    for k, n in ((1, 10), (5, 200), (40, 1000)):
        bound = binomial.upper_bound(k, n)
        assert k / n < bound and binomial.cdf(n, bound, k) == pytest.approx(0.01, rel=1e-6)
    assert binomial.upper_bound(1, 10, confidence=0.5) < binomial.upper_bound(1, 10)
    assert math.isclose(binomial.lower_bound(90, 100), 1 - binomial.upper_bound(10, 100))
