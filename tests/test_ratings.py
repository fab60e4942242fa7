"""Tests for azjax.evaluation.ratings: Bradley-Terry Elo fits, intervals, priors, validation."""

import math

import binomial
import numpy as np
import pytest

from azjax.evaluation.ratings import (
    FALLBACK_PRIOR_GAMES,
    expected_score,
    fit_elo,
    normal_quantile,
    score_to_elo,
)

TRUE = np.array([0.0, 100.0, 200.0, 400.0, 700.0])
NAMES = ["A", "B", "C", "D", "E"]


def sampled_round_robin(true, games_per_pair, seed, draw_share=0.4):
    """Results sampled from the model; draws take `draw_share` of the rarer outcome's mass, so the
    expected score stays p while individual games can be drawn."""
    rng = np.random.default_rng(seed)
    results = []
    for i in range(len(true)):
        for j in range(i + 1, len(true)):
            p = expected_score(true[i] - true[j])
            draw = draw_share * min(p, 1.0 - p)
            wins, draws, _ = rng.multinomial(games_per_pair,
                                             [p - draw / 2, draw, 1 - p - draw / 2])
            results.append((i, j, float(wins) + 0.5 * float(draws), games_per_pair))
    return results


def exact_round_robin(true, games_per_pair):
    """Results whose scores equal their expectation under the model."""
    return [(i, j, games_per_pair * expected_score(true[i] - true[j]), games_per_pair)
            for i in range(len(true)) for j in range(i + 1, len(true))]


def test_sampled_round_robin_recovers_true_ratings():
    ratings = fit_elo(NAMES, sampled_round_robin(TRUE, 2000, seed=0))
    assert ratings.elo[0] == 0.0 and ratings.stderr[0] == 0.0
    assert np.all(ratings.stderr[1:] > 0)
    assert np.all(ratings.stderr[1:] < 30)  # 2,000 games per pair pin ratings down well
    assert np.all(np.abs(ratings.elo - TRUE) <= 3 * ratings.stderr + 1e-9)
    bounds = ratings.interval(0.95)
    covered = (bounds[:, 0] <= TRUE) & (TRUE <= bounds[:, 1])
    assert covered.sum() >= len(TRUE) - 1
    np.testing.assert_array_equal(ratings.games, np.full(5, 4 * 2000))


# The 95% intervals' miss rates of players B..E (300 games a pair, no draws), measured
# offline over seeds 10000..29999 (20,000 independent fits): 1027, 1049, 964 and 985
# misses. One-sided 99% Clopper-Pearson bounds over the four: every player's miss rate is
# within [lower_bound(964), upper_bound(1049)] = [0.0447, 0.0563] (nominal 0.05).
MISS_LOW, MISS_HIGH = binomial.lower_bound(964, 20000), binomial.upper_bound(1049, 20000)


def test_interval_coverage_over_seeds():
    """Each seed checks ONE player (B, C, D, E in turn): the misses of one fit's players
    are correlated, those of different seeds independent. The count of 1,000 seeds is a
    sum of four B(250, p_i) with MISS_LOW <= p_i <= MISS_HIGH, so it lies below the lower
    end of `interval(1000, MISS_LOW)` or above the upper end of `interval(1000, MISS_HIGH)`
    with probability < FALSE_FAILURE / 2 each: false-failure rate < 1e-3. Fails when the
    intervals are too narrow (more than 82 misses) or too wide (fewer than 25)."""
    misses = 0
    for seed in range(1000):
        player = 1 + seed % 4
        ratings = fit_elo(NAMES, sampled_round_robin(TRUE, 300, seed=seed, draw_share=0.0))
        low, high = ratings.interval(0.95)[player]
        misses += not low <= TRUE[player] <= high
    least = binomial.interval(1000, MISS_LOW)[0]
    most = binomial.interval(1000, MISS_HIGH)[1]
    assert least <= misses <= most, (misses, least, most)


def test_exact_expectation_data_recovers_truth():
    ratings = fit_elo(NAMES, exact_round_robin(TRUE, 100))
    np.testing.assert_allclose(ratings.elo, TRUE, atol=1e-3)
    assert ratings.prior_games == 0.0


def test_exact_chain_of_games_recovers_truth():
    # Only neighbours play: still connected, still identified.
    results = [(i, i + 1, 50 * expected_score(TRUE[i] - TRUE[i + 1]), 50) for i in range(4)]
    ratings = fit_elo(NAMES, results)
    np.testing.assert_allclose(ratings.elo, TRUE, atol=1e-3)
    # Uncertainty accumulates along the chain.
    assert np.all(np.diff(ratings.stderr) > 0)


