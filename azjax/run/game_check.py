"""Training checks a game of the user's before it writes anything: the quick properties of
`envs.check_env` (declarations, notation, symmetry group, tracing and types, a few random
games), so that a game that cannot train fails in one line naming its file, not in a
traceback from inside the network or the compiler."""

from __future__ import annotations

import inspect

from envs import Env, EnvCheckError, check_env

QUICK_GAMES = 4
"""Random games the check plays (seconds: one small compile)."""


def is_shipped(env: Env) -> bool:
    """Whether `env` is one of azjax's own games (envs/, pgx's through the adapter), whose
    rules the test suite checks."""
    return type(env).__module__.split(".")[0] == "envs"


def check_game(env: Env, game: str) -> None:
    """Raises ValueError, one line naming the game's file and the property it breaks, if
    `env` (named `game`) fails `envs.check_env` on a few random games; shipped games are
    not checked."""
    if is_shipped(env):
        return
    try:
        where = inspect.getsourcefile(type(env))
    except TypeError:
        where = None
    named = f"game {game}" + (f" ({where})" if where else "")
    try:
        check_env(env, num_games=QUICK_GAMES)
    except EnvCheckError as err:
        raise ValueError(f"{named} breaks the game protocol: {str(err).splitlines()[0]} "
                         f"(python -m envs.check {game} for the whole report)") from None
    except Exception as err:  # noqa: BLE001 - a check that cannot run, in one line
        raise ValueError(f"checking {named} raised {type(err).__name__}: {err} (python -m "
                         f"envs.check {game} for the whole report)") from None
