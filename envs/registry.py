"""Which game a name means: the shipped games, games registered by users, games that
installed packages declare, pgx games and import paths.

    envs.register("hex5", lambda **options: Hex(size=5, **options))
    envs.make("hex5")                      # a registered name
    envs.make("my_games.hex:Hex", size=7)  # an import path: module:attribute
    envs.make("pgx:othello")               # a pgx game (when pgx is installed)

A package can also make its games known to every process without an import, as an entry
point in the group `azjax.games` (in its pyproject.toml:
`[project.entry-points."azjax.games"] hex = "my_games.hex:Hex"`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from envs.core import Env
from envs.origin import first_line, user_frame

BUILTIN: dict[str, str] = {
    "tictactoe": "envs.tictactoe:TicTacToe",
    "connect_four": "envs.connect_four:ConnectFour",
    "gomoku": "envs.gomoku:Gomoku",
    "go": "envs.go:Go",
    "coin_split": "envs.coin_split:CoinSplit",
}
"""The shipped games, name -> import path (imported on first use)."""
PGX_PREFIX = "pgx:"
ENTRY_POINT_GROUP = "azjax.games"

_registered: dict[str, Callable[..., Env]] = {}


def register(name: str, factory: Callable[..., Env], *, overwrite: bool = False) -> None:
    """Makes `envs.make(name, **options)` call `factory(**options)` in this process.

    Registering a name again replaces the factory (a notebook cell run twice); a shipped
    game's name is only replaced with `overwrite=True`.

    Args:
      name: the game's name, as `make` and command lines take it.
      factory: called with the options of `make`; builds an `envs.Env` (a class or a
        function).
      overwrite: allow replacing a shipped game.

    Raises:
      ValueError: for a name that is empty, holds ':' (import paths) or would shadow a
        shipped game, or a factory that is not callable.
    """
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"a game name must be a non-empty string without surrounding spaces, "
                         f"got {name!r}")
    if ":" in name:
        raise ValueError(f"game names cannot hold ':' (it marks import paths and pgx:), "
                         f"got {name!r}")
    if not callable(factory):
        raise ValueError(f"the factory of game {name!r} must be callable, got {factory!r}")
    if name in BUILTIN and not overwrite:
        raise ValueError(f"{name!r} is a shipped game; pass overwrite=True to replace it")
    _registered[name] = factory


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def registered_at_runtime() -> frozenset[str]:
    """The names `register` gave in this process (not the shipped ones).

    Returns:
      The names.
    """
    return frozenset(_registered) - frozenset(BUILTIN)


def registered_games() -> list[str]:
    """Names accepted by `make`: shipped, registered and entry-point games (besides
    `pgx:<id>` and import paths `module:attribute`).

    Returns:
      The names, sorted.
    """
    return sorted(set(BUILTIN) | set(_registered) | set(_entry_points()))


def import_object(path: str) -> Any:
    """The object an import path `package.module:attribute` names (the current directory
    is searched as a script's own directory is, so `my_game:MyGame` finds ./my_game.py).

    Args:
      path: `module:attribute`; the attribute may be dotted (`module:Outer.Inner`).

    Returns:
      The object.

    Raises:
      ValueError: the path is malformed, its module cannot be imported or lacks the
        attribute.
    """
    module_name, _, attribute = path.rpartition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected an import path like package.module:ClassName, got {path!r}")
    try:
        module = _import_module(module_name)
    except ImportError as err:
        raise ValueError(
            f"cannot import {module_name!r} for game {path!r}: {err} (run the command from "
            f"the folder that holds {module_name.partition('.')[0]}, or put that folder on "
            "PYTHONPATH)") from None
    except Exception as err:  # noqa: BLE001 - the module's own failure, where it happened
        raise ValueError(f"importing {module_name!r} for {path!r} raised "
                         f"{type(err).__name__}{user_frame(err)}: {first_line(err)}") from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            if module_name == "__main__":
                raise ValueError(
                    f"game {path!r} was defined in the script or notebook that trained it; "
                    "load its runs there (Agent.load(run_dir, env=...)) or move the game "
                    "into a module of its own")
            raise ValueError(f"module {module_name!r} has no attribute {attribute!r} "
                             f"(game {path!r})")
        target = getattr(target, part)
    return target


def _import_module(name: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        cwd = os.getcwd()
        top = name.partition(".")[0]
        if err.name != top or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(name)


def _factory(game: str) -> Callable[..., Env]:
    if game in _registered:
        return _registered[game]
    if game in BUILTIN:
        return import_object(BUILTIN[game])
    if ":" in game:
        return import_object(game)
    entry_points = _entry_points()
    if game in entry_points:
        return entry_points[game].load()
    raise ValueError(
        f"unknown game {game!r}; known games: {', '.join(registered_games())}, "
        f"{PGX_PREFIX}<pgx env id>, or an import path like my_package.my_module:MyGame "
        "(a name given with envs.register lives in the process that registered it: register "
        "it again first, or name the game by its import path)"
    )


def make(game: str, **options) -> Env:
    """Builds the game `game` names (a registered name, `pgx:<id>` or an import path
    `module:attribute` of an `Env` class or factory); `options` go to its constructor.

    Args:
      game: the name, `pgx:<id>` or import path.
      **options: the game's constructor options (e.g. `size=9` for Go).

    Returns:
      The `envs.Env`, which remembers how it was made (`spec_of`).

    Raises:
      ValueError: for an unknown game, options the game does not take, or a factory
        that does not build an `envs.Env`.
    """
    if not isinstance(game, str) or not game:
        raise ValueError(f"a game is named by a non-empty string, got {game!r}")
    if game.startswith(PGX_PREFIX):
        from envs.pgx_adapter import make_pgx  # pgx is optional: imported only when named

        env = make_pgx(game[len(PGX_PREFIX):], **options)
    else:
        factory = _factory(game)
        if isinstance(factory, Env):
            if options:
                raise ValueError(f"{game!r} is a game object; it takes no options, got {options}")
            env = factory
        else:
            if not callable(factory):
                raise ValueError(f"{game!r} names {factory!r}, not an Env class or factory")
            try:
                env = factory(**options)
            except TypeError as err:
                raise ValueError(f"bad options for game {game!r}: {options} ({err})") from None
            except ValueError:
                raise
            except Exception as err:  # noqa: BLE001 - the game's own failure, where it happened
                raise ValueError(f"building game {game!r} raised {type(err).__name__}"
                                 f"{user_frame(err)}: {first_line(err)}") from None
    if not isinstance(env, Env):
        raise ValueError(f"{game!r} built {type(env).__name__}, not an envs.Env")
    env._made_as = (game, dict(options))
    return env


def portable_spec(env: Env) -> tuple[str, dict[str, Any]]:
    """`spec_of(env)`, except that a name `register` gave in this process (which means
    nothing to the next one) becomes the import path of the env's class with its
    constructor's options, where a config can record them and the class is not a
    script's or notebook's own (`__main__`).

    Args:
      env: a game.

    Returns:
      `(game, options)`, as `spec_of`.
    """
    game, options = spec_of(env)
    if game not in registered_at_runtime():
        return game, options
    try:
        path, options_by_class = _class_spec(env)
    except ValueError:
        return game, options
    if path.startswith("__main__:"):
        return game, options
    return path, options_by_class


def spec_of(env: Env) -> tuple[str, dict[str, Any]]:
    """`(game, options)` with which `make` builds an env like `env`: how it was made by
    `make`, else the import path of its class with the arguments its constructor got.

    The import path of a class defined in a script's or notebook's `__main__` only
    works in that process; a run of such a game is loaded elsewhere with
    `Agent.load(run_dir, env=...)`.

    Args:
      env: a game.

    Returns:
      `(game, options)`: the name or import path, and the constructor's options by name.

    Raises:
      ValueError: for constructor arguments that are not numbers, strings or booleans
        (a config cannot record them).
    """
    made_as = getattr(env, "_made_as", None)
    if made_as is not None:
        return made_as[0], dict(made_as[1])
    return _class_spec(env)


def _class_spec(env: Env) -> tuple[str, dict[str, Any]]:
    """The import path of `env`'s class and the options its constructor got (ValueError
    where a config cannot record them)."""
    cls = type(env)
    path = f"{cls.__module__}:{cls.__qualname__}"
    args, kwargs = getattr(env, "_constructor_args", ((), {}))
    try:
        signature = inspect.signature(cls)
        bound = signature.bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        raise ValueError(f"cannot name the options {args} {kwargs} of {path}") from None
    options: dict[str, Any] = {}
    for name, value in bound.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            options.update(value)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise ValueError(f"{path} was built with positional options {value}; "
                                 "a config records options by name")
        else:
            options[name] = value
    bad = {k: v for k, v in options.items() if not isinstance(v, (bool, int, float, str))}
    if bad:
        raise ValueError(f"{path} was built with options {bad} that a config cannot record "
                         "(numbers, strings and booleans only)")
    return path, {k: v.item() if hasattr(v, "item") else v for k, v in options.items()}
