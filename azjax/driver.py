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
from jax.sharding import Mesh

from azjax import checkpoint as ckpt
from azjax.config import TrainConfig, game_settings
from azjax.devices import agree, barrier, data_mesh, device_count, is_primary, local
from azjax.evaluation import Evaluator, PositionEvaluator, versus
from azjax.files import error_line
from azjax.gating import Gate
from azjax.loop import TrainState, init_train_state
from azjax.memory import check_run_fits, run_parts
from azjax.metrics_log import MetricsLog, check_tensorboard, resume_records
from azjax.players import AgentParams
from azjax.plots import PLOT_FILE, plot_run, preload
from azjax.program_players import ProgramPlayers
from azjax.progress import Progress
from azjax.run_lock import RunLock, lock_run_dir
from azjax.run_status import (  # noqa: F401 - summarize and format_progress re-exported
    TrainingDiverged,
    diverged_text,
    divergence,
    finished,
    format_progress,
    summarize,
)
from azjax.stacked import cached, compile_ahead, group_step, init_placed, placed, stack, unstack
from envs import Env

Say = Callable[[str], None]
PLOT_EVERY_S = 30.0
"""Seconds between draws of training.png at checkpoints, from a run's start (and at its end)."""
STATUS_EVERY_S = 2.0
"""Seconds between status lines of a group of several experiments."""


@dataclasses.dataclass
class TrainResult:
    """A finished run's final state, metrics records and first 'perfect' record (or None)."""

    train_state: TrainState
    records: list[dict[str, Any]]
    perfect_at: dict[str, Any] | None


