"""The host side of one experiment of a training group: its run directory, records,
budget and clock, evaluations, gating, checkpoints and plots, driven between the group's
jitted steps by `azjax.driver.driver.train_group`."""


from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from azjax.core import counters
from azjax.core.iteration import TrainState, init_train_state
from azjax.core.players import AgentParams
from azjax.core.stacked import (
    init_placed,
    unstack,
)
from azjax.driver.program_players import ProgramPlayers
from azjax.driver.status import (
    TrainingDiverged,
    diverged_text,
    divergence,
    finished,
    format_progress,
    learning_stalled,
    past_budget,
)
from azjax.driver.warm_up import warm_start_source
from azjax.evaluation.evaluators import Evaluator, versus
from azjax.evaluation.gating import Gate
from azjax.run.agents.warm_start import placed_like, warm_start_params
from azjax.run.config import TrainConfig
from azjax.run.directory.checkpoint import all_finite
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.metrics_log import MetricsLog
from azjax.run.directory.process_record import start_record
from azjax.run.directory.run_dir import RunDir
from azjax.run.files import error_line
from azjax.run.process.devices import agree, barrier, is_primary, local, peak_device_bytes
from azjax.run.process.progress import Progress
from azjax.run.process.stop_signals import StopSignals
from envs import Env

Say = Callable[[str], None]


EVALUATION_SKIPPED = "evaluation_skipped"
"""The key of a record whose evaluation, due, a stop at a signal skipped: counted as
done, so that a resumed run evaluates as an uninterrupted one (`run.eval_search_every`)."""
PLOT_EVERY_S = 30.0
"""Seconds between draws of training.png at checkpoints, from a run's start (and at its end)."""


