"""`azjax train GAME [options]`: trains an AlphaZero agent, resuming the run in
`--run-dir` (default `runs/GAME`) if there is one.

GAME is a recipe (tictactoe, connect_four, gomoku, coin_split, go7x7, go9x9: their
measured settings are the defaults), a registered game, `pgx:<id>`, or the import path
`module:Class` of an `envs.Env` subclass or factory in a file of your own (the current
directory is searched: `my_game:MyGame` finds ./my_game.py); a game of no recipe trains
with plain defaults. `--game GAME` works too. Check a game of your own first:
`azjax check my_game:MyGame`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import sys
import traceback
from typing import Annotated, Literal

import tyro

from azjax.commands.command_line import Saved, parse_with_preset, read_command_line
from azjax.commands.errors import (
    EXIT_ERROR,
    is_user_error,
    one_line_errors,
    report_error,
    run_script,
)
from azjax.driver import summarize, train
from azjax.driver.status import opening_line
from azjax.driver.warm_up import plan
from azjax.run.config import TrainConfig
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.run.process import compile_cache, peers
from azjax.run.process.devices import arrange, is_primary
from azjax.run.process.guard import guard
from azjax.run.process.peers import HEARTBEAT_TIMEOUT_S
from azjax.run.process.stop_signals import EXIT_STOPPED, Stopped


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Train an AlphaZero agent; rerun with the same --run-dir to resume."""

    config: Annotated[TrainConfig, tyro.conf.arg(name="")]
    preset: Literal["auto", "cpu", "gpu"] = "auto"
    """The recipe's variant: 'cpu' (sized for a 2-core CPU) or 'gpu' (one accelerator);
    'auto': the run's own when it resumes, else the one for the backend JAX runs on.
    --help shows the defaults of --preset's variant, else of the backend's."""
    run_dir: str = "runs/default"
    """Where config.json, checkpoints, metrics.jsonl and plots go; a run already there is
    resumed with the settings its config.json records (options given change its run
    options, such as --iterations; its program settings and seed stay)."""
    coordinator_address: str = ""
    """HOST:PORT of process 0, for a run of several processes (jax.distributed)."""
    num_processes: int = 1
    """Processes that train this run together (each with its share of --devices)."""
    process_id: int = 0
    """This process's number, 0 to --num-processes - 1 (process 0 writes the run)."""
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT_S
    """Seconds without a heartbeat from another process of the run before this one stops
    (exit status 76; rerun every process's command to resume); 0: no watch."""



def saved_run(run_dir: str) -> Saved | None:
    """The run already in a run directory.

    Args:
      run_dir: the directory (`--run-dir`).

    Returns:
      Its config.json (else its newest checkpoint's copy) or, mid-warm-up (no config of
      its own yet), its warm-up's preset; None for none, or one that cannot be read
      (training says what is wrong with it).
    """
    if not run_dir:
        return None
    try:
        run = RunDir(run_dir)  # only looked at: training opens it
        config = run.saved_config()
        warm = run.warm_up.saved_config() if config is None else None
    except (RunDirError, OSError, ValueError):
        return None
    if config is not None:
        where = run.config_file
        return Saved(str(where) if where.is_file() else f"the newest checkpoint in {run}",
                     "--run-dir", config.run.preset, config)
    if warm is not None and warm.run.preset:
        return Saved(str(run.warm_up.config_file), "--run-dir", warm.run.preset)
    return None


def opening(defaults: TrainConfig | str, config: TrainConfig, why: str,
            run_dir: str | None) -> str:
    """The first status line of a run (`azjax.driver.status.opening_line`).

    Args:
      defaults: what the command parsed over: a recipe's name, or a config.
      config: the run's config.
      why: why it has its preset (`parse_with_preset`).
      run_dir: its directory.

    Returns:
      The line: the preset, `why`, and what it will train for how long.
    """
    name = defaults if isinstance(defaults, str) else config.program.game
    return opening_line(name, config.run.preset, why,
                        plan(config, RunDir(run_dir) if run_dir else None, name))


