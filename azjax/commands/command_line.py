"""A training command line read once: the game, its preset and the game options taken out
in one pass, then one tyro parse over the defaults they pick.

The defaults of `azjax train GAME` depend on things only the command line says: the
recipe (GAME), its variant (`--preset`, else the backend JAX runs on, which is known only
once the devices are arranged from the parsed options), and the run already in
`--run-dir` (a resumed run keeps the settings it records). So the options are parsed once
over the first defaults that can be known; when the defaults then turn out to be others,
the settings the command line gave (its flags, read from the same parse) are laid over
them. Nothing is parsed twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import tyro

from azjax.core.fields import checks_deferred
from azjax.core.program import ProgramConfig
from azjax.driver.status import changed_settings, minutes_text
from azjax.driver.warm_up import share_minutes
from azjax.run.config import TrainConfig, setting_paths
from azjax.run.directory.layout import RunDirError
from azjax.run.grammar.game_options import split_game_options
from azjax.run.recipes import PRESETS, RECIPES, backend_preset, recipe

Options = TypeVar("Options")
DEFAULT_GAME = "tictactoe"


@dataclasses.dataclass(frozen=True)
class CommandLine:
    """What one pass over a training command line takes out before tyro parses the rest."""

    game: str
    """The recipe or game named (`azjax train GAME` or `--game GAME`)."""
    defaults: TrainConfig | str
    """A recipe's name, or plain defaults for a game of no recipe."""
    preset: str | None
    """The value of `--preset`, if given."""
    game_options: dict
    """The game options given, in any spelling."""
    argv: list[str]
    """The rest, for tyro (`--preset` left in: tyro checks its value)."""


def read_command_line(argv: list[str], positional_game: bool = True) -> CommandLine:
    """Takes the game, `--preset` and the game options out of a training command line.

    Args:
      argv: the command line after the command's name.
      positional_game: whether a first word that is not an option names the game.

    Returns:
      The `CommandLine`. A GAME that names a recipe (`go9x9`) picks the recipe, and
      `--game` is then dropped; any other game stays in the command line as `--game`.
    """
    argv, given = split_game_options(list(argv))
    game, rest, preset = None, [], None
    i = 0
    if positional_game and argv and not argv[0].startswith("-"):
        game, i = argv[0], 1
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in ("--game", "--preset"):
            if not eq:
                if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    raise ValueError(f"{name} needs a value")
                value, i = argv[i + 1], i + 1
            if name == "--game":
                game = value
            else:
                preset = value
                rest.append(f"--preset={value}")
        else:
            rest.append(arg)
        i += 1
    game = game or DEFAULT_GAME
    if game in RECIPES:
        return CommandLine(game, game, preset, given, rest)
    return CommandLine(game, TrainConfig(program=ProgramConfig(game=game)), preset, given,
                       [f"--game={game}", *rest])


def given_settings(argv: list[str]) -> set[str]:
    """The settings (`TrainConfig` paths, e.g. 'search.c_puct', 'iterations') a command
    line's flags set, `--no-X` for a true-or-false X included."""
    known = set(setting_paths()) - {"preset"}  # `--preset` is the command's, read apart
    found = set()
    for arg in argv:
        if not arg.startswith("--"):
            continue
        path = arg[2:].partition("=")[0].replace("-", "_")
        head, dot, last = path.rpartition(".")
        if path not in known and last.startswith("no_"):
            path = f"{head}{dot}{last[3:]}"
        if path in known:
            found.add(path)
    return found


def overlay(base: TrainConfig, parsed: TrainConfig, paths: set[str]) -> TrainConfig:
    """`base` with the settings at `paths` taken from `parsed` (all at once)."""
    return base.with_values({path: parsed.get(path) for path in paths})


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


def parse_with_preset(kind: type[Options], line: CommandLine,
                      make: Callable[[TrainConfig], Options],
                      start: Callable[[Options], None],
                      saved: Callable[[Options], Saved | None] = lambda _: None,
                      description: str | None = None) -> tuple[Options, str]:
    """Parses a training command line once, over a recipe's defaults or over the config a
    resumed run (or sweep) records.

    Where `saved(options)` finds a run of the same game, its config is the defaults (the
    run resumes as it began, whatever the recipe became since); else the recipe's variant
    chosen by `--preset`, else by the backend. The game options given lie over the
    defaults' own.

    Args:
      kind: the options' dataclass (its `config` field a `TrainConfig`).
      line: the command line (`read_command_line`).
      make: builds `kind`'s defaults around a config.
      start: arranges JAX's devices (before the backend decides 'auto').
      saved: what the directory the options name already holds.
      description: --help's text (default: `kind`'s docstring).

    Returns:
      The options, their `config.run.preset` recording the variant, and why that preset
      (for `azjax.driver.status.opening_line`).

    Raises:
      ValueError: for --preset with a game of no recipe, or a --preset other than the
        one of the run or sweep being resumed (naming the fix).
    """
    defaults, named = line.defaults, line.preset
    description = (description or kind.__doc__ or "") + (
        "\n\nGame options: --game-options KEY=VALUE ... (e.g. --game-options size=9 "
        "komi=7.5; the forms --game-options KEY VALUE and --game-options.KEY VALUE work too).")
    if isinstance(defaults, str):
        shown = (named if named in PRESETS else
                 backend_preset() if {"-h", "--help"} & set(line.argv) else "cpu")
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
    first = _with_game_options(first, line.game_options)
    with checks_deferred():  # a bad value is one `error:` line of ours, not tyro's box
        options = tyro.cli(kind, default=make(first), args=line.argv, description=description)
    options.config.validate()
    given = given_settings(line.argv)
    found = saved(options)
    if (found is not None and found.config is not None
            and found.config.program.game == first.program.game):
        preset, why = _resumed(defaults, named, found)
        base = found.config.replace(preset=preset)
        start(options)
    else:
        start(options)
        if isinstance(defaults, str):
            preset, why = _chosen(named, found if found and found.config is None else None)
            base = recipe(defaults, preset)
        else:
            preset, why, base = "", "a game of no recipe", defaults
    config = overlay(_with_game_options(base, line.game_options), options.config, given)
    config = _shared_minutes(config.replace(preset=preset), base, given)
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


def _shared_minutes(config: TrainConfig, base: TrainConfig, given: set[str]) -> TrainConfig:
    """`config` with a --max-minutes given on the command line of a run with a warm-up
    shared between the two in `base`'s ratio (`share_minutes`), unless --warm-up-minutes
    is given too."""
    if not config.run.warm_up or "max_minutes" not in given or "warm_up_minutes" in given:
        return config
    warm, own = share_minutes(config.run.max_minutes, base.run.warm_up_minutes,
                              base.run.max_minutes)
    return config.replace(warm_up_minutes=warm, max_minutes=own)


def _with_game_options(config: TrainConfig, given: dict[str, Any]) -> TrainConfig:
    """`config` with the game options `given` on the command line over its own."""
    if not given:
        return config
    return config.replace(game_options={**config.program.game_options, **given})


__all__ = ["CommandLine", "Saved", "given_settings", "overlay", "parse_with_preset",
           "read_command_line"]
