"""Plots of a sweep: each metric against each swept setting, summarised over seeds as
the table does (`azjax.sweep.table.interval_kind`): a share's mean with its clipped
t-interval, a flag's share of seeds with its exact interval, another mean with its
t-interval, a time to perfect play as the median of the
seeds that reached it, a figure the game does not declare as its mean alone."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

# A Figure made without pyplot needs no backend (a notebook's stays as it is).
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from azjax.sweep.table import (
    CENSORED,
    INTERVAL_TEXT,
    REACHED,
    Declared,
    censored_summary,
    interval_kind,
    mean_interval,
    reached_values,
)


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


def _point(metric: str, members: Sequence[dict[str, str]], declared: Declared
           ) -> tuple[float, float, float, int] | None:
    """One point of a line: (y, below, above, reached) for the seeds `members`.

    Args:
      metric: the metric column.
      members: the per-seed rows at that point.
      declared: the game's own figures' descriptions (`Declared`).

    Returns:
      The centre, the bar's extent below and above it (0 without an interval) and, for
      a censored metric, how many seeds reached perfect play (else the seed count);
      None for a censored metric no seed reached.
    """
    values = [float(r[metric]) for r in members]
    kind = interval_kind(metric, declared)
    if kind == CENSORED:
        reached = [int(r[REACHED]) > 0 for r in members]
        got = reached_values(values, reached)
        if not got:
            return None
        count, median = censored_summary(values, reached)
        return median, median - min(got), max(got) - median, count
    mean, low, high = mean_interval(metric, values, declared)
    if math.isnan(low):  # one seed, or an undeclared figure: no interval
        return mean, 0.0, 0.0, len(values)
    return mean, mean - low, high - mean, len(values)


def _draw_line(ax: Axes, metric: str, points: Sequence[tuple[float, list[dict[str, str]]]],
               label: str | None, declared: Declared) -> None:
    """One line of a panel: its points with their bars; for a censored metric, hollow
    markers labelled k/m where only k of the m seeds reached perfect play, and an 'x'
    labelled 0/m at the budget (the largest censored value) where none did."""
    xs, ys, below, above, partial, none = [], [], [], [], [], []
    for x, members in points:
        point = _point(metric, members, declared)
        if point is None:
            none.append((x, max(float(r[metric]) for r in members), len(members)))
            continue
        y, low, high, reached = point
        xs.append(x)
        ys.append(y)
        below.append(low)
        above.append(high)
        if reached < len(members):
            partial.append((x, y, f"{reached}/{len(members)}"))
    bars = ax.errorbar(xs, ys, yerr=[below, above], marker="o", capsize=3, label=label)
    color = bars[0].get_color()
    for x, y, text in partial:
        ax.plot([x], [y], "o", color=color, markersize=9, markerfacecolor="white",
                markeredgecolor=color)
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=7,
                    color=color)
    for x, budget, seeds in none:
        ax.plot([x], [budget], "x", color=color, markersize=8)
        ax.annotate(f"0/{seeds}", (x, budget), textcoords="offset points", xytext=(6, 4),
                    fontsize=7, color=color)


def plot_sweep(rows: Sequence[dict[str, str]], params: Sequence[str], metrics: Sequence[str],
               path: Path, title: str = "", declared: Declared = None) -> None:
    """One panel per (metric, swept setting): the metric over seeds against the setting's
    values, as `interval_kind` summarises it (the panel's title says how). With a second
    swept setting there is one line per value of it (the first other setting with
    several values); seeds of any further settings are pooled. A time to perfect play
    is the median of the seeds that reached it with their min-max as the bar; a hollow
    marker labelled k/m where only k of the m seeds did, an 'x' labelled 0/m at the
    budget where none did (never a mean: the others are censored).

    Args:
      rows: per-seed rows (seeds.csv's, as text).
      params: the swept settings' columns.
      metrics: the metric columns, one row of panels each.
      path: the image file to write.
      title: the figure's title ('' for none).
      declared: the game's own figures' descriptions (`azjax.sweep.table.Declared`).

    Returns:
      None; the figure is written to `path` (nothing where there is nothing to plot).
    """
    swept = [p for p in params if len({r[p] for r in rows}) > 1] or list(params)[:1]
    metrics = list(metrics)
    if not swept or not metrics:
        return
    fig = Figure(figsize=(4.6 * len(swept), 3.6 * len(metrics)))
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
                points = []
                for x, pos in zip(x_values, positions):
                    members = [r for r in rows if r[param] == x and (
                        other is None or r[other] == line)]
                    if members:
                        points.append((pos, members))
                label = f"{other.split('.')[-1]}={line}" if other else None
                _draw_line(ax, metric, points, label, declared)
            if numbers and min(numbers) > 0 and max(numbers) / min(numbers) >= 8:
                ax.set_xscale("log", base=2 if all(n == int(n) for n in numbers) else 10)
                ax.set_xticks(numbers, x_values)
                ax.minorticks_off()
            elif not numbers:
                ax.set_xticks(positions, x_values)
            ax.margins(x=0.12, y=0.1)  # room for the k/m labels at the edges
            ax.set_title(INTERVAL_TEXT[interval_kind(metric, declared)], fontsize=8)
            ax.set_xlabel(param.split(".")[-1])
            ax.set_ylabel(metric.replace("_", " "))
            ax.grid(alpha=0.3)
            if other is not None:
                ax.legend(fontsize=8)
    if title:
        fig.suptitle(title + "  (over seeds; each panel's title says how)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
