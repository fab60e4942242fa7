"""The kinds of ending that `envs.check_env`'s random games reach, told apart without
knowing the game: the result for the player who made the last move, and whether a side
lost every piece (a plane of the observation that held pieces at the start is empty at
the end). The scan of `envs.conformance.games` records each game's kind, the policies
of `envs.conformance.policies` steer towards the rare ones, and the report counts them.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

RESULTS = ("won by the mover", "lost by the mover", "drawn")
WIPED = ", a side lost every piece"
ENDINGS = tuple(f"{result}{tag}" for result in RESULTS for tag in ("", WIPED))
"""The kinds of ending, by index (the scan records 1 + the index; 0 is a live game)."""


def planes(observation: jax.Array) -> tuple[jax.Array, jax.Array]:
    """An observation's C planes (its last axis) and which of them are uniform.

    Args:
      observation: [B, ..., C].

    Returns:
      (float32 [B, cells, C], bool [B, C]).
    """
    b, *cells, c = observation.shape
    x = observation.reshape(b, math.prod(cells), c).astype(jnp.float32)
    return x, jnp.max(x, axis=1) == jnp.min(x, axis=1)


def holders(observation: jax.Array) -> jax.Array:
    """Which planes of the initial observation hold pieces: those not uniform (a
    side-to-move plane is uniform).

    Args:
      observation: [B, ..., C], the initial states' observations.

    Returns:
      bool [B, C].
    """
    return ~planes(observation)[1]


def ending_kind(observation: jax.Array, terminated: jax.Array, mover_reward: jax.Array,
                holding: jax.Array) -> jax.Array:
    """The kind of ending of states after a move.

    Args:
      observation: [B, ..., C], the states after the move.
      terminated: bool [B], whether the move ended the game.
      mover_reward: [B], the reward of the player who made the move.
      holding: bool [B, C], the planes that held pieces at the start (`holders`).

    Returns:
      int32 [B]: 0 for a live game, else 1 + an index into `ENDINGS`.
    """
    x, _ = planes(observation)
    wiped = jnp.any(holding & ~jnp.any(x != 0, axis=1), axis=1)
    result = jnp.where(mover_reward > 0, 0, jnp.where(mover_reward < 0, 1, 2))
    return jnp.where(terminated, 1 + 2 * result + wiped.astype(jnp.int32), 0).astype(jnp.int32)


def endings_reached(end_kind: np.ndarray, live: np.ndarray) -> tuple[tuple[str, int, int, int],
                                                                      ...]:
    """How often the games ended each way, most often first.

    Args:
      end_kind: int [T, n], the kind of ending of each ply's move (0: the game went on).
      live: bool [T, n], whether each game was live before each ply.

    Returns:
      (kind, games, shortest, longest) for each kind reached: its name in `ENDINGS`, how
      many games ended so, and the plies of the shortest and the longest of them.
    """
    kind = end_kind.max(axis=0)
    plies = live.sum(axis=0)
    found = [(ENDINGS[k - 1], int((kind == k).sum()), int(plies[kind == k].min()),
              int(plies[kind == k].max())) for k in np.unique(kind[kind > 0]).tolist()]
    return tuple(sorted(found, key=lambda e: -e[1]))
