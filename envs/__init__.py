"""Two-player board games as pure JAX state machines (pgx-compatible protocol).

    import envs
    env = envs.make("tictactoe")
    state = env.init(key)
    state = env.step(state, action)
"""

from __future__ import annotations

from typing import Callable

from envs.core import Env, State, Symmetries, dihedral_symmetries, from_cell_permutations
from envs.tictactoe import TicTacToe

_REGISTRY: dict[str, Callable[..., Env]] = {
    "tictactoe": TicTacToe,
}


def registered_games() -> list[str]:
    """Names accepted by `make`."""
    return sorted(_REGISTRY)


def make(name: str, **kwargs) -> Env:
    """Builds the game called `name`; keyword arguments set its size options.

    Raises:
      ValueError: for an unknown name or options the game does not take.
    """
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown game {name!r}; known games: {', '.join(registered_games())}"
        )
    try:
        return _REGISTRY[name](**kwargs)
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
