"""What the host says of a run: its status lines, its closing summary, and verdicts on
its records (is it over; did it diverge)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from azjax.run import metric_schema as ms
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.process.progress import format_duration


def _shown(metric: ms.Metric, value: float) -> str:
    """A value as the status line shows it: a flag as yes/no, a share in percent."""
    if metric.unit == ms.FLAG:
        return "yes" if value else "no"
    return f"{100 * value:.1f}%" if metric.unit == ms.SHARE else f"{value:+.1f}"


STALLED_ITERATIONS = 3
"""Iterations of positions past `learn_after` after which a run whose replay still holds
fewer than `learn_after` positions with a known outcome is said to be stalled."""


def learning_stalled(record: dict[str, Any], learn_after: int,
                     positions_per_iteration: int) -> str | None:
    """Why a run's network has not changed in a while, or None when it learns (or may
    yet start to, in the iterations a replay needs to fill).

    The gradient steps change the network only once the replay holds `learn_after`
    positions with a known outcome. A run that has played `STALLED_ITERATIONS`
    iterations of positions past that number and still holds fewer has its games in
    flight holding too many of the replay's positions: it may never learn.

    Args:
      record: a metrics record (`replay_sampleable`, `positions`).
      learn_after: the program's `learn_after`.
      positions_per_iteration: positions self-play plays per iteration.

    Returns:
      A phrase for the status line, or None.
    """
    held = record.get(ms.REPLAY_SAMPLEABLE.name)
    if not learn_after or held is None or held >= learn_after:
        return None
    played = record.get(ms.POSITIONS.name, 0)
    if played < learn_after + STALLED_ITERATIONS * positions_per_iteration:
        return None
    return (f"network unchanged: {played:,} positions played but the replay holds only "
            f"{held:,.0f} with a known outcome, fewer than learn_after {learn_after:,} "
            "(lower --learn-after or raise --replay-capacity)")


def format_progress(record: dict[str, Any], eta: float | None = None,
                    learn_after: int = 0, positions_per_iteration: int = 0) -> str:
    """One status line for a metrics record (and the time left, when known).

    Args:
      record: a metrics record (keys and labels: `azjax.run.metric_schema`).
      eta: seconds left, or None.
      learn_after: the program's `learn_after`: while the replay holds fewer positions
        with a known outcome, the network does not change and no loss is shown.
      positions_per_iteration: positions self-play plays per iteration
        (`learning_stalled`).

    Returns:
      'it 45 | games 13,545 | 4,513 pos/s | loss ... | <evaluation> | 40.6s | ETA 3m12s'.
    """
    loss, value, policy = ms.LOSSES
    parts = [
        f"{ms.ITERATION.status_label} {record[ms.ITERATION.name]:>5}",
        f"{ms.GAMES.status_label} {record[ms.GAMES.name]:>8,}",
        f"{record[ms.POSITIONS_PER_S.name]:>8,.0f} {ms.POSITIONS_PER_S.status_label}",
    ]
    held = record.get(ms.REPLAY_SAMPLEABLE.name, 1)
    stalled = learning_stalled(record, learn_after, positions_per_iteration)
    # Gradient steps with nothing to learn from are undone: no loss to show.
    if loss.name in record and held == 0:
        parts.append(f"{loss.status_label} - (no game has ended yet)")
    elif loss.name in record and stalled:
        parts.append(f"{loss.status_label} - ({stalled})")
    elif loss.name in record and held < learn_after:
        parts.append(f"{loss.status_label} - (learns after {learn_after:,} positions with "
                     f"a known outcome: {held:,.0f} so far)")
    elif loss.name in record:
        parts.append(f"{loss.status_label} {record[loss.name]:.3f} "
                     f"({value.status_label} {record[value.name]:.3f} "
                     f"{policy.status_label} {record[policy.name]:.3f})")
        parts.append(f"{ms.POLICY_ENTROPY.status_label} "
                     f"{record[ms.POLICY_ENTROPY.name]:.2f}")
    for metric in ms.EVALUATION_SHOWN:
        if metric.name in record:
            parts.append(f"{metric.status_label} {_shown(metric, record[metric.name])}")
    for key, value in record.items():  # the baselines in the order they were played
        if key.startswith((ms.VERSUS.prefix, ms.MARGIN.prefix)):
            metric = ms.metric(key)
            parts.append(f"{metric.status_label} {_shown(metric, value)}")
    gate = ms.GATE_SCORE
    if gate.name in record:
        verdict = "promoted" if record[ms.PROMOTED.name] else "kept best"
        parts.append(f"{gate.status_label} {_shown(gate, record[gate.name])} {verdict} "
                     f"(best it {record[ms.BEST_ITERATION.name]})")
    parts.append(f"{record[ms.WALL_TIME.name]:.1f}s")
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
      `saved`, sorted (`TrainConfig.program_changes`).
    """
    return list(saved.program_changes(config))


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


