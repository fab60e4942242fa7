"""Learning-curve plots of a run, drawn from its metrics records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.evaluation.evaluators import MARGIN_PREFIX, METRIC_LABELS, OPPONENT_PREFIX

PLOT_FILE = "training.png"
LOSS_KEYS = ("loss", "value_loss", "policy_loss")


def preload() -> None:
    """Imports matplotlib (half a second), which `plot_run` would otherwise do at a run's
    first plot: the driver calls it while its first step compiles (once per process)."""
    # Figures made without pyplot need no backend, so a notebook's inline backend is left
    # alone.
    import matplotlib.figure  # noqa: F401


def _series(records: Sequence[dict[str, Any]], key: str):
    points = [(r["games"], r[key]) for r in records if key in r]
    return [p[0] for p in points], [p[1] for p in points]


def plot_run(records: Sequence[dict[str, Any]], path: Path) -> None:
    """Losses, policy entropy, evaluation results and (in a game decided by points) the
    margins against baselines, against self-play games played."""
    from matplotlib.figure import Figure

    margins = sorted({k for r in records for k in r if k.startswith(MARGIN_PREFIX)})
    fig = Figure(figsize=(20 if margins else 15, 4))
    axes = fig.subplots(1, 4 if margins else 3)
    for key in LOSS_KEYS:
        axes[0].plot(*_series(records, key), label=key)
    axes[0].set_title("loss")
    axes[1].plot(*_series(records, "policy_entropy"), color="tab:purple")
    axes[1].set_title("policy entropy (nats)")
    opponents = sorted({k for r in records for k in r if k.startswith(OPPONENT_PREFIX)})
    labels = [*METRIC_LABELS.items(), *((k, k) for k in opponents), ("gate_score", "gate score")]
    for key, label in labels:
        x, y = _series(records, key)
        if x:
            axes[2].plot(x, y, marker=".", label=label)
    axes[2].set_title("evaluation")
    axes[2].set_ylim(-0.05, 1.05)
    for key in margins:
        axes[3].plot(*_series(records, key), marker=".", label=key)
    if margins:
        axes[3].axhline(0.0, color="grey", lw=0.8)
        axes[3].set_title("mean points margin against baselines")
    for ax in axes:
        ax.set_xlabel("self-play games")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
