"""The summaries of a sweep's table and plot, each fitting its metric, each seed one draw:
a share's mean with a t-interval clipped to [0, 1], a flag as k of m seeds with an exact
interval, another mean with a t-interval, a time to perfect play (censored at the budget)
as seeds reached and their median. Their coverage: tests/test_interval_coverage.py."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy import stats

from azjax.evaluation.stats import (
    flag_ci,
    mean_ci,
    normal_quantile,
    paired_difference,
    share_ci,
    welch_difference,
    wilson_interval,
)
from azjax.run import metric_schema as ms
from azjax.sweep import plots
from azjax.sweep.table import (
    CENSORED,
    FLAG,
    INTERVAL_TEXT,
    PLAIN,
    SHARE,
    T_INTERVAL,
    best_config,
    censored_summary,
    interval_kind,
    markdown_table,
    mean_interval,
    results_table,
    write_csv,
)

# ------------------------------------------------------------------------ intervals


def test_three_seeds_at_100_percent_get_an_interval_that_is_not_a_point():
    # The exact interval for 3 of 3: (0.025)^(1/3) = 0.292 at its low end.
    for metric in ("net_optimal_share", "net_unbeatable"):
        mean, low, high = mean_interval(metric, [1.0, 1.0, 1.0])
        assert mean == 1.0 and high == 1.0
        assert low == pytest.approx(0.025 ** (1 / 3), abs=1e-6), metric
    mean, low, high = share_ci([0.0, 0.0, 0.0, 0.0])
    assert (mean, low) == (0.0, 0.0) and high == pytest.approx(1 - 0.025 ** 0.25, abs=1e-6)


def test_a_share_gets_the_t_interval_clipped_to_the_unit_interval():
    values = [0.52, 0.61, 0.58]
    mean, low, high = share_ci(values)
    t = 4.302652729749462  # Student's t, 97.5% quantile, 2 degrees of freedom
    half = t * float(np.std(values, ddof=1)) / math.sqrt(3)
    assert (mean, low, high) == pytest.approx((0.57, 0.57 - half, 0.57 + half))
    # Where the t-interval passes 100% (and 0%) the share's is clipped, and says so.
    _, low, high = mean_ci([0.0, 1.0, 1.0])
    assert high > 1.0 and low < 0.0
    assert share_ci([0.0, 1.0, 1.0]) == pytest.approx((2 / 3, 0.0, 1.0))
    assert "clipped" in INTERVAL_TEXT[SHARE]
    one = share_ci([0.7])
    assert one[0] == 0.7 and math.isnan(one[1]) and math.isnan(one[2])
    assert all(math.isnan(x) for x in share_ci([]))
    inside = share_ci([0.4, 0.4])  # no spread inside (0, 1): nothing to scale by
    assert inside[0] == 0.4 and math.isnan(inside[1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        share_ci([0.5, 1.5])
    with pytest.raises(ValueError, match="confidence level"):
        share_ci(values, level=1.0)


def test_a_flag_is_k_of_m_seeds_with_the_clopper_pearson_interval():
    share, low, high = flag_ci([1, 0, 1, 1])
    assert share == 0.75
    # Clopper-Pearson bounds for 3 of 4: the 2.5% quantile of Beta(3, 2) and 0.975^(1/4).
    assert (low, high) == pytest.approx((0.194120, 0.975 ** 0.25), abs=1e-6)
    assert flag_ci([0, 0]) == pytest.approx((0.0, 0.0, 1 - 0.025 ** 0.5))
    with pytest.raises(ValueError, match="0 or 1"):
        flag_ci([1, 0.5])
    # A flag averaged over a run's evaluations is a share, not k of m.
    assert mean_interval("net_unbeatable", [1.0, 0.5, 1.0]) == share_ci([1.0, 0.5, 1.0])


def test_seed_level_comparisons_are_the_paired_and_welch_t_tests():
    a, b = [0.40, 0.45, 0.38, 0.50], [0.47, 0.49, 0.46, 0.55]
    diff, low, high, p = paired_difference(a, b)
    d = np.subtract(b, a)
    assert diff == pytest.approx(d.mean())
    t = d.mean() / (d.std(ddof=1) / 2)  # 4 pairs: 3 degrees of freedom
    assert t == pytest.approx(6.57, abs=0.01)  # differences 0.07, 0.04, 0.08, 0.05
    assert p == pytest.approx(2 * stats.t.sf(t, 3))
    assert (low, high) == pytest.approx((d.mean() - 3.1824 * d.std(ddof=1) / 2,
                                         d.mean() + 3.1824 * d.std(ddof=1) / 2), abs=1e-4)
    diff, low, high, p = welch_difference(a, b)
    assert diff == pytest.approx(np.mean(b) - np.mean(a)) and low < diff < high
    assert p > paired_difference(a, b)[3]  # pairing removes the seeds' shared spread
    with pytest.raises(ValueError, match="one per seed"):
        paired_difference([0.1, 0.2], [0.3])


def test_wilson_interval_at_none_and_all_of_n():
    z2 = normal_quantile(0.95) ** 2
    low, high = wilson_interval(0.0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.2775, abs=5e-5)
    assert high == pytest.approx(z2 / (10 + z2))  # the closed form at 0 of n
    low, high = wilson_interval(1.0, 10)
    assert low == pytest.approx(0.7225, abs=5e-5) and high == 1.0
    assert low == pytest.approx(10 / (10 + z2))


# ------------------------------------------------------------------------ the table


def test_each_metric_gets_the_summary_its_unit_allows():
    assert interval_kind("games_to_perfect") == CENSORED
    assert interval_kind("iterations_to_perfect") == CENSORED
    for share in ("net_optimal_share", "net_move_accuracy", "search_result_kept",
                  "net_value_accuracy", "vs random", "net_vs_random", "gate_score"):
        assert interval_kind(share) == SHARE, share
    assert interval_kind("net_unbeatable") == FLAG  # a 0/1 flag per seed: k of m
    for other in ("loss", "policy_loss", "margin vs gnugo:1"):
        assert interval_kind(other) == T_INTERVAL, other
    for undeclared in ("not_a_metric", "net_my_figure"):
        assert interval_kind(undeclared) == PLAIN, undeclared


def rows_of(values: dict[str, list[tuple[int, float]]], metric: str) -> list[dict[str, str]]:
    """Per-seed rows: config -> [(reached, value), ...]."""
    return [{"config": c, "x": c, "seed": str(s), "reached_perfect": str(r), metric: str(v)}
            for c, seeds in values.items() for s, (r, v) in enumerate(seeds)]


def test_shares_show_their_interval_in_brackets():
    rows = rows_of({"1": [(1, 1.0)] * 3, "2": [(0, 0.0)] * 3,
                    "3": [(1, 0.0), (1, 1.0), (1, 1.0)]}, "net_optimal_share")
    table = results_table(rows, ["x"], ["net_optimal_share"])
    got = [t[f"net_optimal_share_{k}"] for t in table for k in ("mean", "ci_low", "ci_high")]
    edge = 0.025 ** (1 / 3)  # the exact interval's end for 3 of 3 seeds at a bound
    assert got == pytest.approx([1.0, edge, 1.0, 0.0, 0.0, 1 - edge, 2 / 3, 0.0, 1.0])
    text = markdown_table(table, ["x"], ["net_optimal_share"])
    assert "| 1 | 3 | 3/3 | 100.00% [29.24, 100.00] |" in text
    assert "| 2 | 3 | 0/3 | 0.00% [0.00, 70.76] |" in text
    assert "| 3 | 3 | 3/3 | 66.67% [0.00, 100.00] |" in text
    assert "±" not in text


def test_an_unbounded_mean_keeps_its_t_interval():
    rows = [{"config": "a", "x": "1", "seed": str(s), "loss": str(v)}
            for s, v in enumerate([1.0, 2.0, 3.0])]
    table = results_table(rows, ["x"], ["loss"])
    half = 4.303 / math.sqrt(3)  # t(0.975, 2) x stdev 1 / sqrt(3)
    assert table[0]["loss_mean"] == 2.0
    assert table[0]["loss_ci_high"] - 2.0 == pytest.approx(half, abs=1e-3)
    assert "| 1 | 3 | 2 ± 2.48 |" in markdown_table(table, ["x"], ["loss"])


ERRORS = {"a": [(1, 0.1), (1, 0.2)], "b": [(1, 0.5), (1, 0.6)]}
"""A figure of a game's own, `net_error`, per seed: lower is better, not a share."""


