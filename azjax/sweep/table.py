"""The results of a sweep: per-run rows, a table of means with 95% t-intervals, CSVs."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.evaluation.stats import mean_ci
from azjax.run import metric_schema as ms

REACHED = "reached_perfect"
TIME_METRICS = ("games_to_perfect", "iterations_to_perfect")
"""Censored metrics: a run that never gets there counts its budget and `reached_perfect=0`."""


def better(metric: str) -> str:
    """Which way a column of the table is better: a time to perfect play lower, a
    metric of the runs' records as `azjax.run.metric_schema` says (NONE for others).

    Args:
      metric: a metric column ('games_to_perfect', 'net_optimal_share', ...).

    Returns:
      `ms.HIGHER`, `ms.LOWER` or `ms.NONE`.
    """
    if metric in TIME_METRICS:
        return ms.LOWER
    return ms.metric(metric).better if ms.is_known(metric) else ms.NONE


def best_config(table: Sequence[dict[str, Any]], metric: str) -> dict[str, Any] | None:
    """The configuration of `table` (`results_table`) with the best mean of `metric`.

    A time to perfect play counts the budget for a seed that never got there, so there
    the configuration where the most seeds got there wins, and the mean decides among
    equals.

    Args:
      table: rows of `results_table`.
      metric: one of its metric columns.

    Returns:
      The best row (the first of equals), or None where the metric has no better
      direction or no row has a mean of it.
    """
    rows = [r for r in table if not math.isnan(r.get(f"{metric}_mean", math.nan))]
    if not rows or better(metric) == ms.NONE:
        return None
    if metric in TIME_METRICS:
        return min(rows, key=lambda r: (-r.get(REACHED, r["seeds"]) / r["seeds"],
                                        r[f"{metric}_mean"]))
    return ms.best(rows, metric, lambda r: r[f"{metric}_mean"])


def param_columns(header: Sequence[str]) -> list[str]:
    """The swept settings' columns of a per-seed CSV (between 'config' and 'seed')."""
    return list(header[header.index("config") + 1: header.index("seed")])


def _sort_key(text: str):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def results_table(rows: Sequence[dict[str, str]], params: Sequence[str],
                  metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per configuration: its settings, the seed count and, per metric, the mean
    and the 95% t-interval over seeds (plus how many seeds reached perfect play)."""
    by_config: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_config.setdefault(row["config"], []).append(row)
    table = []
    for label, members in by_config.items():
        out: dict[str, Any] = {"config": label}
        out.update({p: members[0][p] for p in params})
        out["seeds"] = len(members)
        if REACHED in members[0]:
            out[REACHED] = sum(int(m[REACHED]) for m in members)
        for metric in metrics:
            if metric not in members[0]:
                continue
            mean, low, high = mean_ci([float(m[metric]) for m in members])
            out[f"{metric}_mean"], out[f"{metric}_ci_low"], out[f"{metric}_ci_high"] = (
                mean, low, high
            )
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


def markdown_table(table: Sequence[dict[str, Any]], params: Sequence[str],
                   metrics: Sequence[str]) -> str:
    """The results table as Markdown: mean +- 95% CI half-width per metric; shares in %;
    a time to perfect play is marked '>=' when some seed never got there (censored)."""
    metrics = [m for m in metrics if table and f"{m}_mean" in table[0]]
    head = [p.split(".")[-1] for p in params] + ["seeds"]
    if table and REACHED in table[0]:
        head.append("perfect")
    head += metrics
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = [row[p] for p in params] + [str(row["seeds"])]
        if REACHED in row:
            cells.append(f"{row[REACHED]}/{row['seeds']}")
        for m in metrics:
            mean, high = row[f"{m}_mean"], row[f"{m}_ci_high"]
            if m not in TIME_METRICS and ms.is_known(m) and ms.metric(m).unit == ms.SHARE:
                # in percent, two decimals
                text = f"{100 * mean:.2f}%"
                if not math.isnan(high):
                    text += f" ± {100 * (high - mean):.2f}"
            else:
                text = _number(mean)
                if not math.isnan(high):
                    text += f" ± {_number(high - mean)}"
            if m in TIME_METRICS and row.get(REACHED, row["seeds"]) < row["seeds"]:
                text = "≥ " + text
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