def test_two_player_stderr_matches_fisher_information():
    ratings = fit_elo(["x", "y"], [(0, 1, 50.0, 100)])
    np.testing.assert_allclose(ratings.elo, [0.0, 0.0], atol=1e-9)
    # Information for the difference: (ln10/400)^2 * n * p * (1 - p) with p = 1/2.
    expected = 1.0 / math.sqrt((math.log(10) / 400) ** 2 * 100 * 0.25)
    np.testing.assert_allclose(ratings.stderr, [0.0, expected], rtol=1e-9)
    z = normal_quantile(0.95)
    np.testing.assert_allclose(z, 1.959964, atol=1e-6)
    np.testing.assert_allclose(ratings.interval()[1], [-z * expected, z * expected])
    np.testing.assert_allclose(np.diff(ratings.interval(0.5)[1]), 2 * 0.6744898 * expected,
                               rtol=1e-6)


def test_anchor_by_index_name_and_shift():
    results = exact_round_robin(TRUE, 100)
    base = fit_elo(NAMES, results)
    by_index = fit_elo(NAMES, results, anchor=2)
    by_name = fit_elo(NAMES, results, anchor="C")
    assert by_index.elo[2] == 0.0 and by_index.stderr[2] == 0.0
    np.testing.assert_allclose(by_index.elo, TRUE - 200.0, atol=1e-3)
    np.testing.assert_allclose(by_index.elo, base.elo - base.elo[2], atol=1e-6)
    np.testing.assert_array_equal(by_name.elo, by_index.elo)
    np.testing.assert_array_equal(by_name.stderr, by_index.stderr)
    assert by_index.stderr[0] > 0  # the old anchor is now uncertain
    shifted = fit_elo(NAMES, results, anchor="C", anchor_elo=1500.0)
    np.testing.assert_allclose(shifted.elo, by_index.elo + 1500.0, atol=1e-9)
    np.testing.assert_allclose(shifted.stderr, by_index.stderr)
    assert shifted.elo[2] == 1500.0


def test_equal_players_have_equal_ratings():
    ratings = fit_elo(["p", "q"], [(0, 1, 30.0, 60), (1, 0, 10.0, 20)])
    np.testing.assert_allclose(ratings.elo, [0.0, 0.0], atol=1e-9)
    np.testing.assert_array_equal(ratings.games, [80, 80])


def test_numpy_array_of_rows_is_accepted():
    results = exact_round_robin(TRUE, 100)
    from_array = fit_elo(NAMES, np.array(results))
    np.testing.assert_allclose(from_array.elo, fit_elo(NAMES, results).elo)


def test_swapped_and_split_rows_give_same_fit():
    results = sampled_round_robin(TRUE, 200, seed=3)
    base = fit_elo(NAMES, results)
    swapped = fit_elo(NAMES, [(j, i, n - s, n) for i, j, s, n in results])
    np.testing.assert_allclose(swapped.elo, base.elo, atol=1e-6)
    np.testing.assert_allclose(swapped.stderr, base.stderr, rtol=1e-6)
    # Each pair split into two rows, one of them reversed: aggregation gives the same fit.
    split = []
    for i, j, s, n in results:
        first = min(s, n / 2)
        split += [(i, j, first, n / 2), (j, i, n / 2 - (s - first), n / 2)]
    split_fit = fit_elo(NAMES, split)
    np.testing.assert_allclose(split_fit.elo, base.elo, atol=1e-6)
    np.testing.assert_allclose(split_fit.stderr, base.stderr, rtol=1e-6)


def test_stderr_shrinks_like_inverse_sqrt_games():
    small = fit_elo(NAMES, exact_round_robin(TRUE, 100))
    large = fit_elo(NAMES, exact_round_robin(TRUE, 400))
    np.testing.assert_allclose(large.elo, small.elo, atol=1e-3)
    np.testing.assert_allclose(large.stderr[1:] / small.stderr[1:], 0.5, rtol=1e-4)
    sampled_small = fit_elo(NAMES, sampled_round_robin(TRUE, 500, seed=1))
    sampled_large = fit_elo(NAMES, sampled_round_robin(TRUE, 2000, seed=1))
    ratio = sampled_large.stderr[1:] / sampled_small.stderr[1:]
    assert np.all((ratio > 0.4) & (ratio < 0.6)), ratio


def test_perfect_record_falls_back_to_prior():
    # "W" wins every game; the others split theirs.
    results = [(2, 0, 10.0, 10), (2, 1, 10.0, 10), (0, 1, 5.0, 10)]
    ratings = fit_elo(["a", "b", "W"], results)
    assert np.all(np.isfinite(ratings.elo)) and np.all(np.isfinite(ratings.stderr))
    assert ratings.prior_games == FALLBACK_PRIOR_GAMES
    assert ratings.order()[0] == 2
    assert ratings.elo[2] > 300  # clearly on top, but finite
    np.testing.assert_allclose(ratings.elo[0], ratings.elo[1], atol=1e-6)
    # An explicit, stronger prior is used as given and pulls the winner in.
    strong = fit_elo(["a", "b", "W"], results, prior_games=4.0)
    assert strong.prior_games == 4.0
    assert 0 < strong.elo[2] < ratings.elo[2]