class _Run:
    """The host side of one experiment: its records, run directory, budget and clock."""

    def __init__(self, config: TrainConfig, run_dir: Path | None, name: str, say: Say,
                 alone: bool = True):
        self.config, self.run = config, config.run
        self.run_dir, self.name, self.say, self.alone = run_dir, name, say, alone
        self.diverged = False
        self.records: list[dict[str, Any]] = []
        self.manager = self.log = None
        self.eval_key = jax.random.key(config.seed + 1)
        self.arena_key = jax.random.key(config.seed + 2)
        self.last_plot = time.perf_counter()

    def restore(self, env: Env, mesh: Mesh | None) -> TrainState:
        """The run's state (laid out on `mesh`): fresh, or restored from its newest intact
        checkpoint. Reads only: what must be written (config.json, a repaired
        metrics.jsonl, damaged checkpoints set aside) waits for `start`."""
        key = jax.random.key(self.config.seed)
        state = (init_train_state(env, self.config.program, key) if mesh is None
                 else init_placed(env, self.config.program, key, mesh))
        self.restored = None
        if self.run_dir is not None:
            self.restored = ckpt.restore_newest(self.run_dir, state)
            resumed = self.restored if self.restored and self.restored.tree is not None else None
            if resumed is not None:
                state = resumed.tree
            self.records, self.metrics_notice = resume_records(self.run_dir, resumed)
        return state

    def start(self, state: TrainState, clock_start: float) -> None:
        """Writes the run directory (after every run of the group restored) and sets the
        run's counters from its restored state and records."""
        step = None if self.restored is None else self.restored.step
        if self.run_dir is not None and is_primary():  # process 0 writes the run directory
            if self.restored is not None:
                damaged = self.restored.notice(self.run_dir)
                if damaged:
                    self.say(damaged)
                    moved = ckpt.set_aside(self.run_dir, [s for s, _ in self.restored.damaged])
                    self.say(f"moved the damaged checkpoints to {moved[0].parent}")
            if not (self.run_dir / ckpt.CONFIG_FILE).is_file() and step is not None:
                self.say(f"{self.run_dir / ckpt.CONFIG_FILE} was missing; wrote it again (its "
                         f"program and seed are those checkpoint {step} records)")
            ckpt.save_config(self.run_dir, self.config)
            if self.metrics_notice:
                self.say(self.metrics_notice)
            self.log = MetricsLog(self.run_dir, tensorboard=self.run.tensorboard)
            self.log.start(self.records, self.metrics_notice is not None, step)
            if step is not None:
                self.say(f"resumed {self.run_dir} at iteration {step}")
        if self.run_dir is not None:  # every process saves its part of the checkpoints
            barrier("azjax run directory")
            self.manager = ckpt.checkpoint_manager(self.run_dir,
                                                   keep_period=self.run.keep_every or None)
        self.iteration = self.saved_at = int(state.iteration)
        self.clock_start = clock_start
        self.time_offset = self.records[-1]["wall_time"] if self.records else 0.0
        self.last_log_time, self.last_log_positions = time.perf_counter(), int(state.positions)
        self.evals_done = sum(1 for r in self.records if "perfect" in r)
        self.perfect_at = next((r for r in self.records if r.get("perfect")), None)
        self.eta = Progress(self.run.iterations, initial=self.iteration, write=None)
        reason = finished(self.run, self.records, self.iteration)
        self.done = reason is not None
        if reason == "perfect":
            self.say(f"this run already reached perfect play at iteration "
                     f"{self.perfect_at['iteration']}")
        elif reason == "time":
            self.say(f"this run already used its {self.run.max_minutes:g} minutes "
                     "(raise --max-minutes)")

    def wall_time(self) -> float:
        return self.time_offset + time.perf_counter() - self.clock_start

    def after_iteration(self, index: int, state: TrainState, metrics: Callable[[], dict],
                        evaluator: Evaluator, players: ProgramPlayers, lines: bool) -> TrainState:
        """Logs, evaluates, gates and checkpoints after the experiment's iteration; returns
        the stacked state (changed where a gate promoted its network)."""
        run = self.run
        self.iteration += 1
        iteration = self.iteration
        out_of_time = agree(run.max_minutes > 0 and self.wall_time() >= 60 * run.max_minutes)
        last = iteration >= run.iterations or out_of_time
        do_eval = run.eval_every > 0 and (iteration % run.eval_every == 0 or last)
        do_gate = self.config.program.regime == "gating" and iteration % run.gate_every == 0
        do_save = self.run_dir is not None and iteration % run.checkpoint_every == 0
        if not (do_eval or do_gate or do_save or last or iteration % run.log_every == 0):
            return state

        record: dict[str, Any] = {"iteration": iteration}
        record.update({k: float(v[index]) for k, v in metrics().items()})
        now = time.perf_counter()
        positions = int(state.positions[index])
        record["games"] = int(state.games[index])
        record["positions"] = positions
        record["positions_per_s"] = ((positions - self.last_log_positions)
                                     / max(now - self.last_log_time, 1e-9))
        if do_eval or do_gate:  # each process evaluates on a device of its own
            params = local(unstack(state.params, index))
            bound = AgentParams(params, local(unstack(state.search_params, index)))
            if do_eval:
                record.update(self._evaluate(iteration, last, bound, evaluator, players))
            if do_gate:
                state = self._gate(index, state, bound, players, record)
        record["wall_time"] = self.wall_time()
        if divergence(record):
            self.stop_diverged(divergence(record))
            return state
        self.records.append(record)
        if lines:
            left = self.eta.eta(iteration)
            if run.max_minutes > 0:
                left = min(left or float("inf"), 60 * run.max_minutes - record["wall_time"])
            self.say(format_progress(record, left))
        self.last_log_time, self.last_log_positions = time.perf_counter(), positions

        perfect = bool(record.get("perfect"))
        if perfect and self.perfect_at is None:
            self.perfect_at = record
        stop = perfect and run.stop_when_perfect
        self.done = last or stop
        if self.run_dir is not None:
            if self.log is not None:
                self.log.append(record)
            if do_save or self.done:
                self.save(index, state)
        if stop:
            self.say(f"perfect play reached at iteration {iteration}; stopping")
        elif out_of_time:
            self.say(f"time limit of {run.max_minutes:g} minutes reached at iteration "
                     f"{iteration}")
        return state

    def _evaluate(self, iteration: int, last: bool, bound: AgentParams,
                  evaluator: Evaluator, players: ProgramPlayers) -> dict[str, float]:
        run, params = self.run, bound.network
        searching = run.eval_search_every > 0  # then also at the end, perfect or not
        with_search = searching and ((self.evals_done + 1) % run.eval_search_every == 0
                                     or last)
        self.evals_done += 1
        out = evaluator.network_metrics(players.network.with_params(params))
        if with_search or (searching and out["perfect"] and run.stop_when_perfect):
            agent = players.scored(run.eval_simulations, run.eval_search_with, bound)
            out.update(evaluator.search_metrics(agent, jax.random.fold_in(self.eval_key,
                                                                          iteration)))
        if run.eval_opponents:
            key = jax.random.fold_in(jax.random.fold_in(self.arena_key, 0), iteration)
            out.update(versus(players.env, players.searcher(0).with_params(bound),
                              players.opponents(run.eval_opponents), key, run.eval_games,
                              run.eval_openings))
        return out

    def _gate(self, index: int, state: TrainState, latest: AgentParams, players: ProgramPlayers,
              record: dict[str, Any]) -> TrainState:
        run = self.run
        template = players.searcher(run.gate_simulations)
        best = AgentParams(local(unstack(state.best_params, index)), latest.search)
        gate = Gate(players.env, template.with_params(None, "latest"),
                    template.with_params(None, "best"), run)
        key = jax.random.fold_in(jax.random.fold_in(self.arena_key, 1), self.iteration)
        record["gate_score"], promoted = gate(latest, best, key)
        if promoted:
            state = state.replace(
                best_params=jax.tree.map(lambda b, p: b.at[index].set(p[index]),
                                         state.best_params, state.params),
                best_iteration=state.best_iteration.at[index].set(self.iteration),
            )
        record["promoted"] = float(promoted)
        record["best_iteration"] = int(state.best_iteration[index])
        return state

    def stop_diverged(self, what: str) -> None:
        """Ends a run whose training diverged, saving nothing more: TrainingDiverged for
        a run of its own; in a group, a notice, and the others go on."""
        text = diverged_text(what, self.iteration, self.saved_at)
        if self.alone:
            raise TrainingDiverged(text)
        self.say(f"{text}; the other experiments go on")
        self.done = self.diverged = True

    def save(self, index: int, state: TrainState) -> None:
        """Checkpoints the experiment's state (never a diverged one), then appends the
        records it covers to metrics.jsonl (and redraws the plot now and then)."""
        experiment = unstack(state, index)
        if not ckpt.all_finite(experiment.params):
            self.stop_diverged("the network's parameters are not finite")
            return
        try:
            ckpt.save(self.manager, self.iteration, experiment, self.config, self.records)
            self.saved_at = self.iteration
            if self.log is not None:
                self.log.flush(self.iteration)
        except Exception as err:  # noqa: BLE001 - OS errors, and the same wrapped by orbax
            why = error_line(err)
            raise ckpt.RunDirError(
                f"could not write the checkpoint of iteration {self.iteration} to {self.run_dir} "
                f"({why}); rerun the command to resume from iteration {self.saved_at} "
                "once the cause is fixed") from None
        if self.log is not None and (self.done
                                     or time.perf_counter() - self.last_plot >= PLOT_EVERY_S):
            plot_run(self.records, self.run_dir / PLOT_FILE)
            self.last_plot = time.perf_counter()

    def close(self) -> None:
        if self.manager is not None:
            self.manager.close()
        if self.log is not None:
            self.log.close()


