"""`python -m envs.check GAME`: the conformance checker (`envs.check_env`) from the shell.

GAME is anything `envs.make` takes: a registered name, pgx:<id>, or an import path
module:Class (the current directory is searched):

    python -m envs.check GAME [--games N] [--seed S] [--max-plies P]
                              [--game-options KEY=VALUE ...] [--reference module:NAME]

`--reference` names an independent implementation of the same rules (an object or
class with OpenSpiel's `new_initial_state()`; a class or function is called with the game
options) that every random game is replayed in (`envs.conformance.reference`). It
prints the report and exits 0, or prints `error: ...` and exits 1 when a check fails and
2 for a bad argument or an unknown game. (This module is the command line only, so that
`python -m` does not run a module the package has already imported.)
"""

from __future__ import annotations

import argparse
import sys

from envs.conformance import PROPERTIES, RULES, CheckReport, EnvCheckError, check_env, init_keys
from envs.registry import import_object, make

__all__ = ["PROPERTIES", "RULES", "CheckReport", "EnvCheckError", "check_env", "init_keys",
           "main"]


def _option(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    for convert in (int, float):
        try:
            return key.strip(), convert(value)
        except ValueError:
            pass
    return key.strip(), value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage dump
        print(f"error: {message} (see python -m envs.check --help)", file=sys.stderr)
        raise SystemExit(2)


def _reference(path: str | None, options: dict) -> object:
    """The reference `--reference` names: the object, or what the class or function it
    names builds from the game options."""
    if path is None:
        return None
    target = import_object(path)
    if callable(getattr(target, "new_initial_state", None)) and not isinstance(target, type):
        return target
    if not callable(target):
        raise ValueError(f"reference {path!r} is neither a reference nor callable")
    try:
        return target(**options)
    except Exception as err:  # noqa: BLE001 - a reference that cannot be built, in one line
        raise ValueError(f"building the reference {path!r} with {options} raised "
                         f"{type(err).__name__}: {err}") from None


def main(argv: list[str] | None = None) -> int:
    """The command line: checks a game, prints the report; returns the exit status (0
    all properties hold, 1 a check failed, 2 a bad argument or unknown game).

    Args:
      argv: the arguments after the program name; None reads `sys.argv`.

    Returns:
      The exit status.
    """
    parser = _Parser(prog="python -m envs.check",
                     description="Check that a game keeps the envs protocol.")
    parser.add_argument("game", help="a registered name, pgx:<id>, or module:Class")
    parser.add_argument("--games", type=_positive, default=64, help="random games (64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random games (0)")
    parser.add_argument("--max-plies", type=_positive, default=None,
                        help="ply limit to check (default: the game's max_plies)")
    parser.add_argument("--game-options", type=_option, nargs="+", action="extend",
                        default=[], metavar="KEY=VALUE", help="options of the game")
    parser.add_argument("--option", type=_option, action="append", dest="game_options",
                        metavar="KEY=VALUE", help="an option of the game (repeatable)")
    parser.add_argument("--reference", default=None, metavar="module:NAME",
                        help="an independent implementation to replay every game in")
    args = parser.parse_args(argv)
    options = dict(args.game_options)
    try:
        env = make(args.game, **options)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a game that cannot be built, without a traceback
        print(f"error: building {args.game!r} raised {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    try:
        reference = _reference(args.reference, options)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        report = check_env(env, num_games=args.games, seed=args.seed, max_plies=args.max_plies,
                           reference=reference)
    except EnvCheckError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - reported in one line; check_env() shows the traceback
        print(f"error: checking {args.game!r} raised {type(err).__name__}: {err} (call "
              "envs.check_env from Python for the traceback)", file=sys.stderr)
        return 1
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
