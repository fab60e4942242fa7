"""Pure Monte Carlo tree search with random rollouts (UCT), batched on device with mctx.

The textbook MCTS: selection by UCB1 (an unvisited legal move first, then
`(Q + 1) / 2 + c * sqrt(ln N / n)` with Q in [-1, 1] from the mover's view), expansion of
one node per simulation, simulation by one uniformly random playout to the end of the
game inside mctx's `recurrent_fn`, and backpropagation by mctx (negamax via
`discount = -1`). The move played is the most visited one. No network is involved.
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import mctx

from azjax.core.fields import bounded, checked
from azjax.core.rollouts import random_playout
from azjax.core.search import make_recurrent_fn
from envs import Env, State


@checked()
class UCTConfig:
    """Settings of the rollout MCTS."""

    num_simulations: int = bounded(1000, low=1)
    """Simulations (one expansion and one playout each) per move."""
    exploration: float = bounded(math.sqrt(2.0), low=0)
    """UCB1 constant c, applied to values rescaled to [0, 1] (sqrt(2) is the textbook one)."""


def uct_action_selection(rng_key, tree: mctx.Tree, node_index, depth, *, exploration):
    """UCB1 over the legal moves of one node of an unbatched tree (mctx signature)."""
    del depth
    legal = tree.embeddings.legal_action_mask[node_index]
    visits = tree.children_visits[node_index]
    parent_visits = jnp.maximum(tree.node_visits[node_index], 1).astype(jnp.float32)
    q01 = (tree.qvalues(node_index) + 1.0) / 2.0
    ucb = q01 + exploration * jnp.sqrt(jnp.log(parent_visits) / jnp.maximum(visits, 1))
    noise = jax.random.uniform(rng_key, ucb.shape)
    unvisited = legal & (visits == 0)
    # An unvisited legal move first (a random one); then UCB1, ties broken at random.
    score = jnp.where(
        jnp.any(unvisited),
        jnp.where(unvisited, noise, -jnp.inf),
        jnp.where(legal, ucb + 1e-6 * noise, -jnp.inf),
    )
    # A finished game has no legal move, and mctx descends through it anyway: spreading
    # those visits over its children keeps the chain below it shallow.
    score = jnp.where(jnp.any(legal), score, -visits)
    return jnp.argmax(score).astype(jnp.int32)


def _playout_leaf(env: Env):
    """Leaves of the rollout search: no prior, one random playout's result as the value."""

    def leaf(params, key, states: State):
        del params
        prior = jnp.zeros(states.legal_action_mask.shape, jnp.float32)
        return prior, random_playout(env, states, key)

    return leaf


def make_uct_search(env: Env, config: UCTConfig):
    """Returns `search(key, states) -> mctx.Tree` for a batch of live States [B]."""
    leaf = _playout_leaf(env)
    recurrent_fn = make_recurrent_fn(env, leaf)

    def select(rng_key, tree, node_index, depth=0):
        return uct_action_selection(
            rng_key, tree, node_index, depth, exploration=config.exploration
        )

    def search(key: chex.PRNGKey, states: State) -> mctx.Tree:
        chex.assert_rank(states.legal_action_mask, 2)
        root_key, search_key = jax.random.split(key)
        legal = states.legal_action_mask
        prior, value = leaf((), root_key, states)
        root = mctx.RootFnOutput(prior_logits=prior, value=value, embedding=states)
        return mctx.search(
            params=(),
            rng_key=search_key,
            root=root,
            recurrent_fn=recurrent_fn,
            root_action_selection_fn=select,
            interior_action_selection_fn=select,
            num_simulations=config.num_simulations,
            invalid_actions=~legal,
        )

    return search


def uct_actions(env: Env, config: UCTConfig):
    """Returns `act(states, key) -> actions [B]`: the most visited legal root move."""
    search = make_uct_search(env, config)

    def act(states: State, key: chex.PRNGKey) -> chex.Array:
        search_key, tie_key = jax.random.split(key)
        visits = search(search_key, states).summary().visit_counts
        noise = 1e-3 * jax.random.uniform(tie_key, visits.shape)
        score = jnp.where(states.legal_action_mask, visits + noise, -1.0)
        return jnp.argmax(score, axis=-1).astype(jnp.int32)

    return act
