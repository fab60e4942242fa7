"""Plots of a sweep: each metric against each swept setting, mean and 95% t-interval."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

# A Figure made without pyplot needs no backend (a notebook's stays as it is).
from matplotlib.figure import Figure

from azjax.evaluation.stats import mean_ci
from azjax.sweep.table import REACHED, TIME_METRICS


def _numeric(values: Sequence[str]) -> list[float] | None:
    try:
        return [float(v) for v in values]
    except ValueError:
        return None


def _ordered(values) -> list[str]:
    """Distinct values, numbers in numeric order, others in order of appearance."""
    distinct = list(dict.fromkeys(values))
    numbers = _numeric(distinct)
    return [v for _, v in sorted(zip(numbers, distinct))] if numbers else distinct


def plot_sweep(rows: Sequence[dict[str, str]], params: Sequence[str], metrics: Sequence[str],
               path: Path, title: str = "") -> None:
    """One panel per (metric, swept setting): the metric's mean over seeds with a 95%
    t-interval against the setting's values. With a second swept setting there is one
    line per value of it (the first other setting with several values); seeds of any
    further settings are pooled. Hollow markers: some runs there never reached perfect
    play, so a time to it is a lower bound (censored at the budget)."""
    swept = [p for p in params if len({r[p] for r in rows}) > 1] or list(params)[:1]
    metrics = list(metrics)
    if not swept or not metrics:
        return
    fig = Figure(figsize=(4.6 * len(swept), 3.4 * len(metrics)))
    axes = fig.subplots(len(metrics), len(swept), squeeze=False)
    for col, param in enumerate(swept):
        x_values = _ordered(r[param] for r in rows)
        numbers = _numeric(x_values)
        positions = numbers if numbers else list(range(len(x_values)))
        others = [p for p in swept if p != param]
        other = others[0] if others else None
        lines = _ordered(r[other] for r in rows) if other else [None]
        for row_index, metric in enumerate(metrics):
            ax = axes[row_index][col]
            for line in lines:
                xs, means, errors, censored = [], [], [], []
                for x, pos in zip(x_values, positions):
                    members = [r for r in rows if r[param] == x and (
                        other is None or r[other] == line)]
                    if not members:
                        continue
                    mean, _, high = mean_ci([float(r[metric]) for r in members])
                    xs.append(pos)
                    means.append(mean)
                    errors.append(0.0 if math.isnan(high) else high - mean)
                    censored.append(metric in TIME_METRICS and any(
                        r.get(REACHED) == "0" for r in members))
                label = f"{other.split('.')[-1]}={line}" if other else None
                bars = ax.errorbar(xs, means, yerr=errors, marker="o", capsize=3, label=label)
                color = bars[0].get_color()
                hollow = [(x, m) for x, m, c in zip(xs, means, censored) if c]
                if hollow:
                    ax.plot(*zip(*hollow), "o", color=color, markersize=9,
                            markerfacecolor="white", markeredgecolor=color)
            if numbers and min(numbers) > 0 and max(numbers) / min(numbers) >= 8:
                ax.set_xscale("log", base=2 if all(n == int(n) for n in numbers) else 10)
                ax.set_xticks(numbers, x_values)
                ax.minorticks_off()
            elif not numbers:
                ax.set_xticks(positions, x_values)
            ax.set_xlabel(param.split(".")[-1])
            ax.set_ylabel(metric.replace("_", " "))
            ax.grid(alpha=0.3)
            if other is not None:
                ax.legend(fontsize=8)
    if title:
        fig.suptitle(title + "  (mean and 95% t-interval over seeds; hollow: some seeds "
                     "censored at the budget)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