@one_line_errors
def main(argv: list[str] | None = None, *, defaults: TrainConfig | None = None) -> int:
    """`azjax train GAME [options]`: parses the command line, trains, prints a summary.

    Args:
      argv: the command line after `train` (default: this process's).
      defaults: a config to train over instead of a recipe's (its game is the GAME; the
        command line then names none), as a notebook or a test builds one.

    Returns:
      The exit status: 0 done; 2 with one `error:` line for a bad option, a run directory
      that cannot be used or an OS error; 75 stopped by SIGTERM or SIGINT with a
      checkpoint; 76 when another process of the run was lost; 130 when interrupted before
      training began, or by a second signal (143 when that is SIGTERM).
    """
    def start(experiment: Experiment) -> None:
        if experiment.num_processes > 1 and experiment.heartbeat_timeout:
            guard(experiment.num_processes, experiment.coordinator_address, hint(experiment))
        arrange(experiment.config.run.devices, experiment.coordinator_address or None,
                experiment.num_processes, experiment.process_id,
                experiment.heartbeat_timeout)

    def hint(experiment: Experiment) -> str:
        return (f"rerun the same {experiment.num_processes} commands to resume from the "
                f"newest checkpoint in {experiment.run_dir}")

    argv = sys.argv[1:] if argv is None else list(argv)
    if defaults is None:
        line = read_command_line(argv)
    else:
        line = dataclasses.replace(read_command_line(argv, positional_game=False),
                                   game=defaults.program.game, defaults=defaults)
    run_dir = "runs/" + re.sub(r"[^A-Za-z0-9_-]+", "_", line.game).strip("_")
    experiment, why = parse_with_preset(
        Experiment, line, lambda config: Experiment(config=config, run_dir=run_dir),
        start, lambda e: saved_run(e.run_dir), description=__doc__)
    if is_primary():
        print(opening(line.defaults, experiment.config, why, experiment.run_dir), flush=True)
    watch = peers.current()
    if watch is not None:
        watch.resume_hint = hint(experiment)
    compile_cache.enable()
    try:
        result = train(experiment.config, experiment.run_dir,
                       progress=print if is_primary() else None)
    except Stopped as stopped:
        if watch is not None:
            watch.leave(ok=True)
        if is_primary():
            print(stopped.message(experiment.num_processes), file=sys.stderr, flush=True)
        return EXIT_STOPPED
    except KeyboardInterrupt as interrupt:  # before training began, or a second signal
        code = 128 + getattr(interrupt, "signum", signal.SIGINT)
        print("\ninterrupted; rerun the same command to resume from the last checkpoint",
              file=sys.stderr, flush=True)
        if experiment.num_processes > 1:
            # Leave at once, telling the other processes (JAX's shutdown would wait for
            # them); the guard's copy of a terminal's Ctrl-C must not cut that short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if watch is not None:
                watch.leave(ok=False, interrupted=True)
            sys.stdout.flush()
            os._exit(code)
        return code
    except BaseException as err:
        if watch is None:
            raise
        # A failure in a run of several processes: first, was a peer lost (then the watch
        # ends the process with that)? If not, tell this failure and leave at once: JAX's
        # shutdown would wait for the other processes, which the watch now stops.
        watch.settle()
        watch.leave(ok=False)
        if is_user_error(err):
            report_error(err)
            os._exit(EXIT_ERROR)
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    if watch is not None:
        watch.leave(ok=True)
    if is_primary():
        print(summarize(result, experiment.config.run.iterations))
        print(f"run directory: {experiment.run_dir}")
    return 0


def script(game: str) -> None:
    """Runs `azjax train GAME` with this process's command line after GAME: the body of
    `experiments/<game>.py`."""
    run_script(main, [game, *sys.argv[1:]])


if __name__ == "__main__":
    run_script(main)
