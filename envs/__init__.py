"""Two-player board games as pure JAX state machines (pgx-compatible protocol).

    import envs
    env = envs.make("tictactoe")
    state = env.init(key)
    state = env.step(state, action)
"""

from __future__ import annotations

import importlib

from envs.core import Env, State, Symmetries, dihedral_symmetries, from_cell_permutations

# name -> "module:class"; modules are imported on first use.
_REGISTRY: dict[str, str] = {
    "tictactoe": "envs.tictactoe:TicTacToe",
    "connect_four": "envs.connect_four:ConnectFour",
    "gomoku": "envs.gomoku:Gomoku",
    "go": "envs.go:Go",
    "coin_split": "envs.coin_split:CoinSplit",
}
PGX_PREFIX = "pgx:"


def registered_games() -> list[str]:
    """Names accepted by `make` (plus `"pgx:<id>"` for any two-player pgx game)."""
    return sorted(_REGISTRY)


def _game_class(name: str):
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make(name: str, **kwargs) -> Env:
    """Builds the game called `name`; keyword arguments set its size options.

    Raises:
      ValueError: for an unknown name or options the game does not take.
    """
    if name.startswith(PGX_PREFIX):
        from envs.pgx_adapter import make_pgx

        return make_pgx(name[len(PGX_PREFIX):], **kwargs)
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown game {name!r}; known games: {', '.join(registered_games())}, "
            f"or {PGX_PREFIX}<pgx env id>"
        )
    try:
        return _game_class(name)(**kwargs)
    except TypeError as err:
        raise ValueError(f"bad options for game {name!r}: {kwargs} ({err})") from None


__all__ = [
    "Env",
    "State",
    "Symmetries",
    "dihedral_symmetries",
    "from_cell_permutations",
    "make",
    "registered_games",
]
