"""The mctx model of any game: the real game stepped at every node, its new positions
evaluated by a leaf function, the priors masked to the playable moves.

The env itself is the model, so the search needs no learned dynamics and every node is a
real position. Illegal actions are masked at every node (mctx masks only the root), and
the two-player sign convention is `discount = -1` (the next node's value is from the
opponent's view; `-SearchConfig.discount` with a per-ply discount) and 0 once the game
has ended. `azjax.core.search` builds the network's search on it;
`azjax.evaluation.rollout_mcts` a pure random-playout one.
"""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import mctx

from azjax.core.game_hooks import ApplyFn, EndUtility, MoveMask, legal_moves
from azjax.core.rollouts import random_playout
from envs import Env, State

LeafFn = Callable[[chex.ArrayTree, chex.PRNGKey, State], tuple[chex.Array, chex.Array]]
"""`leaf_fn(params, key, states (B,)) -> (prior logits (B, A), value (B,))`."""


def masked_logits(logits: chex.Array, legal: chex.Array) -> chex.Array:
    """Logits with the illegal actions set to the lowest finite value.

    The lowest finite value, not -inf, so that a softmax or a log-softmax over a row
    stays finite (no NaN) even where every action is masked.

    Args:
      logits: (B, A) float: prior logits.
      legal: (B, A) bool: which actions may be played.

    Returns:
      (B, A) logits of the same dtype, `legal` ones unchanged.
    """
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def mixed_value(env: Env, value: chex.Array, states: State, rollout_lambda: chex.Array,
                key: chex.PRNGKey) -> chex.Array:
    """AlphaGo's leaf value: the network's value mixed with a random playout's result.

    Args:
      env: the game.
      value: (B,) float32: the network's value, from the mover's point of view.
      states: the leaf states, batch (B,).
      rollout_lambda: () float32: the playout's weight; 0 plays no playout (skipped
        with `lax.cond`, so a traced 0 costs nothing).
      key: PRNG key of the playouts (consumed).

    Returns:
      (B,) float32: `(1 - lambda) * value + lambda * playout result`.
    """
    playout = jax.lax.cond(
        rollout_lambda > 0,
        lambda: random_playout(env, states, key),
        lambda: jnp.zeros_like(value),
    )
    return (1.0 - rollout_lambda) * value + rollout_lambda * playout


def symmetric_apply(env: Env, apply_fn: ApplyFn) -> ApplyFn:
    """`apply_fn` averaged over the game's symmetry group.

    Each observation is transformed by every symmetry g, the G copies go through the
    network in one batch, and the result is the mean of their values and of their
    log-policies mapped back to the position's own actions. The averaged network is
    exactly invariant (value) and equivariant (policy) under the group.

    Args:
      env: the game, whose `env.symmetries` (of size G) are used.
      apply_fn: `apply_fn(params, obs (B, *observation_shape)) -> (logits (B, A),
        value (B,))`.

    Returns:
      A function of the same signature, whose logits are averaged log-policies; with
      the identity alone (G = 1) `apply_fn` itself.
    """
    symmetries = env.symmetries
    size = symmetries.size
    if size == 1:
        return apply_fn

    def transform(obs: chex.Array) -> chex.Array:
        return jax.vmap(lambda g: symmetries.observation(obs, g))(jnp.arange(size))

    def averaged(params, obs: chex.Array) -> tuple[chex.Array, chex.Array]:
        batch = obs.shape[0]
        copies = jax.vmap(transform, out_axes=1)(obs)  # [G, B, *obs_shape]
        logits, value = apply_fn(params, copies.reshape(size * batch, *obs.shape[1:]))
        log_policy = jax.nn.log_softmax(logits.reshape(size, batch, -1))
        # copy g's entry for action a of the original position sits at a's image under g
        back = jnp.take_along_axis(log_policy, symmetries.inverse_action_perm[:, None, :],
                                   axis=2)
        return back.mean(axis=0), value.reshape(size, batch).mean(axis=0)

    return averaged


def make_recurrent_fn(env: Env, leaf_fn: LeafFn, discount: float = 1.0,
                      end_utility: EndUtility | None = None,
                      playable: MoveMask = legal_moves) -> mctx.RecurrentFn:
    """The mctx model of `env`: step the game, evaluate the new positions with `leaf_fn`.

    A finished game is worth 0 at its node, because its result was already paid as the
    reward of the move that ended it. A child's value reaches its parent times
    `-discount`: the opponent's view, one ply on.

    Args:
      env: the game.
      leaf_fn: `leaf_fn(params, key, states (B,)) -> (prior logits (B, A), value (B,))`;
        it sees the search's `params` and a fresh key.
      discount: per-ply discount of values (1: AlphaZero's undiscounted result).
      end_utility: `end_utility(mover (B,) int32, finished states (B,)) -> (B,) float32`,
        an extra reward for the mover at the end of a game (the score utility), or None.
      playable: `playable(states (B,)) -> (B, A) bool`, the moves the priors are masked
        to (default: the legal ones).

    Returns:
      An `mctx.RecurrentFn`: `(params, rng_key, action (B,), state (B,)) ->
      (mctx.RecurrentFnOutput, next state (B,))`.
    """

    def recurrent_fn(params, rng_key, action, state: State):
        mover = state.current_player
        next_state = jax.vmap(env.step)(state, action)
        logits, value = leaf_fn(params, rng_key, next_state)
        reward = jnp.take_along_axis(next_state.rewards, mover[:, None], axis=1)[:, 0]
        ended = next_state.terminated
        if end_utility is not None:
            reward = reward + jnp.where(ended, end_utility(mover, next_state), 0.0)
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(ended, 0.0, -discount),
            prior_logits=masked_logits(logits, playable(next_state)),
            value=jnp.where(ended, 0.0, value),
        )
        return output, next_state

    return recurrent_fn
