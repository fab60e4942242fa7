"""The results of a sweep: per-run rows, a table of means with 95% t-intervals, CSVs."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.evaluation.stats import mean_ci

REACHED = "reached_perfect"
TIME_METRICS = ("games_to_perfect", "iterations_to_perfect")
"""Censored metrics: a run that never gets there counts its budget and `reached_perfect=0`."""


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
            if "share" in m or "accuracy" in m:  # in percent, two decimals
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
