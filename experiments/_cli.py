"""Shared command-line entry point of the experiment scripts."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

import tyro

from azjax.cli import EXIT_ERROR, is_user_error, one_line_errors, report_error
from azjax.core.program import ProgramConfig
from azjax.driver import summarize, train
from azjax.run import compile_cache, peers
from azjax.run.config import TrainConfig
from azjax.run.devices import arrange, is_primary
from azjax.run.guard import guard
from azjax.run.peers import HEARTBEAT_TIMEOUT_S
from azjax.run.recipes import PRESETS, RECIPES, backend_preset, recipe, split_game_options
from azjax.run.run_dir import RunDirError, saved_config
from azjax.run.stop_signals import EXIT_STOPPED, Stopped


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Train an AlphaZero agent; rerun with the same --run-dir to resume."""

    config: Annotated[TrainConfig, tyro.conf.arg(name="")]
    preset: Literal["auto", "cpu", "gpu"] = "auto"
    """The recipe's variant: 'cpu' (sized for a 2-core CPU) or 'gpu' (one accelerator);
    'auto': the run's own when it resumes, else the one for the backend JAX runs on. The
    defaults --help shows are the cpu ones unless --preset gpu comes with it."""
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


Options = TypeVar("Options")


def parse_with_preset(kind: type[Options], defaults: TrainConfig | str,
                      make: Callable[[TrainConfig], Options], argv: list[str],
                      start: Callable[[Options], None],
                      run_dir: Callable[[Options], str | None] = lambda _: None,
                      description: str | None = None) -> Options:
    """Parses `argv` into `kind` over `make(defaults)`, where `defaults` is a recipe's name
    (its variant chosen by `--preset`: `choose_preset`) or a config of no recipe.
    `start(options)` arranges JAX's devices (the backend decides 'auto'); the options come
    back with `config.run.preset` recording the variant. The game options, in any of
    their spellings (`recipes.split_game_options`: `--game-options size=6 komi=9`, ...),
    are taken out of `argv` first and laid over the defaults' own."""
    argv, given = split_game_options(argv)
    named = named_preset(argv)
    if isinstance(defaults, str):
        first = recipe(defaults, named if named in PRESETS else "cpu")
    elif named not in (None, "auto"):
        raise ValueError(f"--preset picks a variant of a recipe ({', '.join(sorted(RECIPES))}"
                         f"); {defaults.program.game} has none")
    else:
        first = defaults
    description = (description or kind.__doc__ or "") + (
        "\n\nGame options: --game-options KEY=VALUE ... (e.g. --game-options size=9 "
        "komi=7.5; the forms --game-options KEY VALUE and --game-options.KEY VALUE work too).")
    options = tyro.cli(kind, default=make(first), args=argv, description=description)
    options = _with_game_options(options, given)
    start(options)
    if not isinstance(defaults, str):
        return options
    preset = choose_preset(named or "auto", run_dir(options))
    if preset != first.run.preset:
        options = _with_game_options(tyro.cli(kind, default=make(recipe(defaults, preset)),
                                              args=argv, description=description), given)
    return dataclasses.replace(options, config=options.config.replace(preset=preset))


def _with_game_options(options: Options, given: dict) -> Options:
    """`options` with the game options `given` on the command line over its config's."""
    if not given:
        return options
    config = options.config
    return dataclasses.replace(options, config=config.replace(
        game_options={**config.program.game_options, **given}))


def named_preset(argv: list[str]) -> str | None:
    """The value of `--preset` in a command line, if it has one (tyro checks it)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset")
    return pre.parse_known_args(argv)[0].preset


def choose_preset(named: str, run_dir: str | None) -> str:
    """`named` unless 'auto'; then the preset of the run in `run_dir` if one is there
    (a run resumes as it began), else the backend's (`backend_preset`)."""
    if named != "auto":
        return named
    try:
        saved = saved_config(run_dir) if run_dir else None
    except (RunDirError, OSError, ValueError):
        saved = None  # training says what is wrong with the run directory
    if saved is not None and saved.run.preset:
        if saved.run.preset != backend_preset():
            print(f"{run_dir} was trained with the {saved.run.preset} preset: resuming with "
                  f"it (--preset {backend_preset()} to start another run)", file=sys.stderr)
        return saved.run.preset
    return backend_preset()


@one_line_errors
def main(defaults: TrainConfig | str, run_dir: str, argv: list[str] | None = None) -> int:
    """Parses options over `defaults` (a recipe's name, or a config of no recipe), trains,
    prints a summary; returns the exit code (2 with one `error:` line for a bad option, a
    run directory that cannot be used, an OS error; 75 stopped by SIGTERM or SIGINT with a
    checkpoint; 76 when another process of the run was lost; 130 when interrupted before
    training began)."""
    def start(experiment: Experiment) -> None:
        if experiment.num_processes > 1:
            # A bad value stops every process alike before any joins the others.
            experiment.config.validate()
        if experiment.num_processes > 1 and experiment.heartbeat_timeout:
            guard(experiment.num_processes, experiment.coordinator_address, hint(experiment))
        arrange(experiment.config.run.devices, experiment.coordinator_address or None,
                experiment.num_processes, experiment.process_id,
                experiment.heartbeat_timeout)

    def hint(experiment: Experiment) -> str:
        return (f"rerun the same {experiment.num_processes} commands to resume from the "
                f"newest checkpoint in {experiment.run_dir}")

    experiment = parse_with_preset(
        Experiment, defaults, lambda config: Experiment(config=config, run_dir=run_dir),
        sys.argv[1:] if argv is None else list(argv), start, lambda e: e.run_dir)
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


def game_and_defaults(argv: list[str]) -> tuple[str, TrainConfig | str, list[str]]:
    """The `--game` of a command line (default tictactoe), its defaults (the recipe's name
    where it names one, for `parse_with_preset`; else plain defaults for the game), and the
    command line left to parse over them: a recipe name such as go9x9 names the recipe,
    not a game, so its `--game` is dropped."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--game", default="tictactoe")
    game = pre.parse_known_args(argv)[0].game
    if game not in RECIPES:
        return game, TrainConfig(program=ProgramConfig(game=game)), list(argv)
    rest, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--game":
            skip = True
        elif not arg.startswith("--game="):
            rest.append(arg)
    return game, game, rest
