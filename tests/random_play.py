"""Random games for the rules tests: generated once in a jitted scan, checked on the host."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def take(tree, *index):
    """Indexes every leaf of a (host) state pytree."""
    return jax.tree.map(lambda x: x[index], tree)


def play_random_games(env, num_legal, num_noisy, plies, seed, noise):
    """Games played by `env` in one jitted scan: uniform legal moves, except that the last
    `num_noisy` games play any action in [-2, num_actions + 2) with probability `noise`,
    and finished games always do.

    Returns the host states [plies + 1, games] and the actions [plies, games].
    """
    n = num_legal + num_noisy
    noisy = jnp.arange(n) >= num_legal

    @jax.jit
    def play(key):
        state = jax.vmap(env.init)(jax.random.split(key, n))

        def body(state, key):
            k1, k2, k3 = jax.random.split(key, 3)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            legal = jax.random.categorical(k1, logits, axis=-1).astype(jnp.int32)
            wild = jax.random.randint(k2, (n,), -2, env.num_actions + 2)
            use_wild = state.terminated | (noisy & (jax.random.uniform(k3, (n,)) < noise))
            action = jnp.where(use_wild, wild, legal)
            nxt = jax.vmap(env.step)(state, action)
            return nxt, (nxt, action)

        _, (states, actions) = jax.lax.scan(body, state, jax.random.split(key, plies))
        states = jax.tree.map(lambda s0, s: jnp.concatenate([s0[None], s]), state, states)
        return states, actions

    states, actions = jax.device_get(play(jax.random.key(seed)))
    return states, np.asarray(actions)