def _names(run_dirs: Sequence[Path | None]) -> list[str]:
    """Short names of a group's experiments for its messages: the fewest trailing parts
    of their run directories that tell them apart."""
    parts = [d.parts if d is not None else (f"experiment {i}",) for i, d in enumerate(run_dirs)]
    for k in range(1, max(len(p) for p in parts) + 1):
        names = ["/".join(p[-k:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return ["/".join(p) for p in parts]


def _game(configs: Sequence[TrainConfig], env: Env | None) -> tuple[list[TrainConfig], Env]:
    """The group's configs naming the game as `envs.make` builds it again, and the env:
    `env` when given, else the configs' game (one object per game and options, so that
    compiled steps are reused)."""
    if env is None:
        program = configs[0].program
        options = tuple(sorted(program.game_options.items()))
        return list(configs), cached(("env", program.game, options), program.make_env)
    if not isinstance(env, Env):
        raise ValueError(f"env must be an envs.Env, got {type(env).__name__}")
    game = game_settings(env)
    return [c.replace(**game) for c in configs], env


def _check_group(configs: Sequence[TrainConfig], run_dirs: Sequence[Path | None],
                 env: Env) -> None:
    if len(run_dirs) != len(configs):
        raise ValueError(f"{len(configs)} configs but {len(run_dirs)} run directories")
    named = [d.resolve() for d in run_dirs if d is not None]
    if len(set(named)) != len(named):
        raise ValueError("two experiments of a group cannot share a run directory")
    for config, run_dir in zip(configs, run_dirs):
        config.check(env)
        if config.program.compile_key() != configs[0].program.compile_key():
            raise ValueError("the experiments of a group must compile to one program (they "
                             "may differ in seeds, traced settings and run options only)")
        if run_dir is not None:
            ckpt.check_run_dir(run_dir, config)  # every run is checked before any is written
            if config.run.tensorboard:
                check_tensorboard()
    if len(configs) > 1:  # E experiments in one program need E times the memory
        largest = max(configs, key=lambda c: sum(run_parts(c, env).values()))
        check_run_fits(largest, env, len(configs))


def _devices(configs: Sequence[TrainConfig], run_dirs: Sequence[Path | None],
             say: Say) -> tuple[list[TrainConfig], Mesh | None]:
    """The group's configs recording the device count they train on, and its data mesh
    (None for one device); ValueError for a count that cannot be used."""
    requested = {c.run.devices for c in configs}
    if len(requested) > 1:
        raise ValueError(f"a group trains on one set of devices, not on {sorted(requested)}")
    count, notice = device_count(requested.pop(), configs[0].program)
    if notice:
        say(notice)
    for run_dir in filter(None, run_dirs):
        ckpt.check_device_count(run_dir, count)
    return [c.replace(devices=count) for c in configs], data_mesh(count) if count > 1 else None


def _writing(run_dir: Path | None, write: Callable, *args: Any) -> Any:
    """`write(*args)`, with an OS error turned into a one-line RunDirError."""
    try:
        return write(*args)
    except OSError as err:
        raise ckpt.cannot_write(run_dir, err) from None


def train_group(
    configs: Sequence[TrainConfig],
    run_dirs: Sequence[Path | str | None] | None = None,
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
      evaluator: replaces the game's evaluator (`azjax.evaluation.make_evaluator`).
      on_iteration: called with every experiment's iteration count after each step.
      env: the game to train on (a game object of your own, say); the configs' `game`
        and `game_options` are then replaced by how `envs.make` builds it again
        (`envs.spec_of`), which is what their run directories record. Default: the
        game the configs name.

    Raises ValueError (RunDirError for a run directory holding another run) with a clear
    message before anything is compiled.
    """
    clock_start = time.perf_counter()
    configs = list(configs)
    run_dirs = [None if d is None else ckpt.check_run_dir_path(d)
                for d in (run_dirs or [None] * len(configs))]
    if not configs:
        raise ValueError("no experiments to train")
    configs, env = _game(configs, env)
    _check_group(configs, run_dirs, env)
    say = progress or (lambda _: None)
    configs, mesh = _devices(configs, run_dirs, say)
    program = configs[0].program
    players = cached(("players", id(env), program.compile_key()),
                      lambda: ProgramPlayers(env, program))
    env = players.env
    players.forget_loaded()
    for config in configs:
        players.opponents(config.run.eval_opponents)  # bad baselines fail before any write
    num = len(configs)
    runs = []
    for config, run_dir, name in zip(configs, run_dirs, _names(run_dirs)):
        prefix = "" if num == 1 else f"[{name}] "
        runs.append(_Run(config, run_dir, name, lambda x, p=prefix: say(p + x), num == 1))
    locks: list[RunLock] = []
    step = group_step(env, program, num, mesh)
    ahead = compile_ahead(step, env, program, num, mesh)  # while the runs set up
    try:
        for config, run_dir in zip(configs, run_dirs):
            if run_dir is not None and is_primary():
                locks.append(lock_run_dir(run_dir))
                ckpt.check_run_dir(run_dir, config)  # again: another writer may have been first
        restored = [run.restore(env, mesh) for run in runs]  # every run reads before writes
        for run, run_state in zip(runs, restored):
            _writing(run.run_dir, run.start, run_state, clock_start)
        state = stack(restored) if mesh is None else placed(stack(restored), mesh)
        if isinstance(evaluator := evaluator or players.evaluator, PositionEvaluator):
            evaluator.prepare()  # while the step compiles
        preload()  # matplotlib's import too
        ahead.join()
        status = Progress(sum(r.run.iterations for r in runs), "it", "group", write=say,
                          initial=sum(r.iteration for r in runs), every=STATUS_EVERY_S)
        while not all(run.done for run in runs):
            lag = min(run.iteration for run in runs if not run.done)
            active = [not run.done and run.iteration == lag for run in runs]
            state, metrics = step(state, np.asarray(active))
            fetched: dict[str, np.ndarray] = {}

            def host_metrics() -> dict[str, np.ndarray]:
                if not fetched:
                    fetched.update(jax.device_get(metrics))
                return fetched

            for i, run in enumerate(runs):
                if active[i]:
                    state = run.after_iteration(i, state, host_metrics, evaluator, players,
                                                lines=num == 1)
            if num > 1:
                done = sum(r.run.iterations if r.done else r.iteration for r in runs)
                perfect = sum(r.perfect_at is not None for r in runs)
                status.update(done, f"it {lag + 1} | perfect {perfect}/{num}")
            if on_iteration is not None:
                on_iteration([run.iteration for run in runs])
        for i, run in enumerate(runs):
            if run.run_dir is not None and run.saved_at != run.iteration and not run.diverged:
                run.save(i, state)
    finally:
        with contextlib.ExitStack() as stack_:
            stack_.callback(ahead.join)  # exiting while XLA compiles in a thread can crash
            for lock in locks:
                stack_.callback(lock.release)
            for run in runs:
                stack_.callback(run.close)
    return [TrainResult(unstack(state, i), run.records, run.perfect_at)
            for i, run in enumerate(runs)]


def train(config: TrainConfig, run_dir: Path | str | None = None,
          progress: Say | None = print, env: Env | None = None) -> TrainResult:
    """Trains (or resumes, when `run_dir` holds a run) up to `config.run.iterations`.

    A run of one experiment of `train_group`. Without `run_dir` nothing is written to
    disk. Raises ValueError (or RunDirError) with a clear message for a bad config or a
    run directory holding another run. `env`: as in `train_group`.
    """
    return train_group([config], [run_dir], progress, env=env)[0]