def test_one_sided_group_falls_back_to_prior():
    # {A, B} always beat {C, D}: connected by games, but the MLE gap is infinite.
    results = [(0, 1, 6.0, 10), (2, 3, 4.0, 10), (0, 2, 10.0, 10), (1, 3, 10.0, 10)]
    ratings = fit_elo(list("ABCD"), results)
    assert ratings.prior_games == FALLBACK_PRIOR_GAMES
    assert np.all(np.isfinite(ratings.elo))
    assert set(ratings.order()[:2].tolist()) == {0, 1}


def test_small_prior_barely_moves_well_determined_fit():
    results = exact_round_robin(TRUE, 1000)
    plain = fit_elo(NAMES, results)
    with_prior = fit_elo(NAMES, results, prior_games=1.0)
    assert np.max(np.abs(with_prior.elo - plain.elo)) < 2.0
    # Virtual draws shrink the spread.
    assert with_prior.elo[4] < plain.elo[4]


def test_disconnected_players_raise_naming_them():
    results = [(0, 1, 3.0, 5), (2, 3, 2.0, 5)]
    with pytest.raises(ValueError, match=r"\['C', 'D'\]"):
        fit_elo(list("ABCD"), results)
    with pytest.raises(ValueError, match=r"\['E'\]"):
        fit_elo(list("ABCDE"), [(0, 1, 1.0, 2), (1, 2, 1.0, 2), (2, 3, 1.0, 2)] + [(0, 3, 1, 2)])


@pytest.mark.parametrize("names, results, kwargs, match", [
    (["A", "B"], [(0, 2, 1.0, 2)], {}, "out of range"),
    (["A", "B"], [(-1, 1, 1.0, 2)], {}, "out of range"),
    (["A", "B"], [(0.5, 1, 1.0, 2)], {}, "integers"),
    (["A", "B"], [(1, 1, 1.0, 2)], {}, "itself"),
    (["A", "B"], [(0, 1, 0.0, 0)], {}, "games must be > 0"),
    (["A", "B"], [(0, 1, 1.0, -3)], {}, "games must be > 0"),
    (["A", "B"], [(0, 1, 3.0, 2)], {}, r"score must be in \[0, n\]"),
    (["A", "B"], [(0, 1, -0.5, 2)], {}, r"score must be in \[0, n\]"),
    (["A", "B"], [(0, 1, float("nan"), 2)], {}, r"score must be in \[0, n\]"),
    (["A", "B"], [(0, 1, 1.0, 2)], {"anchor": "Z"}, "unknown anchor"),
    (["A", "B"], [(0, 1, 1.0, 2)], {"anchor": 5}, "anchor index"),
    (["A", "B"], [(0, 1, 1.0, 2)], {"prior_games": -1.0}, "prior_games"),
    (["A"], [], {}, "at least 2 players"),
    (["A", "A"], [(0, 1, 1.0, 2)], {}, "duplicate"),
])
def test_validation_errors(names, results, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fit_elo(names, results, **kwargs)


def test_interval_level_validation():
    ratings = fit_elo(["A", "B"], [(0, 1, 1.0, 2)])
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="level"):
            ratings.interval(level)


def test_table_and_as_dict():
    shuffled = [4, 0, 3, 1, 2]
    names = [NAMES[p] for p in shuffled]
    ratings = fit_elo(names, exact_round_robin(TRUE[shuffled], 100), anchor="A")
    table = ratings.table()
    lines = table.splitlines()
    assert lines[0].startswith("| rank | name | Elo | 95% CI | games |")
    rows = lines[2:]
    assert len(rows) == 5
    assert [row.split("|")[2].strip() for row in rows] == ["E", "D", "C", "B", "A"]
    assert [int(row.split("|")[1]) for row in rows] == [1, 2, 3, 4, 5]
    assert [int(row.split("|")[3]) for row in rows] == [700, 400, 200, 100, 0]
    assert "anchor" in rows[-1]
    for name in NAMES:
        assert f"| {name} |" in table
    info = ratings.as_dict()
    assert set(info) == set(NAMES)
    bounds = ratings.interval()
    for p, name in enumerate(names):
        entry = info[name]
        assert set(entry) == {"elo", "low", "high", "stderr", "games"}
        assert entry["elo"] == pytest.approx(TRUE[shuffled[p]], abs=1e-3)
        assert (entry["low"], entry["high"]) == (bounds[p, 0], bounds[p, 1])
        assert entry["games"] == 400 and isinstance(entry["games"], int)


def test_score_to_elo_and_expected_score():
    assert score_to_elo(0.5) == 0.0
    assert expected_score(0.0) == 0.5
    assert expected_score(200.0) == pytest.approx(0.7597469, abs=1e-6)
    assert expected_score(-200.0) == pytest.approx(1 - 0.7597469, abs=1e-6)
    for diff in (-600.0, -123.4, 0.0, 55.0, 400.0, 750.0):
        assert score_to_elo(expected_score(diff)) == pytest.approx(diff, abs=1e-6)
    assert score_to_elo(0.0) == -800.0
    assert score_to_elo(1.0) == 800.0
    assert score_to_elo(0.9999) == 800.0  # clipped
    assert score_to_elo(0.0001) == -800.0
    with pytest.raises(ValueError):
        score_to_elo(1.2)
