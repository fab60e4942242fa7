"""Shared command-line entry point of the experiment scripts."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import tyro

from azjax.cli import EXIT_ERROR, is_user_error, one_line_errors, report_error
from azjax.core.program import ProgramConfig
from azjax.driver import summarize, train
from azjax.driver.status import changed_settings, minutes_text, opening_line
from azjax.driver.warm_up import WARM_UP_DIR, plan, share_minutes
from azjax.run import compile_cache, peers
from azjax.run.config import TrainConfig
from azjax.run.devices import arrange, is_primary
from azjax.run.guard import guard
from azjax.run.peers import HEARTBEAT_TIMEOUT_S
from azjax.run.recipes import PRESETS, RECIPES, backend_preset, recipe, split_game_options
from azjax.run.run_dir import CONFIG_FILE, RunDirError, saved_config
from azjax.run.stop_signals import EXIT_STOPPED, Stopped


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


Options = TypeVar("Options")


@dataclasses.dataclass(frozen=True)
class Saved:
    """What the directory a command names already holds: a run (or a sweep) and its
    config, or only the preset of a run's warm-up in progress."""

    where: str
    """Where it was read from (a file), for messages."""
    option: str
    """The option that names the directory ('--run-dir', '--out')."""
    preset: str
    """Its `run.preset` ('' for a run from before presets)."""
    config: TrainConfig | None = None
    """Its config; None for a warm-up in progress (its preset only)."""


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
    warm_up_dir = Path(run_dir) / WARM_UP_DIR
    try:
        config = saved_config(run_dir)
        warm = saved_config(warm_up_dir) if config is None else None
    except (RunDirError, OSError, ValueError):
        return None
    if config is not None:
        where = Path(run_dir) / CONFIG_FILE
        return Saved(str(where) if where.is_file() else f"the newest checkpoint in {run_dir}",
                     "--run-dir", config.run.preset, config)
    if warm is not None and warm.run.preset:
        return Saved(f"{warm_up_dir / CONFIG_FILE}", "--run-dir", warm.run.preset)
    return None


def parse_with_preset(kind: type[Options], defaults: TrainConfig | str,
                      make: Callable[[TrainConfig], Options], argv: list[str],
                      start: Callable[[Options], None],
                      saved: Callable[[Options], Saved | None] = lambda _: None,
                      description: str | None = None) -> tuple[Options, str]:
    """Parses a command line over a recipe's defaults, or over the config a resumed run
    (or sweep) records.

    The game options, in any of their spellings (`recipes.split_game_options`:
    `--game-options size=6 komi=9`, ...), are taken out of `argv` first and laid over
    the defaults' own. Where `saved(options)` finds a run of the same game, its config
    is the defaults (the run resumes as it began, whatever the recipe became since);
    else the recipe's variant chosen by `--preset`, else by the backend.

    Args:
      kind: the options' dataclass (its `config` field a `TrainConfig`).
      defaults: a recipe's name, or a config of no recipe.
      make: builds `kind`'s defaults around a config.
      argv: the command line.
      start: arranges JAX's devices (before the backend decides 'auto').
      saved: what the directory the options name already holds (`saved_run`).
      description: --help's text (default: `kind`'s docstring).

    Returns:
      The options, their `config.run.preset` recording the variant, and why that preset
      (for `azjax.driver.status.opening_line`).

    Raises:
      ValueError: for --preset with a game of no recipe, or a --preset other than the
        one of the run or sweep being resumed (naming the fix).
    """
    argv, given = split_game_options(argv)
    named = named_preset(argv)
    description = (description or kind.__doc__ or "") + (
        "\n\nGame options: --game-options KEY=VALUE ... (e.g. --game-options size=9 "
        "komi=7.5; the forms --game-options KEY VALUE and --game-options.KEY VALUE work too).")
    if isinstance(defaults, str):
        shown = (named if named in PRESETS else
                 backend_preset() if {"-h", "--help"} & set(argv) else "cpu")
        first = recipe(defaults, shown)
        description += (f"\n\nThe defaults shown are the {shown} preset's"
                        f"{'' if named in PRESETS else ' (the backend JAX runs on)'}; "
                        f"--preset {_other(shown)} --help shows the other's."
                        + _warm_up_help(first))
    elif named not in (None, "auto"):
        raise ValueError(f"--preset picks a variant of a recipe ({', '.join(sorted(RECIPES))}"
                         f"); {defaults.program.game} has none")
    else:
        first = defaults

    def parse(config: TrainConfig) -> Options:
        return _with_game_options(tyro.cli(kind, default=make(config), args=argv,
                                           description=description), given)

    options = parse(first)
    found = saved(options)
    if (found is not None and found.config is not None
            and found.config.program.game == first.program.game):
        preset, why = _resumed(defaults, named, found)
        base = found.config.replace(preset=preset)
        options = parse(base)
        start(options)
    else:
        start(options)
        if isinstance(defaults, str):
            preset, why = _chosen(named, found if found and found.config is None else None)
            base = recipe(defaults, preset)
            if base != first:
                options = parse(base)
        else:
            preset, why, base = "", "a game of no recipe", first
    config = _shared_minutes(options.config.replace(preset=preset), base, argv)
    return dataclasses.replace(options, config=config), why


