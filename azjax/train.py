"""The Python driver around the jitted iteration: logging, evaluation, checkpoints, plots."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp

from azjax import checkpoint as ckpt
from azjax.config import TrainConfig
from azjax.evaluation import METRIC_LABELS, make_evaluator
from azjax.evaluators.opponents import PREFIX as OPPONENT_PREFIX
from azjax.evaluators.opponents import OpponentEvaluator
from azjax.gating import Gate
from azjax.loop import TrainState, check_config, init_train_state, make_iteration_fn, make_network
from azjax.metrics_log import MetricsLog, check_tensorboard
from azjax.plots import PLOT_FILE, plot_run
from azjax.progress import Progress, format_duration

# Options that control how long and how visibly a run goes; they may change on resume.
RUN_CONTROL_FIELDS = (
    "iterations", "max_minutes", "log_every", "eval_every", "eval_search_every", "checkpoint_every",
    "keep_every", "stop_when_perfect", "eval_opponents", "eval_games", "eval_openings",
    "tensorboard",
)


@dataclasses.dataclass
class TrainResult:
    """What a finished `train` call returns."""

    train_state: TrainState
    records: list[dict[str, Any]]
    perfect_at: dict[str, Any] | None  # first record where the evaluation said 'perfect'


def _diff(saved: TrainConfig, new: TrainConfig) -> list[str]:
    a, b = saved.to_dict(), new.to_dict()
    out = []
    for key in a:
        if key in RUN_CONTROL_FIELDS or a[key] == b[key]:
            continue
        out.append(f"{key}: saved {a[key]!r}, given {b[key]!r}")
    return out


def prepare_run_dir(run_dir: Path, config: TrainConfig, resume: bool = True) -> None:
    """Creates `run_dir` with config.json, or checks that a run in it is the same run."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / ckpt.CONFIG_FILE
    if path.exists() and resume:
        saved = ckpt.load_config(run_dir)
        differences = _diff(saved, config)
        if differences:
            raise ckpt.RunDirError(
                f"{run_dir} holds a run with a different config; use another --run-dir "
                "or the same options. Differences: " + "; ".join(differences)
            )
    config.save(path)


def _unalias(tree: Any) -> Any:
    """The same pytree with every array leaf in a buffer of its own."""
    return jax.tree.map(lambda x: jnp.array(x, copy=True), tree)


def _host(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in jax.device_get(metrics).items()}


def format_progress(record: dict[str, Any], eta: float | None = None) -> str:
    """One status line for a metrics record (and the time left, when known)."""
    parts = [
        f"it {record['iteration']:>5}",
        f"games {record['games']:>8,}",
        f"{record['positions_per_s']:>8,.0f} pos/s",
    ]
    if "loss" in record:
        parts.append(
            f"loss {record['loss']:.3f} (v {record['value_loss']:.3f} p {record['policy_loss']:.3f})"
        )
        parts.append(f"H {record['policy_entropy']:.2f}")
    for key, label in METRIC_LABELS.items():
        if key in record:
            value = record[key]
            shown = ("yes" if value else "no") if "unbeatable" in key else f"{100 * value:.1f}%"
            parts.append(f"{label} {shown}")
    for key, value in record.items():
        if key.startswith(OPPONENT_PREFIX):
            parts.append(f"{key} {100 * value:.1f}%")
    if "gate_score" in record:
        verdict = "promoted" if record["promoted"] else "kept best"
        parts.append(f"gate {100 * record['gate_score']:.1f}% {verdict} "
                     f"(best it {record['best_iteration']})")
    parts.append(f"{record['wall_time']:.1f}s")
    if eta is not None:
        parts.append(f"ETA {format_duration(eta)}")
    return " | ".join(parts)


