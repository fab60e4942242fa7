"""The results of a sweep: per-run rows, a table per configuration, CSVs.

Each metric gets the summary over seeds that fits it (`interval_kind`), each seed one
draw: a share (in [0, 1]) the mean with a 95% Student-t interval clipped to [0, 1] (or,
where every seed sits at 0% or 100%, the exact interval for m of m seeds there); a 0/1
flag k of m seeds with the exact (Clopper-Pearson) 95% interval; any other mean (a
loss) a 95% Student-t interval; a time to perfect play, censored at the budget for a seed that never got there, no mean
at all but how many seeds reached it and the median of those that did; a figure of the
game's own that neither the schema nor the game declares (`Env.metric_kinds`) the plain
mean, with no interval and no best configuration.

The functions take the game's declared figures (`declared`: `metric_schema.declare`,
an evaluator's `declared_metrics`); without them, every game's own figure is undeclared.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from azjax.evaluation.stats import flag_ci, mean_ci, share_ci
from azjax.run import metric_schema as ms

REACHED = "reached_perfect"
BUDGET = "budget"
"""The iterations a run's figures stand for (seeds.csv), and a configuration's ('N', or
'LOW-HIGH' where its runs' differ; results.csv)."""
TIME_METRICS = ("games_to_perfect", "iterations_to_perfect")
"""Censored metrics: a run that never gets there counts its budget and `reached_perfect=0`."""
CENSORED, SHARE, FLAG, T_INTERVAL, PLAIN = "censored", "share", "flag", "t", "plain"
"""How a metric is summarised over seeds (`interval_kind`)."""
Declared = Mapping[str, ms.Metric] | None
"""The game's own figures' descriptions by key (`metric_schema.declare`), or None."""
INTERVAL_TEXT = {
    CENSORED: "median of the seeds that reached it, bar min-max\n"
              "k/m: seeds that reached it; x: none did (at the budget)",
    SHARE: "mean, 95% t-interval clipped to [0, 1]",
    FLAG: "seeds with it, exact 95% interval",
    T_INTERVAL: "mean, 95% t-interval",
    PLAIN: "mean (no interval: the game does not declare what it is)",
}
"""What each kind of summary shows, as the plots' panel titles say it."""


def interval_kind(metric: str, declared: Declared = None) -> str:
    """How `metric` is summarised over seeds.

    Args:
      metric: a metric column ('games_to_perfect', 'net_optimal_share', 'loss', ...).
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      CENSORED for a time to perfect play (`TIME_METRICS`); for a metric whose unit
      `azjax.run.metric_schema` or the game declares, SHARE for a share, FLAG for a 0/1
      flag and T_INTERVAL for another unit; PLAIN for anything else.
    """
    if metric in TIME_METRICS:
        return CENSORED
    known = ms.declared_metric(metric, declared)
    if known is None:
        return PLAIN
    return {ms.SHARE: SHARE, ms.FLAG: FLAG}.get(known.unit, T_INTERVAL)


def reached_values(values: Sequence[float], reached: Sequence[bool]) -> list[float]:
    """The values of the seeds that reached perfect play, in order.

    Args:
      values: a censored metric per seed (the budget where it was not reached).
      reached: per seed, whether it reached perfect play.

    Returns:
      The values whose seed reached it.
    """
    return [v for v, r in zip(values, reached) if r]


def censored_summary(values: Sequence[float], reached: Sequence[bool]
                     ) -> tuple[int, float]:
    """(k, median): how many seeds reached perfect play and the median of their values.

    Args:
      values: a censored metric per seed.
      reached: per seed, whether it reached perfect play.

    Returns:
      The count and the median of the reached seeds' values (nan when none did).
    """
    got = reached_values(values, reached)
    return len(got), float(np.median(got)) if got else math.nan


def mean_interval(metric: str, values: Sequence[float], declared: Declared = None
                  ) -> tuple[float, float, float]:
    """(mean, low, high) of a metric that is not censored, over seeds: the clipped
    t-interval for a share (`share_ci`), the exact interval for k of m seeds with a flag
    (`flag_ci`; a flag averaged inside a run, not 0 or 1, counts as a share), the
    t-interval for another mean, none for an undeclared figure (`interval_kind`).

    Args:
      metric: the metric column.
      values: its value per seed.
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      The mean and the 95% interval's bounds (nan bounds for one seed or no interval).
    """
    kind = interval_kind(metric, declared)
    if kind == PLAIN:
        return float(np.mean(values)), math.nan, math.nan
    if kind == FLAG and all(v in (0.0, 1.0) for v in values):
        return flag_ci(values)
    return share_ci(values) if kind in (SHARE, FLAG) else mean_ci(values)


def better(metric: str, declared: Declared = None) -> str:
    """Which way a column of the table is better: a time to perfect play lower, a
    metric of the runs' records as `azjax.run.metric_schema` or the game declares it
    (NONE for others).

    Args:
      metric: a metric column ('games_to_perfect', 'net_optimal_share', ...).
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      `ms.HIGHER`, `ms.LOWER` or `ms.NONE`.
    """
    if metric in TIME_METRICS:
        return ms.LOWER
    known = ms.declared_metric(metric, declared)
    return ms.NONE if known is None else known.better


def best_config(table: Sequence[dict[str, Any]], metric: str, declared: Declared = None
                ) -> dict[str, Any] | None:
    """The configuration of `table` (`results_table`) with the best value of `metric`.

    A time to perfect play is censored for a seed that never got there, so there the
    configuration where the most seeds (as a share of its seeds) got there wins, and
    the lower median of those seeds decides among equals; elsewhere the best mean.

    Args:
      table: rows of `results_table`.
      metric: one of its metric columns.
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      The best row (the first of equals), or None where the metric has no better
      direction (an undeclared figure has none), no row has a mean of it or, for a time,
      no seed of any row got there.
    """
    if better(metric, declared) == ms.NONE:
        return None
    if interval_kind(metric) == CENSORED:
        rows = [r for r in table if r.get(REACHED, 0) > 0
                and not math.isnan(r.get(f"{metric}_median", math.nan))]
        return min(rows, key=lambda r: (-r[REACHED] / r["seeds"], r[f"{metric}_median"]),
                   default=None)
    rows = [r for r in table if not math.isnan(r.get(f"{metric}_mean", math.nan))]
    return ms.best(rows, metric, lambda r: r[f"{metric}_mean"], declared) if rows else None


def param_columns(header: Sequence[str]) -> list[str]:
    """The swept settings' columns of a per-seed CSV (between 'config' and 'seed')."""
    return list(header[header.index("config") + 1: header.index("seed")])


def _sort_key(text: str):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def summarise(metric: str, members: Sequence[dict[str, str]], declared: Declared = None
              ) -> dict[str, float]:
    """One metric of one configuration over its seeds, as `interval_kind` says.

    Args:
      metric: the metric column.
      members: the configuration's per-seed rows (a censored metric needs their
        `reached_perfect`).
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      For a censored metric `<metric>_median` (of the seeds that reached perfect play;
      nan when none did); for an undeclared figure `<metric>_mean` alone; else
      `<metric>_mean`, `<metric>_ci_low` and `<metric>_ci_high` (`mean_interval`; nan
      bounds for one seed).
    """
    values = [float(m[metric]) for m in members]
    kind = interval_kind(metric, declared)
    if kind == CENSORED:
        _, median = censored_summary(values, [int(m[REACHED]) > 0 for m in members])
        return {f"{metric}_median": median}
    mean, low, high = mean_interval(metric, values, declared)
    if kind == PLAIN:
        return {f"{metric}_mean": mean}
    return {f"{metric}_mean": mean, f"{metric}_ci_low": low, f"{metric}_ci_high": high}


def budget_span(budgets: Sequence[str]) -> str:
    """The budget of a configuration: its runs' one budget, or the range where they
    differ, so that a row pooling unequal budgets says so.

    Args:
      budgets: each run's budget in iterations (seeds.csv's `budget`).

    Returns:
      'N', or 'LOW-HIGH'.
    """
    values = sorted({int(float(b)) for b in budgets})
    return str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"


def results_table(rows: Sequence[dict[str, str]], params: Sequence[str],
                  metrics: Sequence[str], declared: Declared = None) -> list[dict[str, Any]]:
    """One row per configuration: its settings, the seed count, the iterations its runs
    stand for (`budget_span`, where the rows say), how many seeds reached perfect play
    (where the rows say) and each metric summarised by `summarise`.

    Args:
      rows: per-seed rows (seeds.csv's, as text).
      params: the swept settings' columns.
      metrics: the metric columns to summarise.
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      The rows, sorted by the settings' values.
    """
    by_config: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_config.setdefault(row["config"], []).append(row)
    table = []
    for label, members in by_config.items():
        out: dict[str, Any] = {"config": label}
        out.update({p: members[0][p] for p in params})
        out["seeds"] = len(members)
        if BUDGET in members[0]:
            out[BUDGET] = budget_span([m[BUDGET] for m in members])
        if REACHED in members[0]:
            out[REACHED] = sum(int(m[REACHED]) for m in members)
        for metric in metrics:
            if metric in members[0]:
                out.update(summarise(metric, members, declared))
        table.append(out)
    table.sort(key=lambda r: [_sort_key(r[p]) for p in params])
    return table


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Writes rows (all with the same keys) atomically."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["config"])
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def _number(x: float) -> str:
    if math.isnan(x):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _cell(row: dict[str, Any], metric: str, declared: Declared) -> str:
    """One metric of one configuration as the Markdown table shows it."""
    kind = interval_kind(metric, declared)
    if kind == CENSORED:
        text = f"{row[REACHED]}/{row['seeds']}"
        median = row[f"{metric}_median"]
        return text if math.isnan(median) else f"{text}, median {_number(median)}"
    if kind == PLAIN:
        return _number(row[f"{metric}_mean"])
    mean, low, high = (row[f"{metric}_{part}"] for part in ("mean", "ci_low", "ci_high"))
    if kind in (SHARE, FLAG):  # in percent; a clipped or exact interval need not be symmetric
        text = f"{100 * mean:.2f}%"
        return text if math.isnan(high) else f"{text} [{100 * low:.2f}, {100 * high:.2f}]"
    text = _number(mean)
    return text if math.isnan(high) else f"{text} ± {_number(high - mean)}"


def markdown_table(table: Sequence[dict[str, Any]], params: Sequence[str],
                   metrics: Sequence[str], declared: Declared = None) -> str:
    """The results table as Markdown, each metric as `interval_kind` summarises it.

    A share or flag is its mean in percent with its interval, '99.45% [98.20, 100.00]'; another mean '0.52 ± 0.03' (the t-interval's half-width); a time to perfect
    play 'k/m, median X' (k of the m seeds reached it, X the median of those k), or
    'k/m' alone where none did; an undeclared figure its mean alone, '0.52'. A column
    of budgets (iterations) follows the seeds where the rows' budgets differ.

    Args:
      table: rows of `results_table`.
      params: the swept settings' columns.
      metrics: the metric columns to show (those the table has).
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      The Markdown text.
    """
    def has(metric: str) -> bool:
        key = "median" if interval_kind(metric, declared) == CENSORED else "mean"
        return bool(table) and f"{metric}_{key}" in table[0]

    metrics = [m for m in metrics if has(m)]
    # Budgets shown only where they differ, within a row or between rows (a swept
    # `iterations`); one budget for every row is the command's.
    budgets = len({row.get(BUDGET) for row in table}) > 1 or any(
        "-" in str(row.get(BUDGET, "")) for row in table)
    head = [p.split(".")[-1] for p in params] + ["seeds"] + [BUDGET] * budgets
    if table and REACHED in table[0]:
        head.append("perfect")
    head += metrics
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = [row[p] for p in params] + [str(row["seeds"])]
        if budgets:
            cells.append(str(row.get(BUDGET, "")))
        if REACHED in row:
            cells.append(f"{row[REACHED]}/{row['seeds']}")
        cells += [_cell(row, m, declared) for m in metrics]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
