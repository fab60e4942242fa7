"""Shared command-line entry point of the experiment scripts."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Annotated

import tyro

from azjax.cli import one_line_errors
from azjax.driver import summarize, train
from azjax.run import compile_cache
from azjax.run.config import TrainConfig
from azjax.run.devices import arrange, is_primary
from azjax.run.recipes import RECIPES, defaults_for


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


@one_line_errors
def main(defaults: TrainConfig, run_dir: str, argv: list[str] | None = None) -> int:
    """Parses options over `defaults`, trains, prints a summary; returns the exit code
    (2 with one `error:` line for a bad option, a run directory that cannot be used, an
    OS error; 130 when interrupted)."""
    experiment = tyro.cli(
        Experiment,
        default=Experiment(config=defaults, run_dir=run_dir),
        args=argv,
        description=Experiment.__doc__,
    )
    arrange(experiment.config.run.devices, experiment.coordinator_address or None,
            experiment.num_processes, experiment.process_id)
    compile_cache.enable()
    try:
        result = train(experiment.config, experiment.run_dir,
                       progress=print if is_primary() else None)
    except KeyboardInterrupt:
        print("\ninterrupted; rerun the same command to resume from the last checkpoint",
              file=sys.stderr)
        return 130
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