def train(
    config: TrainConfig,
    run_dir: Path | str | None = None,
    progress: Callable[[str], None] | None = print,
) -> TrainResult:
    """Trains (or resumes, when `run_dir` holds a run) up to `config.iterations`.

    Without `run_dir` nothing is written to disk. Raises ValueError (or RunDirError)
    with a clear message for a bad config or a run directory holding another run.
    """
    start = time.perf_counter()
    env = config.make_env()
    check_config(env, config)
    if config.tensorboard and run_dir is not None:
        check_tensorboard()
    run_dir = Path(run_dir) if run_dir is not None else None
    say = progress or (lambda _: None)

    train_state = init_train_state(env, config, jax.random.key(config.seed))
    records: list[dict[str, Any]] = []
    manager = log = None
    if run_dir is not None:
        prepare_run_dir(run_dir, config)
        manager = ckpt.checkpoint_manager(run_dir, keep_period=config.keep_every or None)
        log = MetricsLog(run_dir, tensorboard=config.tensorboard)
        step = manager.latest_step()
        if step is not None:
            train_state = ckpt.restore(manager, train_state, step)
            say(f"resumed {run_dir} at iteration {step}")
        records = log.resume_from(step)

    net = make_network(env, config)
    iteration_fn = jax.jit(make_iteration_fn(env, config), donate_argnums=0)
    # Donation needs one buffer per leaf; some states (wrapped pgx games) repeat a value.
    train_state = _unalias(train_state)
    evaluator = make_evaluator(env, net.apply, config.search)
    opponents = None
    if config.eval_opponents:
        opponents = OpponentEvaluator(env, net.apply, config.search, config.eval_opponents,
                                      config.eval_games, config.eval_openings)
    gate = Gate(env, net.apply, config) if config.regime == "gating" else None
    # Evaluation keys are folded in by iteration, so a resumed run evaluates as the
    # uninterrupted one would.
    eval_key = jax.random.key(config.seed + 1)
    arena_key = jax.random.key(config.seed + 2)

    iteration = int(train_state.iteration)
    time_offset = records[-1]["wall_time"] if records else 0.0
    last_log_time, last_log_positions = time.perf_counter(), int(train_state.positions)
    evals_done = sum(1 for r in records if "perfect" in r)
    perfect_at = next((r for r in records if r.get("perfect")), None)
    saved_at = iteration
    eta = Progress(config.iterations, initial=iteration, write=None)
    done = perfect_at is not None and config.stop_when_perfect
    if done:
        say(f"this run already reached perfect play at iteration {perfect_at['iteration']}")
    elif config.max_minutes > 0 and time_offset >= 60 * config.max_minutes:
        done = True
        say(f"this run already used its {config.max_minutes:g} minutes (raise --max-minutes)")

    while not done and iteration < config.iterations:
        train_state, metrics = iteration_fn(train_state)
        iteration += 1
        out_of_time = config.max_minutes > 0 and (
            time_offset + time.perf_counter() - start >= 60 * config.max_minutes
        )
        last = iteration == config.iterations or out_of_time
        do_eval = config.eval_every > 0 and (
            iteration % config.eval_every == 0 or last
        )
        do_gate = gate is not None and iteration % config.gate_every == 0
        if not (do_eval or do_gate or last or iteration % config.log_every == 0):
            continue

        record: dict[str, Any] = {"iteration": iteration, **_host(metrics)}
        now = time.perf_counter()
        positions = int(train_state.positions)
        record["games"] = int(train_state.games)
        record["positions"] = positions
        record["positions_per_s"] = (positions - last_log_positions) / max(now - last_log_time, 1e-9)
        if do_eval:
            with_search = config.eval_search_every > 0 and (
                (evals_done + 1) % config.eval_search_every == 0 or last
            )
            key = jax.random.fold_in(eval_key, iteration)
            record.update(evaluator.network_metrics(train_state.params))
            if with_search or (record["perfect"] and config.stop_when_perfect):
                record.update(evaluator.search_metrics(train_state.params, key))
            if opponents is not None:
                key = jax.random.fold_in(jax.random.fold_in(arena_key, 0), iteration)
                record.update(opponents(train_state.params, key))
            evals_done += 1
        if do_gate:
            key = jax.random.fold_in(jax.random.fold_in(arena_key, 1), iteration)
            gate_score, promoted = gate(train_state.params, train_state.best_params, key)
            if promoted:
                train_state = train_state.replace(
                    best_params=_unalias(train_state.params), best_iteration=jnp.int32(iteration)
                )
            record["gate_score"] = gate_score
            record["promoted"] = float(promoted)
            record["best_iteration"] = int(train_state.best_iteration)
        record["wall_time"] = time_offset + time.perf_counter() - start
        records.append(record)
        left = eta.eta(iteration)
        if config.max_minutes > 0:
            left = min(left or float("inf"), 60 * config.max_minutes - record["wall_time"])
        say(format_progress(record, left))
        last_log_time, last_log_positions = time.perf_counter(), positions

        perfect = bool(record.get("perfect"))
        if perfect and perfect_at is None:
            perfect_at = record
        if run_dir is not None:
            log.append(record)
            if iteration % config.checkpoint_every == 0 or last or (
                perfect and config.stop_when_perfect
            ):
                ckpt.save(manager, iteration, train_state)
                saved_at = iteration
                plot_run(records, run_dir / PLOT_FILE)
        if perfect and config.stop_when_perfect:
            say(f"perfect play reached at iteration {iteration}; stopping")
            break
        if out_of_time:
            say(f"time limit of {config.max_minutes:g} minutes reached at iteration {iteration}")
            break

    if run_dir is not None and saved_at != iteration:
        ckpt.save(manager, iteration, train_state)
        plot_run(records, run_dir / PLOT_FILE)
    if manager is not None:
        manager.close()
        log.close()
    return TrainResult(train_state=train_state, records=records, perfect_at=perfect_at)


def summarize(result: TrainResult) -> str:
    """A closing summary of a run."""
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

