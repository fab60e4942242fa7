"""What the host says of a run: its status lines, its closing summary, and verdicts on
its records (is it over; did it diverge)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from azjax.evaluation.evaluators import MARGIN_PREFIX, METRIC_LABELS, OPPONENT_PREFIX
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.progress import format_duration


def format_progress(record: dict[str, Any], eta: float | None = None) -> str:
    """One status line for a metrics record (and the time left, when known)."""
    parts = [
        f"it {record['iteration']:>5}",
        f"games {record['games']:>8,}",
        f"{record['positions_per_s']:>8,.0f} pos/s",
    ]
    if "loss" in record and record.get("replay_sampleable", 1) == 0:
        # The gradient steps had no labelled position to learn from: nothing to show.
        parts.append("loss - (no game has ended yet)")
    elif "loss" in record:
        parts.append(f"loss {record['loss']:.3f} (v {record['value_loss']:.3f} "
                     f"p {record['policy_loss']:.3f})")
        parts.append(f"H {record['policy_entropy']:.2f}")
    for key, label in METRIC_LABELS.items():
        if key in record:
            value = record[key]
            shown = ("yes" if value else "no") if "unbeatable" in key else f"{100 * value:.1f}%"
            parts.append(f"{label} {shown}")
    for key, value in record.items():
        if key.startswith(OPPONENT_PREFIX):
            parts.append(f"{key} {100 * value:.1f}%")
        elif key.startswith(MARGIN_PREFIX):
            parts.append(f"{key} {value:+.1f}")
    if "gate_score" in record:
        verdict = "promoted" if record["promoted"] else "kept best"
        parts.append(f"gate {100 * record['gate_score']:.1f}% {verdict} "
                     f"(best it {record['best_iteration']})")
    parts.append(f"{record['wall_time']:.1f}s")
    if eta is not None:
        parts.append(f"ETA {format_duration(eta)}")
    return " | ".join(parts)


def budget_text(run: RunConfig) -> str:
    """A run's budget in words.

    Args:
      run: the run half of its config.

    Returns:
      E.g. '6 minutes (at most 100,000 iterations)', 'at most 300 iterations, sooner at
      perfect play'.
    """
    text = f"at most {run.iterations:,} iteration{'s' * (run.iterations != 1)}"
    if run.max_minutes > 0:
        text = f"{minutes_text(run.max_minutes)} ({text})"
    return text + (", sooner at perfect play" if run.stop_when_perfect else "")


def minutes_text(minutes: float) -> str:
    """'6 minutes', '1 minute', '0.5 minutes'."""
    return f"{minutes:g} minute{'s' * (minutes != 1)}"


def changed_settings(saved: TrainConfig, config: TrainConfig) -> list[str]:
    """The settings a resumed run would change, by name.

    Args:
      saved: the config the run began with.
      config: another config.

    Returns:
      The paths of the program settings (and 'seed') in which `config` differs from
      `saved`, sorted (`TrainConfig.program_differences` without the values).
    """
    return [line.split(":")[0] for line in saved.program_differences(config)]


def opening_line(name: str, preset: str, why: str, plan: str) -> str:
    """A run's first status line.

    Args:
      name: what the run trains (its recipe's name, or its game's).
      preset: its variant of the recipe ('' for a game of no recipe).
      why: why that preset.
      plan: what it will train and for how long (`azjax.driver.warm_up.plan`).

    Returns:
      '<name>, preset <preset> (<why>): <plan>'.
    """
    chosen = f"preset {preset}" if preset else "no preset"
    return f"{name}, {chosen} ({why}): {plan}"


def summarize(result: Any) -> str:
    """A closing summary of a run (a `TrainResult`)."""
    if result.perfect_at is None:
        last = result.records[-1] if result.records else {}
        evaluated = next((r for r in reversed(result.records) if "perfect" in r), {})
        shown = [
            f"{label} {100 * evaluated[key]:.1f}%"
            for key, label in METRIC_LABELS.items()
            if key in evaluated and "unbeatable" not in key
        ]
        tail = f"; last evaluation: {', '.join(shown)}" if shown else ""
        return f"finished {last.get('iteration', 0)} iterations{tail}"
    r = result.perfect_at
    return (
        f"perfect play (network alone: 100% optimal moves, unbeatable from both seats) after "
        f"{r['games']:,} games, iteration {r['iteration']}, {r['wall_time']:.1f}s"
    )


class TrainingDiverged(ValueError):
    """The loss or the network became NaN or infinite: the run stops without saving."""


LOSSES = ("loss", "value_loss", "policy_loss")


def divergence(record: dict[str, Any]) -> str | None:
    """What is not finite among a record's losses ('loss is nan'), or None."""
    bad = [k for k in LOSSES if k in record and not np.isfinite(record[k])]
    return f"{bad[0]} is {record[bad[0]]}" if bad else None


def diverged_text(what: str, iteration: int, saved_at: int) -> str:
    """The one line that says a run diverged, and what of it is kept."""
    return (f"training diverged: {what} at iteration {iteration}; nothing after iteration "
            f"{saved_at} was saved (train again in a new --run-dir with a lower "
            "--learner.learning-rate or another seed)")


def finished(run: RunConfig, records: Sequence[dict[str, Any]], iteration: int) -> str | None:
    """Why a run that stands at `iteration` with these metrics records is over: 'perfect'
    (perfect play reached and `stop_when_perfect`), 'time' (its `max_minutes` used),
    'iterations' (its budget done); None while it is not."""
    if run.stop_when_perfect and any(r.get("perfect") for r in records):
        return "perfect"
    if run.max_minutes > 0 and records and records[-1]["wall_time"] >= 60 * run.max_minutes:
        return "time"
    if iteration >= run.iterations:
        return "iterations"
    return None