def test_a_figure_no_one_declares_is_a_plain_mean_without_a_best():
    """Neither the schema nor the game says what `net_error` is: no share's interval or
    percent, no t-interval, no best configuration."""
    table = results_table(rows_of(ERRORS, "net_error"), ["x"], ["net_error"])
    assert interval_kind("net_error") == PLAIN
    assert [t["net_error_mean"] for t in table] == pytest.approx([0.15, 0.55])
    assert not any(k.startswith("net_error_ci") for t in table for k in t)
    text = markdown_table(table, ["x"], ["net_error"])
    assert "| a | 2 | 2/2 | 0.15 |" in text and "| b | 2 | 2/2 | 0.55 |" in text
    assert best_config(table, "net_error") is None
    with pytest.raises(ValueError, match="no better direction"):
        ms.best([0.1, 0.5], "net_error")


def test_a_figure_its_game_declares_gets_its_unit_and_direction():
    declared = ms.declare({"error": ("", ms.LOWER), "miss": (ms.SHARE, ms.LOWER)}, "g")
    assert declared["search_error"].better == ms.LOWER
    table = results_table(rows_of(ERRORS, "net_error"), ["x"], ["net_error"],
                          declared=declared)
    assert interval_kind("net_error", declared) == T_INTERVAL
    assert best_config(table, "net_error", declared)["config"] == "a"
    assert "| a | 2 | 2/2 | 0.15 ± 0.635 |" in markdown_table(table, ["x"], ["net_error"],
                                                              declared=declared)
    misses = results_table(rows_of(ERRORS, "net_miss"), ["x"], ["net_miss"],
                           declared=declared)
    assert interval_kind("net_miss", declared) == SHARE
    assert best_config(misses, "net_miss", declared)["config"] == "a"
    assert "| a | 2 | 2/2 | 15.00% [0.00, 78.53] |" in markdown_table(
        misses, ["x"], ["net_miss"], declared=declared)


