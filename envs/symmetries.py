"""A game's symmetry group for data augmentation (`Symmetries`), and the ways to build
one: the identity alone, the 8 symmetries of a square board, or any group of cell
permutations."""

from __future__ import annotations

import chex
import jax.numpy as jnp
import numpy as np
from flax import struct


@struct.dataclass
class Symmetries:
    """A game's symmetry group as gather permutations, for data augmentation.

    For symmetry g, the transformed observation is `obs.reshape(cells, C)[cell_perm[g]]`
    and the transformed policy is `pi[action_perm[g]]`; the action `a` maps to
    `inverse_action_perm[g, a]`. Index 0 is always the identity.

    Attributes:
      cell_perm: int32 [G, H*W] spatial gather permutation of observation cells.
      action_perm: int32 [G, A] gather permutation of action-indexed vectors.
      inverse_action_perm: int32 [G, A] where each action goes under the symmetry.
    """

    cell_perm: chex.Array
    action_perm: chex.Array
    inverse_action_perm: chex.Array

    @property
    def size(self) -> int:
        """Number of symmetries (including the identity)."""
        return self.action_perm.shape[0]

    def observation(self, obs: chex.Array, g: chex.Array) -> chex.Array:
        """Applies symmetry `g` to one observation of shape [*cells, C].

        Args:
          obs: one observation, (*cells, C), e.g. (H, W, C).
          g: () int32, the symmetry, in [0, size).

        Returns:
          The transformed observation, of the same shape and dtype as `obs`.
        """
        c = obs.shape[-1]
        return obs.reshape(-1, c)[self.cell_perm[g]].reshape(obs.shape)

    def policy(self, pi: chex.Array, g: chex.Array) -> chex.Array:
        """Applies symmetry `g` to one action-indexed vector [A].

        Args:
          pi: (A,) any dtype, e.g. a float32 policy or a bool mask.
          g: () int32, the symmetry, in [0, size).

        Returns:
          (A,) of the dtype of `pi`.
        """
        return pi[self.action_perm[g]]

    def action(self, action: chex.Array, g: chex.Array) -> chex.Array:
        """Maps an action of the original position to the transformed position.

        Args:
          action: () int32 (or any integer shape), action ids of the original position.
          g: () int32, the symmetry, in [0, size).

        Returns:
          int32 of the shape of `action`: the same moves in the transformed position.
        """
        return self.inverse_action_perm[g, action]


def identity_symmetries(observation_shape: tuple[int, ...], num_actions: int) -> Symmetries:
    """The trivial group: the identity alone (a game without symmetries).

    Args:
      observation_shape: the game's observation shape, (*cells, C).
      num_actions: A, the game's number of actions.

    Returns:
      `Symmetries` of size 1: `cell_perm` (1, cells), `action_perm` and
      `inverse_action_perm` (1, A) int32.
    """
    cells = int(np.prod(observation_shape[:-1], dtype=np.int64))
    actions = jnp.arange(num_actions, dtype=jnp.int32)[None]
    return Symmetries(
        cell_perm=jnp.arange(cells, dtype=jnp.int32)[None],
        action_perm=actions,
        inverse_action_perm=actions,
    )


def _invert(perms: np.ndarray) -> np.ndarray:
    inverse = np.empty_like(perms)
    rows = np.arange(perms.shape[0])[:, None]
    inverse[rows, perms] = np.arange(perms.shape[1])[None, :]
    return inverse


def dihedral_symmetries(height: int, width: int, extra_actions: int = 0) -> Symmetries:
    """The 8 rotations/reflections of a square board (4 would be wrong for non-square).

    Actions `row*width+col` follow the cells; `extra_actions` trailing actions (Go's pass)
    are fixed points.

    Args:
      height: the board's rows.
      width: the board's columns; must equal `height`.
      extra_actions: how many actions follow the `height * width` cell actions.

    Returns:
      `Symmetries` of size 8: `cell_perm` (8, H * W), `action_perm` and
      `inverse_action_perm` (8, H * W + extra_actions) int32.

    Raises:
      ValueError: the board is not square.
    """
    if height != width:
        raise ValueError("dihedral symmetries need a square board")
    grid = np.arange(height * width).reshape(height, width)
    perms = []
    for k in range(4):
        rotated = np.rot90(grid, k)
        perms.append(rotated.reshape(-1))
        perms.append(np.fliplr(rotated).reshape(-1))
    return from_cell_permutations(np.stack(perms), extra_actions)


def from_cell_permutations(cell_perm: np.ndarray, extra_actions: int = 0) -> Symmetries:
    """Builds `Symmetries` from gather permutations of board cells (actions = cells).

    Args:
      cell_perm: (G, cells) integer gather permutations; row 0 must be the identity.
      extra_actions: how many actions follow the cell actions (fixed by every symmetry).

    Returns:
      `Symmetries` of size G: `cell_perm` (G, cells), `action_perm` and
      `inverse_action_perm` (G, cells + extra_actions) int32.
    """
    cell_perm = np.asarray(cell_perm, dtype=np.int32)
    num_cells = cell_perm.shape[1]
    fixed = np.broadcast_to(
        np.arange(num_cells, num_cells + extra_actions, dtype=np.int32),
        (cell_perm.shape[0], extra_actions),
    )
    action_perm = np.concatenate([cell_perm, fixed], axis=1)
    return Symmetries(
        cell_perm=jnp.asarray(cell_perm),
        action_perm=jnp.asarray(action_perm),
        inverse_action_perm=jnp.asarray(_invert(action_perm)),
    )
