"""Random playouts: the leaf evaluation of classic MCTS, batched on device."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from envs import Env, State


def uniform_choice(mask: chex.Array, key: chex.PRNGKey) -> chex.Array:
    """A uniformly random True entry per row of `mask` [B, A] (0 for an all-False row)."""
    noise = jax.random.uniform(key, mask.shape)
    return jnp.argmax(jnp.where(mask, noise, -1.0), axis=-1).astype(jnp.int32)


def uniform_legal_actions(states: State, key: chex.PRNGKey) -> chex.Array:
    """A uniformly random legal action per state [B] (0 where no move is legal)."""
    return uniform_choice(states.legal_action_mask, key)


def random_playout(env: Env, states: State, key: chex.PRNGKey,
                   max_plies: int = 10_000) -> chex.Array:
    """Result [B] of playing each state to the end with uniformly random moves.

    From the point of view of the player to move in `states`: +1 win, -1 loss, 0 draw,
    and 0 for a state that has already ended (its reward was paid by the move that ended
    it) or that is still running after `max_plies` (at the env's own move cap it ends).
    """
    chex.assert_rank(states.legal_action_mask, 2)
    player = states.current_player

    def running(carry):
        states, _, _, ply = carry
        return jnp.any(~states.terminated) & (ply < max_plies)

    def one_ply(carry):
        states, total, key, ply = carry
        key, move_key = jax.random.split(key)
        states = jax.vmap(env.step)(states, uniform_legal_actions(states, move_key))
        total = total + jnp.take_along_axis(states.rewards, player[:, None], axis=1)[:, 0]
        return states, total, key, ply + 1

    total = jnp.zeros(player.shape, jnp.float32)
    _, total, _, _ = jax.lax.while_loop(running, one_ply, (states, total, key, jnp.int32(0)))
    return total