@pytest.mark.parametrize("kinds, message", [
    ([("error", "lower")], "must return a dict"),
    ({"error": ("", "down")}, "'error'"),
    ({"error": "lower"}, "(unit, better)"),
    ({"": ("", "lower")}, "a name"),
])
def test_a_bad_declaration_is_one_line(kinds, message):
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        ms.declare(kinds, "g")
    assert "\n" not in str(caught.value) and "g.metric_kinds()" in str(caught.value)


CENSORED_ROWS = {
    "1": [(1, 10.0), (1, 30.0), (1, 20.0)],   # all reached: median 20
    "2": [(1, 10.0), (1, 40.0), (0, 100.0)],  # 2 of 3: median of 10 and 40, not the 100
    "3": [(0, 100.0), (0, 100.0), (0, 90.0)],  # none
}


def test_censored_times_are_seeds_reached_and_their_median():
    assert censored_summary([10, 40, 100], [True, True, False]) == (2, 25.0)
    count, median = censored_summary([100, 90], [False, False])
    assert count == 0 and math.isnan(median)
    table = results_table(rows_of(CENSORED_ROWS, "games_to_perfect"), ["x"],
                          ["games_to_perfect"])
    assert [t["reached_perfect"] for t in table] == [3, 2, 0]
    assert [t["games_to_perfect_median"] for t in table][:2] == [20.0, 25.0]
    assert math.isnan(table[2]["games_to_perfect_median"])
    assert not any(k.startswith("games_to_perfect_") and k != "games_to_perfect_median"
                   for t in table for k in t)  # no mean, no interval
    text = markdown_table(table, ["x"], ["games_to_perfect"])
    assert "| 1 | 3 | 3/3 | 3/3, median 20 |" in text
    assert "| 2 | 3 | 2/3 | 2/3, median 25 |" in text
    assert "| 3 | 3 | 0/3 | 0/3 |" in text
    assert "±" not in text and "≥" not in text


