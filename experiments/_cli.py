"""Shared command-line entry point of the experiment scripts."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from typing import Annotated

import tyro

from azjax.cli import EXIT_ERROR, is_user_error, one_line_errors, report_error
from azjax.driver import summarize, train
from azjax.run import compile_cache, peers
from azjax.run.config import TrainConfig
from azjax.run.devices import arrange, is_primary
from azjax.run.guard import guard
from azjax.run.peers import HEARTBEAT_TIMEOUT_S
from azjax.run.recipes import RECIPES, defaults_for
from azjax.run.stop_signals import EXIT_STOPPED, Stopped


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Train an AlphaZero agent; rerun with the same --run-dir to resume."""

    config: Annotated[TrainConfig, tyro.conf.arg(name="")]
    run_dir: str = "runs/default"
    """Where config.json, checkpoints, metrics.jsonl and plots go; a run already there is
    resumed (its program settings and seed must match; run options such as --iterations
    may change)."""
    coordinator_address: str = ""
    """HOST:PORT of process 0, for a run of several processes (jax.distributed)."""
    num_processes: int = 1
    """Processes that train this run together (each with its share of --devices)."""
    process_id: int = 0
    """This process's number, 0 to --num-processes - 1 (process 0 writes the run)."""
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT_S
    """Seconds without a heartbeat from another process of the run before this one stops
    (exit status 76; rerun every process's command to resume); 0: no watch."""


@one_line_errors
def main(defaults: TrainConfig, run_dir: str, argv: list[str] | None = None) -> int:
    """Parses options over `defaults`, trains, prints a summary; returns the exit code
    (2 with one `error:` line for a bad option, a run directory that cannot be used, an
    OS error; 75 stopped by SIGTERM or SIGINT with a checkpoint; 76 when another process
    of the run was lost; 130 when interrupted before training began)."""
    experiment = tyro.cli(
        Experiment,
        default=Experiment(config=defaults, run_dir=run_dir),
        args=argv,
        description=Experiment.__doc__,
    )
    hint = (f"rerun the same {experiment.num_processes} commands to resume from the newest "
            f"checkpoint in {experiment.run_dir}")
    if experiment.num_processes > 1 and experiment.heartbeat_timeout:
        guard(experiment.num_processes, experiment.coordinator_address, hint)
    arrange(experiment.config.run.devices, experiment.coordinator_address or None,
            experiment.num_processes, experiment.process_id, experiment.heartbeat_timeout)
    watch = peers.current()
    if watch is not None:
        watch.resume_hint = hint
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
    except KeyboardInterrupt:
        print("\ninterrupted; rerun the same command to resume from the last checkpoint",
              file=sys.stderr)
        return 130
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
        print(summarize(result))
        print(f"run directory: {experiment.run_dir}")
    return 0


def game_and_defaults(argv: list[str]) -> tuple[str, TrainConfig, list[str]]:
    """The `--game` of a command line (default tictactoe), its defaults
    (`azjax.run.recipes.defaults_for`), and the command line left to parse over them: a
    recipe name such as go9x9 names the recipe, not a game, so its `--game` is dropped."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--game", default="tictactoe")
    game = pre.parse_known_args(argv)[0].game
    if game not in RECIPES:
        return game, defaults_for(game), list(argv)
    rest, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--game":
            skip = True
        elif not arg.startswith("--game="):
            rest.append(arg)
    return game, defaults_for(game), rest
