"""The intervals that azjax's tables and plots print over seeds cover the true mean as
often as they say: simulated at 2, 3, 5 and 10 seeds, for a normal figure (a loss) and
for shares drawn from beta distributions such as a seed's share of optimal moves; and,
exactly, the k-of-m interval of a flag at every true rate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from azjax.evaluation.stats import flag_ci, mean_ci, share_ci

DRAWS = 2_000
"""Simulated sets of seeds per case: a true coverage of 95% lands within 93-97% with
probability above 0.9999 (2 points is 4.1 binomial standard errors)."""
SEED_COUNTS = (2, 3, 5, 10)


def coverage(interval, draw, truth: float, seeds: int, rng: np.random.Generator,
             draws: int = DRAWS) -> float:
    """The share of `draws` simulated sets of `seeds` values whose interval holds `truth`."""
    values = draw(rng, (draws, seeds))
    hits = 0
    for row in values:
        _, low, high = interval(row)
        hits += low <= truth <= high
    return hits / draws


@pytest.mark.parametrize("seeds", SEED_COUNTS)
@pytest.mark.parametrize("name, interval, draw, truth", [
    ("normal loss", mean_ci, lambda rng, size: rng.normal(0.8, 0.3, size), 0.8),
    ("share near 45%", share_ci, lambda rng, size: rng.beta(45, 55, size), 0.45),
    ("share near 80%", share_ci, lambda rng, size: rng.beta(60, 15, size), 0.8),
    ("share near 90%", share_ci, lambda rng, size: rng.beta(90, 10, size), 0.9),
])
def test_a_nominal_95_percent_interval_over_seeds_covers_93_to_97_percent(
        name, interval, draw, truth, seeds):
    rng = np.random.default_rng(seeds)
    covered = coverage(interval, draw, truth, seeds, rng)
    assert 0.93 <= covered <= 0.97, f"{name} at {seeds} seeds: {covered:.3f}"


def test_the_percentile_bootstrap_it_replaced_covers_far_less_at_few_seeds():
    """Why the tables no longer bootstrap over seeds: its 2.5% and 97.5% quantiles are
    about the lowest and the highest seed, which hold the mean less and less often."""
    def bootstrap(row):
        picks = np.random.default_rng(0).integers(0, row.size, (2_000, row.size))
        low, high = np.quantile(row[picks].mean(axis=1), [0.025, 0.975])
        return row.mean(), low, high

    rng = np.random.default_rng(7)
    at_3 = coverage(bootstrap, lambda r, size: r.beta(45, 55, size), 0.45, 3, rng, draws=400)
    assert at_3 < 0.85


@pytest.mark.parametrize("seeds", SEED_COUNTS)
def test_the_flag_interval_covers_at_least_95_percent_at_every_rate(seeds):
    """Exact coverage, not simulated: the chance of each k of m times whether its
    interval holds the rate, at 199 rates in (0, 1)."""
    intervals = [flag_ci([1] * k + [0] * (seeds - k))[1:] for k in range(seeds + 1)]
    for rate in np.linspace(0.005, 0.995, 199):
        chances = stats.binom.pmf(np.arange(seeds + 1), seeds, rate)
        covered = sum(c for c, (low, high) in zip(chances, intervals) if low <= rate <= high)
        assert covered >= 0.95 - 1e-9, (seeds, rate, covered)