def _other(preset: str) -> str:
    return "gpu" if preset == "cpu" else "cpu"


def _warm_up_help(config: TrainConfig) -> str:
    """--help's paragraph on a recipe's warm-up ('' for a recipe without one)."""
    run = config.run
    if not run.warm_up:
        return ""
    warm, own = share_minutes(10, run.warm_up_minutes, run.max_minutes)
    return (f"\n\nThis recipe first trains a warm-up: the {run.warm_up} recipe for "
            f"{minutes_text(run.warm_up_minutes)} in RUN_DIR/warm-up (--warm-up '' skips "
            f"it), then this run from its weights for {minutes_text(run.max_minutes)}. "
            "--max-minutes M is the time of the whole command, shared "
            f"{run.warm_up_minutes:g}:{run.max_minutes:g} (--max-minutes 10: {warm:g} + "
            f"{own:g}) unless --warm-up-minutes is given too (then each option is its own "
            "part's); --iterations N bounds each part.")


def _resumed(defaults: TrainConfig | str, named: str | None, found: Saved
             ) -> tuple[str, str]:
    """The preset of the run (or sweep) `found` resumes with, and why."""
    if not isinstance(defaults, str):
        return found.preset, f"resuming with the settings {found.where} records"
    preset = found.preset or _nearest_preset(defaults, found.config)
    _check_named(named, preset, found)
    changed = changed_settings(found.config,
                               recipe(defaults, preset).replace(seed=found.config.seed))
    why = (f"its own, from {found.where}" if found.preset else
           f"{found.where} records none, a run from before presets: its settings are "
           f"nearest the {preset} preset's")
    return preset, why + "; resuming with the settings it records" + (
        f", which differ from the {defaults} recipe's in {', '.join(changed)}"
        if changed else "")


def _nearest_preset(name: str, config: TrainConfig) -> str:
    """The preset whose variant of recipe `name` differs least from `config`'s program
    (the first of `PRESETS` on a tie): the one a run that records none was made from."""
    def differences(preset: str) -> int:
        return len(changed_settings(recipe(name, preset).replace(seed=config.seed), config))
    return min(PRESETS, key=differences)


def _chosen(named: str | None, warm_up: Saved | None) -> tuple[str, str]:
    """The preset of a fresh run (or one whose warm-up, `warm_up`, is in progress), and
    why."""
    if named in PRESETS:
        if warm_up is not None:
            _check_named(named, warm_up.preset, warm_up)
        return named, "from --preset"
    if warm_up is not None:
        return warm_up.preset, f"the one of the warm-up in progress, {warm_up.where}"
    preset = backend_preset()
    return preset, f"picked by the backend JAX runs on; --preset {_other(preset)} for the other"


def _check_named(named: str | None, preset: str, found: Saved) -> None:
    """One error line, naming the fix, for a --preset other than the resumed run's."""
    if named in PRESETS and named != preset:
        raise RunDirError(
            f"{found.where} is of the {preset} preset: resume it with --preset {preset} or "
            f"without --preset, or give another {found.option} for the {named} preset")


def _shared_minutes(config: TrainConfig, base: TrainConfig, argv: list[str]) -> TrainConfig:
    """`config` with a --max-minutes given on the command line of a run with a warm-up
    shared between the two in `base`'s ratio (`share_minutes`), unless --warm-up-minutes
    is given too."""
    flags = {arg[2:].split("=")[0].replace("_", "-") for arg in argv if arg.startswith("--")}
    if not config.run.warm_up or "max-minutes" not in flags or "warm-up-minutes" in flags:
        return config
    warm, own = share_minutes(config.run.max_minutes, base.run.warm_up_minutes,
                              base.run.max_minutes)
    return config.replace(warm_up_minutes=warm, max_minutes=own)


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
                        plan(config, Path(run_dir) if run_dir else None, name))


@one_line_errors
def main(defaults: TrainConfig | str, run_dir: str, argv: list[str] | None = None) -> int:
    """Parses options over `defaults` (a recipe's name, or a config of no recipe), trains,
    prints a summary; returns the exit code (2 with one `error:` line for a bad option, a
    run directory that cannot be used, an OS error; 75 stopped by SIGTERM or SIGINT with a
    checkpoint; 76 when another process of the run was lost; 130 when interrupted before
    training began, or by a second signal (143 when that is SIGTERM))."""
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

    experiment, why = parse_with_preset(
        Experiment, defaults, lambda config: Experiment(config=config, run_dir=run_dir),
        sys.argv[1:] if argv is None else list(argv), start, lambda e: saved_run(e.run_dir))
    if is_primary():
        print(opening(defaults, experiment.config, why, experiment.run_dir), flush=True)
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
