"""Which game each self-play position belongs to, and how that game ended.

Self-play writes positions as they are played, before their game's outcome is known
(`azjax.core.replay`); once a window of S moves is played these label the positions whose
game ended in it and say, for each slot, how its first game ended, which is the game its
positions still pending in the replay belong to.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from azjax.core import replay as replay_lib
from azjax.core.selfplay import Trajectory, tree_select


def assign_outcomes(trajectory: Trajectory, discount: float = 1.0
                    ) -> tuple[replay_lib.Positions, chex.Array, chex.Array, chex.Array]:
    """Labels each position with its game's outcome where that game ended in the window.

    A position written while its game goes on carries its ply in `z` (`has_z` False);
    once the game has ended, z is the result from the mover's view discounted by the
    plies from the position to the end (`replay_lib.discounted`). For the discount a
    resignation is its game's last ply (the resigning position's z is the undiscounted
    loss), so a resigned game's length counts it.

    Args:
      trajectory: S moves of B slots (leading axes (S, B)).
      discount: per-ply discount of the outcome.

    Returns:
      (positions flattened time-major to (S*B, ...), first_end (B,) bool, first_outcome
      (B,) float32, first_length (B,) int32): `first_end[b]` says slot b finished a game
      in this window; `first_outcome[b]` (for player 0) and `first_length[b]` (plies) are
      those of the first such game, the game that any positions of slot b still pending
      from earlier windows belong to.
    """
    positions = trajectory.positions
    lengths = trajectory.game_length
    if trajectory.resigned is not None:
        lengths = lengths + trajectory.resigned.astype(lengths.dtype)
    values = (trajectory.outcome, lengths, trajectory.final)
    (first_end, (first_outcome, first_length, _)), (has_z, (outcome_p0, length, final)) = (
        _next_ends(trajectory.ended, values))
    z = replay_lib.discounted(outcome_p0, positions.player, length, positions.z, discount)
    known = {name: jnp.where(has_z.reshape(has_z.shape + (1,) * (x.ndim - 2)), x,
                             getattr(positions, name))
             for name, x in final.items()}
    positions = positions.replace(z=jnp.where(has_z, z, positions.z), has_z=has_z, **known)
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), positions)
    return flat, first_end, first_outcome, first_length


def first_finals(trajectory: Trajectory) -> dict:
    """The auxiliary targets of the first game each slot ended in the window.

    They belong to the positions of that slot still pending from earlier windows.

    Args:
      trajectory: S moves of B slots.

    Returns:
      name -> (B, ...) array, from `trajectory.final`.
    """
    (_, final), _ = _next_ends(trajectory.ended, trajectory.final)
    return final


def _next_ends(ended: chex.Array, values):
    """For each step of [S, B] and slot, whether a game ends at or after it in the
    window and `values` (a pytree of [S, B, ...]) at the first such end: ((first_end
    [B], values at it), (has_end [S, B], values [S, B, ...])), by a reverse scan."""

    def backward(carry, step):
        has_end, current = carry
        step_ended, step_values = step
        current = tree_select(step_ended, step_values, current)
        carry = (has_end | step_ended, current)
        return carry, carry

    init = (jnp.zeros(ended.shape[1], jnp.bool_),
            jax.tree.map(lambda x: jnp.zeros_like(x[0]), values))
    return jax.lax.scan(backward, init, (ended, values), reverse=True)
