"""Batched games between two policies, on device (one `lax.while_loop` over plies).

A policy is a function `policy(states, key) -> actions` over a batch of States [B]
(it may close over parameters). `play_match` plays `num_games` games, policy A taking
player 0 in the first half and player 1 in the second, and returns each game's result
for A: +1 win, 0 draw (or unfinished at the ply cap), -1 loss.
"""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp

from azjax.search import masked_logits
from envs import Env, State

Policy = Callable[[State, chex.PRNGKey], chex.Array]


def random_policy(states: State, key: chex.PRNGKey) -> chex.Array:
    """Uniform over legal moves [B]."""
    legal = states.legal_action_mask
    logits = jnp.where(legal, 0.0, -jnp.inf)
    # A finished game has no legal move; any action is ignored there by `Env.step`.
    logits = jnp.where(jnp.any(legal, axis=-1, keepdims=True), logits, 0.0)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def network_policy(apply_fn, params) -> Policy:
    """The policy head's argmax over legal moves (the network alone, no search)."""

    def policy(states: State, key: chex.PRNGKey) -> chex.Array:
        del key
        logits, _ = apply_fn(params, states.observation)
        return jnp.argmax(masked_logits(logits, states.legal_action_mask), -1).astype(jnp.int32)

    return policy


def play_match(
    env: Env,
    policy_a: Policy,
    policy_b: Policy,
    key: chex.PRNGKey,
    num_games: int,
    max_plies: int = 10_000,
) -> chex.Array:
    """Results for A [num_games] (+1/0/-1); A is player 0 in games [0, num_games // 2)."""
    chex.assert_scalar_positive(num_games)
    init_key, key = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(init_key, num_games))
    a_seat = jnp.where(jnp.arange(num_games) < num_games // 2, 0, 1).astype(jnp.int32)

    def live(carry):
        states, _, _, ply = carry
        return jnp.any(~states.terminated) & (ply < max_plies)

    def one_ply(carry):
        states, result, key, ply = carry
        key, key_a, key_b = jax.random.split(key, 3)
        actions = jnp.where(
            states.current_player == a_seat, policy_a(states, key_a), policy_b(states, key_b)
        )
        states = jax.vmap(env.step)(states, actions)
        result = result + jnp.take_along_axis(states.rewards, a_seat[:, None], axis=1)[:, 0]
        return states, result, key, ply + 1

    carry = (states, jnp.zeros(num_games, jnp.float32), key, jnp.int32(0))
    _, result, _, _ = jax.lax.while_loop(live, one_ply, carry)
    return result


def score(results: chex.Array) -> dict[str, float]:
    """Win/draw/loss shares and the score (wins + draws / 2) of a results vector."""
    results = jax.device_get(results)
    n = max(len(results), 1)
    wins, losses = float((results > 0).sum()) / n, float((results < 0).sum()) / n
    return {"win": wins, "draw": 1.0 - wins - losses, "loss": losses,
            "score": wins + 0.5 * (1.0 - wins - losses)}
