"""Learning-curve plots of a run, drawn from its metrics records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.run import metric_schema as ms


def preload() -> None:
    """Imports matplotlib (half a second), which `plot_run` would otherwise do at a run's
    first plot: the driver calls it while its first step compiles (once per process)."""
    # Figures made without pyplot need no backend, so a notebook's inline backend is left
    # alone.
    import matplotlib.figure  # noqa: F401


def _series(records: Sequence[dict[str, Any]], key: str):
    points = [(r[ms.GAMES.name], r[key]) for r in records if key in r]
    return [p[0] for p in points], [p[1] for p in points]


def plot_run(records: Sequence[dict[str, Any]], path: Path) -> None:
    """Losses, policy entropy, evaluation results and (in a game decided by points) the
    margins against baselines, against self-play games played."""
    from matplotlib.figure import Figure

    margins = ms.keys_of(records, ms.MARGIN)
    fig = Figure(figsize=(20 if margins else 15, 4))
    axes = fig.subplots(1, 4 if margins else 3)
    for loss in ms.LOSSES:
        axes[0].plot(*_series(records, loss.name), label=loss.label)
    axes[0].set_title(ms.LOSS.label)
    entropy = ms.POLICY_ENTROPY
    axes[1].plot(*_series(records, entropy.name), color="tab:purple")
    axes[1].set_title(f"{entropy.label} ({entropy.unit})")
    shown = [*ms.EVALUATION_SHOWN, *map(ms.metric, ms.keys_of(records, ms.VERSUS)),
             ms.GATE_SCORE]
    for metric in shown:
        x, y = _series(records, metric.name)
        if x:
            axes[2].plot(x, y, marker=".", label=metric.label)
    axes[2].set_title("evaluation")
    axes[2].set_ylim(-0.05, 1.05)
    for key in margins:
        axes[3].plot(*_series(records, key), marker=".", label=ms.metric(key).label)
    if margins:
        axes[3].axhline(0.0, color="grey", lw=0.8)
        axes[3].set_title("mean points margin against baselines")
    for ax in axes:
        ax.set_xlabel(ms.GAMES.label)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
