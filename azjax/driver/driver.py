"""The one training driver: E experiments as one stacked, vmapped program.

`train_group(configs, run_dirs)` trains E experiments whose configs compile to one program
(the same `ProgramConfig` up to traced settings; seeds and run halves may differ): their
training states are stacked along a leading axis and one `jax.jit(jax.vmap(iteration))`
advances them together (compiled in the background while the runs set up). A plain run
is E = 1 (`train`); a sweep's compile group is E > 1. Between jitted iterations, on the
host, each experiment is driven as a run of its own: status lines, `metrics.jsonl`,
evaluation against the game's ground truth (or random play) and chosen baselines, gating,
checkpoints, TensorBoard and `training.png` in its own run directory, its own budget and
stop-when-perfect. A finished experiment is frozen while the others go on.

Every experiment computes what it would compute alone, and resumes exactly: evaluation
keys are folded in by iteration, and a resumed group first advances the experiments whose
newest checkpoint is older until all stand at the same iteration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from azjax.core.iteration import TrainState
from azjax.core.stacked import compile_ahead, group_step, placed, stack, unstack
from azjax.driver.host_run import HostRun, Say
from azjax.driver.preflight import preflight
from azjax.driver.program_players import ProgramPlayers
from azjax.driver.warm_up import warm_up
from azjax.evaluation.evaluators import Evaluator, PositionEvaluator
from azjax.run.config import TrainConfig
from azjax.run.directory.lock import RunLock
from azjax.run.directory.plots import preload
from azjax.run.directory.run_dir import RunDir
from azjax.run.process.devices import agreed_max, is_primary
from azjax.run.process.progress import Progress
from azjax.run.process.stop_signals import REPEAT_S, Stopped, StopSignals
from envs import Env

STATUS_EVERY_S = 2.0
"""Seconds between status lines of a group of several experiments."""
STOP_NOTICE = (f"finishing this iteration and saving a checkpoint, evaluations skipped (a "
               f"second signal interrupts at once; the same one within {REPEAT_S:g} s is "
               "taken as this one's echo and ignored)")
"""What a run says at its first signal."""


@dataclasses.dataclass
class TrainResult:
    """A finished run's final state, metrics records and first 'perfect' record (or None)."""

    train_state: TrainState
    records: list[dict[str, Any]]
    perfect_at: dict[str, Any] | None


def _names(run_dirs: Sequence[RunDir | None]) -> list[str]:
    """Short names of a group's experiments for its messages: the fewest trailing parts
    of their run directories that tell them apart."""
    parts = [d.path.parts if d is not None else (f"experiment {i}",)
             for i, d in enumerate(run_dirs)]
    for k in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-k:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return ["/".join(p) for p in parts]


def _writing(run_dir: RunDir | None, write: Callable, *args: Any) -> Any:
    """`write(*args)`, with an OS error of a run directory turned into a one-line
    RunDirError."""
    try:
        return write(*args)
    except OSError as err:
        if run_dir is None:
            raise
        raise run_dir.cannot_write(err) from None


def _loop(runs: list[HostRun], state: TrainState, step: Callable, evaluator: Evaluator,
          players: ProgramPlayers, on_iteration: Callable[[list[int]], None] | None,
          signals: StopSignals, say: Say) -> TrainState:
    """Steps the group until every run is done: each iteration advances the runs that
    lag (a resumed group first catches up), then their host sides run. Returns the state;
    `signals.agreed` is the signal that stopped every run after its iteration (any
    process's, agreed by all), or 0."""
    num = len(runs)
    status = Progress(sum(r.run.iterations for r in runs), "it", "group", write=say,
                      initial=sum(r.iteration for r in runs), every=STATUS_EVERY_S)
    while not all(run.done for run in runs):
        lag = min(run.iteration for run in runs if not run.done)
        active = [not run.done and run.iteration == lag for run in runs]
        state, metrics = step(state, np.asarray(active))
        signals.agree()  # the same iteration in every process
        fetched: dict[str, np.ndarray] = {}

        def host_metrics() -> dict[str, np.ndarray]:
            if not fetched:
                fetched.update(jax.device_get(metrics))
            return fetched

        for i, run in enumerate(runs):
            if active[i]:
                state = run.after_iteration(i, state, host_metrics, evaluator, players,
                                            lines=num == 1, signals=signals)
        if signals.agreed:  # `train_group` saves the runs that did not step where they stand
            for run in runs:
                run.done = True
        if num > 1:
            done = sum(r.run.iterations if r.done else r.iteration for r in runs)
            perfect = sum(r.perfect_at is not None for r in runs)
            live = [r for r in runs if not r.done]
            limit = (max(60 * r.run.max_minutes - r.wall_time() for r in live)
                     if live and all(r.run.max_minutes > 0 for r in live) else None)
            status.update(done, f"it {lag + 1} | perfect {perfect}/{num}", limit=limit)
        if on_iteration is not None:
            on_iteration([run.iteration for run in runs])
    return state