def summarize(result: Any, iterations: int = 0) -> str:
    """A closing summary of a run.

    Args:
      result: the run's `TrainResult`.
      iterations: the iterations asked for (0: not said); a run that had trained more
        before says so, since its figures are those of its own, larger budget.

    Returns:
      'finished N iterations; last evaluation: ...', 'perfect play ... after ...'.
    """
    if result.perfect_at is None:
        last = result.records[-1] if result.records else {}
        evaluated = next((r for r in reversed(result.records) if ms.PERFECT.name in r), {})
        shown = [f"{m.status_label} {_shown(m, evaluated[m.name])}"
                 for m in ms.EVALUATION_SHOWN if m.name in evaluated and m.unit != ms.FLAG]
        tail = f"; last evaluation: {', '.join(shown)}" if shown else ""
        done = last.get(ms.ITERATION.name, 0)
        past = (f" (more than the {iterations:,} asked for: it had trained them before)"
                if 0 < iterations < done else "")
        return f"finished {done} iterations{past}{tail}"
    r = result.perfect_at
    return (
        f"perfect play (network alone: 100% optimal moves, unbeatable from both seats) after "
        f"{r[ms.GAMES.name]:,} games, iteration {r[ms.ITERATION.name]}, "
        f"{r[ms.WALL_TIME.name]:.1f}s"
    )


class TrainingDiverged(ValueError):
    """The loss or the network became NaN or infinite: the run stops without saving."""


def divergence(record: dict[str, Any]) -> str | None:
    """What is not finite among a record's losses ('loss is nan'), or None."""
    bad = [m.name for m in ms.LOSSES if m.name in record and not np.isfinite(record[m.name])]
    return f"{bad[0]} is {record[bad[0]]}" if bad else None


def diverged_text(what: str, iteration: int, saved_at: int) -> str:
    """The one line that says a run diverged, and what of it is kept."""
    return (f"training diverged: {what} at iteration {iteration}; nothing after iteration "
            f"{saved_at} was saved (train again in a new --run-dir with a lower "
            "--learner.learning-rate or another seed)")


def finished(run: RunConfig, records: Sequence[dict[str, Any]], iteration: int) -> str | None:
    """Why a run that stands at `iteration` with these metrics records is over: 'perfect'
    (perfect play reached and `stop_when_perfect`), 'time' (its `max_minutes` used),
    'iterations' (its budget done); None while it is not.

    A run trained past `run.iterations` is over too, but its records then hold a larger
    budget than `run` asks for: whoever compares runs at `run`'s budget reads them up to
    it (`records_at`) and asks again."""
    if run.stop_when_perfect and any(r.get(ms.PERFECT.name) for r in records):
        return "perfect"
    if run.max_minutes > 0 and records and (records[-1][ms.WALL_TIME.name]
                                            >= 60 * run.max_minutes):
        return "time"
    if iteration >= run.iterations:
        return "iterations"
    return None


def records_at(records: Sequence[dict[str, Any]], iterations: int) -> list[dict[str, Any]]:
    """A run's metrics records as they stood at a budget of `iterations`: those at or
    before that iteration. A run trained past the budget (resumed with more iterations)
    is so read at the budget, not at its later records.

    Args:
      records: the run's records, in order of iteration.
      iterations: the budget.

    Returns:
      The records up to and including iteration `iterations` (all of them for a run that
      stopped sooner).
    """
    return [r for r in records if r[ms.ITERATION.name] <= iterations]


def past_budget(iteration: int, run: RunConfig) -> str | None:
    """The line that says a run stands past the iterations asked of it (resumed with a
    smaller `--iterations` than it was trained for), or None.

    Args:
      iteration: the iteration the run stands at (its newest checkpoint).
      run: the run options asked for.

    Returns:
      'this run already trained N iterations, more than the M asked for: ...', or None.
    """
    if iteration <= run.iterations:
        return None
    return (f"this run already trained {iteration:,} iterations, more than the "
            f"{run.iterations:,} asked for: nothing to train (its records go on past "
            f"iteration {run.iterations:,}; a sweep reads them at its budget)")
