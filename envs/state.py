"""The state every game carries (`State`, which games subclass), and `tree_where`, the
per-leaf select between two states that `Env.step` is built on."""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class State:
    """Fields every game's state carries (games subclass it and add their own).

    Attributes:
      current_player: int32 [] id (0 or 1) of the player to move.
      observation: [*observation_shape] bool planes from the mover's point of view.
      legal_action_mask: bool [A] legal moves of the player to move.
      rewards: float32 [2] indexed by player id; non-zero only on the final step.
      terminated: bool [] the game is over.
      step_count: int32 [] plies played so far.
    """

    current_player: chex.Array
    observation: chex.Array
    legal_action_mask: chex.Array
    rewards: chex.Array
    terminated: chex.Array
    step_count: chex.Array


def tree_where(pred: chex.Array, on_true: Any, on_false: Any) -> Any:
    """Per-leaf `jnp.where` over two pytrees of the same structure (scalar pred).

    Args:
      pred: () bool, the choice for every leaf.
      on_true: a pytree, taken where `pred` is true.
      on_false: a pytree of the same structure and leaf shapes as `on_true`.

    Returns:
      A pytree of that structure, each leaf `jnp.where(pred, a, b)`.
    """
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