def train_group(
    configs: Sequence[TrainConfig],
    run_dirs: Sequence[RunDir | Path | str | None] | None = None,
    progress: Say | None = print,
    evaluator: Evaluator | None = None,
    on_iteration: Callable[[list[int]], None] | None = None,
    env: Env | None = None,
) -> list[TrainResult]:
    """Trains (or resumes) E experiments as one vmapped program; one result each.

    Args:
      configs: E configs with one program (`ProgramConfig.compile_key`); seeds, traced
        settings (c_puct, learning rate, ...) and run options may differ.
      run_dirs: E run directories (None: nothing written for that experiment); an
        experiment whose directory holds a run resumes it.
      progress: receives status lines (one per record for E = 1, a throttled summary
        line for E > 1) and notices.
      evaluator: replaces the game's evaluator (`azjax.evaluation.evaluators.make_evaluator`).
      on_iteration: called with every experiment's iteration count after each step.
      env: the game to train on (a game object of your own, say); the configs' `game`
        and `game_options` are then replaced by how `envs.make` builds it again
        (`envs.spec_of`), which is what their run directories record. Default: the
        game the configs name.

    Raises ValueError (RunDirError for a run directory holding another run) with a clear
    message before anything is compiled (a GNU Go baseline that is not installed too). A
    baseline of `eval_opponents` whose program fails in an evaluation (GNU Go exits, is
    killed, stays silent or answers what is not a legal move: `GnuGoFailed`) is one
    line, `evaluation vs NAME left out at iteration N: ...`, and is missing from that
    evaluation's record; training goes on (its progress and checkpoints kept), and the
    next evaluation starts GNU Go afresh. SIGTERM or SIGINT (Ctrl-C) while it trains
    stops every experiment after the iteration, with a checkpoint, and raises
    `azjax.run.process.stop_signals.Stopped` (a KeyboardInterrupt); the evaluations due are
    skipped (one under way is abandoned), gates are not. A second signal, not within
    a second of the first, raises `azjax.run.process.stop_signals.Interrupted` (a
    KeyboardInterrupt) at once, without that checkpoint.
    """
    clock_start = time.perf_counter()
    configs = list(configs)
    # A path becomes a RunDir here, checked, and passes on as one.
    run_dirs = [None if d is None else RunDir.open(d)
                for d in (run_dirs or [None] * len(configs))]
    say = progress or (lambda _: None)
    plan = preflight(configs, run_dirs, env, say)  # every check, once, before any write
    configs, env, players, mesh = plan.configs, plan.env, plan.players, plan.mesh
    program = configs[0].program
    for config, warm, run_dir in zip(configs, plan.warm_ups, run_dirs):
        if warm is not None:
            warm_up(config, warm, run_dir, train, say)
            clock_start = time.perf_counter()  # the run's minutes start after its warm-up
    num = len(configs)
    runs = []
    for config, run_dir, name in zip(configs, run_dirs, _names(run_dirs)):
        prefix = "" if num == 1 else f"[{name}] "
        runs.append(HostRun(config, run_dir, name, lambda x, p=prefix: say(p + x), num == 1))
    locks: list[RunLock] = []
    signals = StopSignals(STOP_NOTICE if is_primary() else None, agree=agreed_max)
    step = group_step(env, program, num, mesh)
    ahead = compile_ahead(step, env, program, num, mesh)  # while the runs set up
    try:
        for config, run_dir in zip(configs, run_dirs):
            if run_dir is not None and is_primary():
                locks.append(run_dir.lock())
                run_dir.check(config)  # again: another writer may have been first
        restored = [run.restore(env, mesh) for run in runs]  # every run reads before writes
        for run, run_state in zip(runs, restored):
            _writing(run.run_dir, run.start, run_state, clock_start)
        state = stack(restored) if mesh is None else placed(stack(restored), mesh)
        if isinstance(evaluator := evaluator or players.evaluator, PositionEvaluator):
            evaluator.prepare()  # while the step compiles
        preload()  # matplotlib's import too
        with signals:  # until the last checkpoint is written
            # Every process has the same records, so the same evaluations are due.
            if any(run.final_evaluation_due for run in runs):
                for i, run in enumerate(runs):
                    if run.final_evaluation_due:
                        _writing(run.run_dir, run.run_final_evaluation, i, state,
                                 evaluator, players, signals)
                if signals.agree():  # stopped again during one: every run stops there
                    for run in runs:
                        run.done = True
            ahead.join()
            state = _loop(runs, state, step, evaluator, players, on_iteration, signals, say)
            for i, run in enumerate(runs):
                if (run.run_dir is not None and run.saved_at != run.iteration
                        and not run.diverged):
                    run.save(i, state)
        if signals.agreed:
            raise Stopped(signals.agreed, [run.iteration for run in runs],
                          [None if d is None else d.path for d in run_dirs])
    finally:
        with contextlib.ExitStack() as stack_:
            stack_.callback(ahead.join)  # exiting while XLA compiles in a thread can crash
            for lock in locks:
                stack_.callback(lock.release)
            for run in runs:
                stack_.callback(run.close)
    return [TrainResult(unstack(state, i), run.records, run.perfect_at)
            for i, run in enumerate(runs)]


def train(config: TrainConfig, run_dir: RunDir | Path | str | None = None,
          progress: Say | None = print, env: Env | None = None) -> TrainResult:
    """Trains (or resumes, when `run_dir` holds a run) up to `config.run.iterations`.

    A run of one experiment of `train_group`. Without `run_dir` nothing is written to
    disk. Raises ValueError (or RunDirError) with a clear message for a bad config or a
    run directory holding another run. `env`: as in `train_group`.
    """
    return train_group([config], [run_dir], progress, env=env)[0]