class HostRun:
    """The host side of one experiment: its records, run directory, budget and clock."""

    def __init__(self, config: TrainConfig, run_dir: RunDir | None, name: str,
                 say: Say, alone: bool = True):
        self.config, self.run = config, config.run
        self.run_dir, self.name, self.say, self.alone = run_dir, name, say, alone
        self.diverged = False
        self.said_stalled = False
        self.records: list[dict[str, Any]] = []
        self.log = None
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
            self.restored = self.run_dir.checkpoints.restore_newest(state)
            resumed = self.restored if self.restored and self.restored.tree is not None else None
            if resumed is not None:
                state = resumed.tree
            self.records, self.metrics_notice = self.run_dir.metrics.resume(resumed)
        source = warm_start_source(self.config, self.run_dir)
        if source and (self.restored is None or self.restored.tree is None):
            state = self._warm_started(env, state, source)
        return state

    def _warm_started(self, env: Env, state: TrainState, source: str) -> TrainState:
        """`state` with the network weights of `source` (the best copy too)."""
        params = placed_like(warm_start_params(source, env, self.config.program),
                             state.params)
        best = state.best_params
        return state.replace(params=params, best_params=None if best is None else
                             jax.tree.map(jnp.copy, params))

    def start(self, state: TrainState, clock_start: float) -> None:
        """Writes the run directory (after every run of the group restored) and sets the
        run's counters from its restored state and records."""
        step = None if self.restored is None else self.restored.step
        if self.run_dir is not None and is_primary():  # process 0 writes the run directory
            if self.restored is not None:
                damaged = self.restored.notice(self.run_dir)
                if damaged:
                    self.say(damaged)
                    moved = self.run_dir.checkpoints.set_aside(
                        [s for s, _ in self.restored.damaged])
                    self.say(f"moved the damaged checkpoints to {moved[0].parent}")
            if not self.run_dir.config_file.is_file() and step is not None:
                self.say(f"{self.run_dir.config_file} was missing; wrote it again (its "
                         f"program and seed are those checkpoint {step} records)")
            self.run_dir.save_config(self.config)
            # What trains the run from here (code, command, machine): export reports it.
            self.run_dir.append_provenance(start_record(0 if step is None else step))
            if self.metrics_notice:
                self.say(self.metrics_notice)
            self.log = MetricsLog(self.run_dir.metrics, tensorboard=self.run.tensorboard)
            self.log.start(self.records, self.metrics_notice is not None, step)
            if step is not None:
                self.say(f"resumed {self.run_dir} at iteration {step}")
        if self.run_dir is not None:  # every process saves its part of the checkpoints
            barrier("azjax run directory")
            self.run_dir.checkpoints.open_for_saving(keep_period=self.run.keep_every or None)
        self.iteration = self.saved_at = int(state.iteration)
        self.clock_start = clock_start
        self.time_offset = self.records[-1]["wall_time"] if self.records else 0.0
        self.last_log_time, self.last_log_positions = time.perf_counter(), int(state.positions)
        evaluated = [r for r in self.records if "perfect" in r or EVALUATION_SKIPPED in r]
        self.evals_done = len(evaluated)
        self.eval_wall = max((r["wall_time"] for r in evaluated),
                             default=self.time_offset)
        self.save_wall = self.time_offset
        self.perfect_at = next((r for r in self.records if r.get("perfect")), None)
        self.eta = Progress(self.run.iterations, initial=self.iteration, write=None)
        reason = finished(self.run, self.records, self.iteration)
        self.done = reason is not None
        # A stop during the last iteration skipped the final evaluation: it runs now.
        self.final_evaluation_due = (
            reason in ("iterations", "time") and self.run.evaluates and bool(self.records)
            and self.records[-1]["iteration"] == self.iteration
            and EVALUATION_SKIPPED in self.records[-1])
        if reason == "perfect":
            self.say(f"this run already reached perfect play at iteration "
                     f"{self.perfect_at['iteration']}")
        elif reason == "time":
            self.say(f"this run already used its {self.run.max_minutes:g} minutes "
                     "(raise --max-minutes)")
        elif reason == "iterations" and (line := past_budget(self.iteration, self.run)):
            self.say(line)

    def wall_time(self) -> float:
        return self.time_offset + time.perf_counter() - self.clock_start

    def after_iteration(self, index: int, state: TrainState, metrics: Callable[[], dict],
                        evaluator: Evaluator, players: ProgramPlayers, lines: bool,
                        signals: StopSignals | None = None) -> TrainState:
        """Logs, evaluates, gates and checkpoints after the experiment's iteration; returns
        the stacked state (changed where a gate promoted its network). With `signals`
        agreed on a stop (`StopSignals.agree`), the run stops here: a record and a
        checkpoint, and the gate due at this iteration (training), but no evaluation. A
        signal during the evaluation abandons it, and one during it or the gate stops
        the run here too."""
        run = self.run
        signals = signals or StopSignals()
        stopping = bool(signals.agreed)
        self.iteration += 1
        iteration = self.iteration
        clock = agree(self.wall_time())  # process 0's clock decides for every process
        out_of_time = run.max_minutes > 0 and clock >= 60 * run.max_minutes
        last = iteration >= run.iterations or out_of_time
        due_eval = run.evaluates and (_due(iteration, run.eval_every, clock - self.eval_wall,
                                           run.eval_every_minutes) or last)
        do_eval = due_eval and not stopping
        do_gate = self.config.program.regime == "gating" and iteration % run.gate_every == 0
        due_save = _due(iteration, run.checkpoint_every, clock - self.save_wall,
                        run.checkpoint_every_minutes)
        do_save = self.run_dir is not None and (due_save or stopping)
        if due_eval:  # the next one is due by the same agreed clock in every process
            self.eval_wall = clock
        if due_save:
            self.save_wall = clock
        if not (due_eval or do_gate or do_save or last or stopping
                or iteration % run.log_every == 0):
            return state

        record: dict[str, Any] = {"iteration": iteration}
        record.update({k: float(v[index]) for k, v in metrics().items()})
        now = time.perf_counter()
        positions = counters.value(state.positions, index)
        record["games"] = counters.value(state.games, index)
        record["positions"] = positions
        record["positions_per_s"] = ((positions - self.last_log_positions)
                                     / max(now - self.last_log_time, 1e-9))
        peak = peak_device_bytes()
        if peak is not None:
            record["device_peak_bytes"] = peak
        if do_eval or do_gate:  # each process evaluates on a device of its own
            params = local(unstack(state.params, index))
            bound = AgentParams(params, local(unstack(state.search_params, index)))
            if do_eval:
                record.update(signals.unless_stopped(lambda: self._evaluate(
                    iteration, last, bound, evaluator, players)) or {})
            if do_gate:
                state = self._gate(index, state, bound, players, record)
            # A signal since the iteration, in any process, stops every one here.
            stopping = bool(signals.agree())
            do_save = self.run_dir is not None and (due_save or stopping)
        if due_eval and "perfect" not in record:  # a resumed run counts it as done
            record[EVALUATION_SKIPPED] = 1.0
        record["wall_time"] = self.wall_time()
        if divergence(record):
            self.stop_diverged(divergence(record))
            return state
        self.records.append(record)
        program = self.config.program
        if lines:
            left = self.eta.eta(iteration)
            if run.max_minutes > 0:
                left = min(left or float("inf"), 60 * run.max_minutes - record["wall_time"])
            self.say(format_progress(record, left, program.learn_after,
                                     program.positions_per_iteration))
        elif not self.said_stalled:  # a group's summary line does not show it: once
            stalled = learning_stalled(record, program.learn_after,
                                       program.positions_per_iteration)
            if stalled:
                self.say(f"iteration {iteration}: {stalled}")
                self.said_stalled = True
        self.last_log_time, self.last_log_positions = time.perf_counter(), positions

        perfect = bool(record.get("perfect"))
        if perfect and self.perfect_at is None:
            self.perfect_at = record
        stop = perfect and run.stop_when_perfect
        self.done = last or stop or stopping
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

    def run_final_evaluation(self, index: int, state: TrainState, evaluator: Evaluator,
                             players: ProgramPlayers, signals: StopSignals) -> None:
        """Runs the final evaluation that a stop during the run's last iteration skipped
        (`final_evaluation_due`), and puts it in that iteration's record: in the
        checkpoint's copy of the records and in metrics.jsonl. A signal during it
        abandons it, and it stays due."""
        record = {k: v for k, v in self.records[-1].items() if k != EVALUATION_SKIPPED}
        self.say(f"running the final evaluation of iteration {self.iteration}, which a "
                 "stop skipped")
        bound = AgentParams(local(unstack(state.params, index)),
                            local(unstack(state.search_params, index)))
        self.evals_done -= 1  # the skipped one was counted as done
        out = signals.unless_stopped(lambda: self._evaluate(
            self.iteration, True, bound, evaluator, players))
        if out is None:
            self.evals_done += 1
            return
        record.update(out)
        self.records[-1] = record
        self.final_evaluation_due = False
        if record.get("perfect") and self.perfect_at is None:
            self.perfect_at = record
        if self.run_dir is not None and is_primary():
            self.run_dir.checkpoints.amend_records(self.iteration, self.records)
            self.log.amend_last(self.records)
            self.run_dir.plot(self.records)
        if self.alone:
            self.say(format_progress(record))

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
            out.update(evaluator.search_metrics(agent, counters.fold_in(self.eval_key,
                                                                          iteration)))
        if run.eval_opponents:  # an opponent that fails (GNU Go) is one line, not the end
            key = counters.fold_in(jax.random.fold_in(self.arena_key, 0), iteration)
            out.update(versus(players.env, players.searcher(0).with_params(bound),
                              players.opponents(run.eval_opponents), key, run.eval_games,
                              run.eval_openings, failed=lambda name, err: self.say(
                                  f"evaluation vs {name} left out at iteration {iteration}: "
                                  f"{err}; training goes on")))
        return out

    def _gate(self, index: int, state: TrainState, latest: AgentParams, players: ProgramPlayers,
              record: dict[str, Any]) -> TrainState:
        run = self.run
        template = players.searcher(run.gate_simulations)
        best = AgentParams(local(unstack(state.best_params, index)), latest.search)
        gate = Gate(players.env, template.with_params(None, "latest"),
                    template.with_params(None, "best"), run)
        key = counters.fold_in(jax.random.fold_in(self.arena_key, 1), self.iteration)
        record["gate_score"], promoted = gate(latest, best, key)
        if promoted:
            state = state.replace(
                best_params=jax.tree.map(lambda b, p: b.at[index].set(p[index]),
                                         state.best_params, state.params),
                best_iteration=jax.tree.map(lambda b, n: b.at[index].set(n),
                                            state.best_iteration, counters.of(self.iteration)),
            )
        record["promoted"] = float(promoted)
        record["best_iteration"] = counters.value(state.best_iteration, index)
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
        if not all_finite(experiment.params):
            self.stop_diverged("the network's parameters are not finite")
            return
        try:
            self.run_dir.checkpoints.save(self.iteration, experiment, self.config, self.records)
            self.saved_at = self.iteration
            if self.log is not None:
                self.log.flush(self.iteration)
        except Exception as err:  # noqa: BLE001 - OS errors, and the same wrapped by orbax
            why = error_line(err)
            raise RunDirError(
                f"could not write the checkpoint of iteration {self.iteration} to {self.run_dir} "
                f"({why}); rerun the command to resume from iteration {self.saved_at} "
                "once the cause is fixed") from None
        if self.log is not None and (self.done
                                     or time.perf_counter() - self.last_plot >= PLOT_EVERY_S):
            self.run_dir.plot(self.records)
            self.last_plot = time.perf_counter()

    def close(self) -> None:
        if self.run_dir is not None:
            self.run_dir.checkpoints.close()
        if self.log is not None:
            self.log.close()


def _due(iteration: int, every: int, seconds_since: float, every_minutes: float) -> bool:
    """Whether a cadence of `every` iterations or `every_minutes` minutes (0: off) is due."""
    return ((every > 0 and iteration % every == 0)
            or (every_minutes > 0 and seconds_since >= 60 * every_minutes))