def test_results_csv_of_a_censored_metric_has_no_interval(tmp_path: Path):
    table = results_table(rows_of(CENSORED_ROWS, "iterations_to_perfect"), ["x"],
                          ["iterations_to_perfect"])
    write_csv(tmp_path / "results.csv", table)
    text = (tmp_path / "results.csv").read_text()
    assert "±" not in text
    rows = list(csv.DictReader(text.splitlines()))
    assert list(rows[0]) == ["config", "x", "seeds", "reached_perfect",
                             "iterations_to_perfect_median"]
    assert [(r["reached_perfect"], r["iterations_to_perfect_median"]) for r in rows] == [
        ("3", "20.0"), ("2", "25.0"), ("0", "nan")]


def test_the_best_time_is_the_most_seeds_reaching_then_the_lower_median():
    values = {"1": [(1, 50.0), (1, 70.0)],   # 2/2, median 60
              "2": [(1, 20.0), (0, 30.0)],   # fastest seed, but 1/2
              "3": [(1, 90.0), (1, 40.0)],   # 2/2, median 65
              "4": [(0, 99.0), (0, 99.0)]}   # 0/2
    table = results_table(rows_of(values, "games_to_perfect"), ["x"], ["games_to_perfect"])
    assert best_config(table, "games_to_perfect")["config"] == "1"
    none = results_table(rows_of({"4": values["4"]}, "games_to_perfect"), ["x"],
                         ["games_to_perfect"])
    assert best_config(none, "games_to_perfect") is None


# ------------------------------------------------------------------------- the plot


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """plot_sweep's figure, kept instead of drawn to a file."""
    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: figures.append(self))

    def draw(rows, metrics):
        plots.plot_sweep(rows, ["x"], metrics, tmp_path / "sweep.png", title="t")
        return figures[-1].axes
    return draw


def test_plot_shows_the_median_of_reached_seeds_and_k_of_m(drawn):
    rows = rows_of(CENSORED_ROWS, "games_to_perfect")
    ax, = drawn(rows, ["games_to_perfect"])
    assert ax.get_title() == INTERVAL_TEXT[CENSORED]
    line = ax.lines[0]  # the errorbar's line: the reached configurations only
    assert list(line.get_xdata()) == [1.0, 2.0] and list(line.get_ydata()) == [20.0, 25.0]
    # Its bar: min-max of the reached seeds (10-30 and 10-40), not a symmetric interval.
    segments = ax.collections[0].get_segments()
    assert [tuple(s[:, 1]) for s in segments] == [(10.0, 30.0), (10.0, 40.0)]
    labels = {t.get_text(): t.xy for t in ax.texts}
    assert labels == {"2/3": (2.0, 25.0), "0/3": (3.0, 100.0)}  # 0/3 at the budget


def test_plot_of_an_undeclared_figure_has_no_interval(drawn):
    ax, = drawn(rows_of(ERRORS, "net_error"), ["net_error"])
    assert ax.get_title() == INTERVAL_TEXT[PLAIN]
    assert list(ax.lines[0].get_ydata()) == pytest.approx([0.15, 0.55])
    assert all(s[0, 1] == s[1, 1] for s in ax.collections[0].get_segments())  # no bars


def test_plot_of_a_share_keeps_its_interval_in_the_unit_range(drawn):
    rows = rows_of({"1": [(1, 0.0), (1, 1.0), (1, 1.0)], "2": [(1, 1.0)] * 3},
                   "net_optimal_share")
    ax, = drawn(rows, ["net_optimal_share"])
    assert ax.get_title() == INTERVAL_TEXT[SHARE]
    ends = [y for s in ax.collections[0].get_segments() for y in s[:, 1]]
    assert min(ends) == pytest.approx(0.0) and max(ends) == pytest.approx(1.0)
    loss = [{**r, "loss": str(r["net_optimal_share"])} for r in rows]
    ax, = drawn(loss, ["loss"])
    assert ax.get_title() == INTERVAL_TEXT[T_INTERVAL]
    assert max(y for s in ax.collections[0].get_segments() for y in s[:, 1]) > 1.0
