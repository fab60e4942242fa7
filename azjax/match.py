"""Batched games between two policies.

A policy is a function `policy(states, key) -> actions` over a batch of States [B]
(it may close over parameters; `azjax.players` builds them). `play_match` plays
`num_games` games on device in one `lax.while_loop` over plies; `play_match_host`
drives the same games from a host loop, for players that cannot be traced
(alpha-beta). Policy A takes player 0 in the first `num_games // 2` games and player 1
in the others. Games `i` and `i + ceil(num_games / 2)` are a pair: the same initial
state and the same `opening_plies` random opening moves, with the seats swapped (with
an odd count, one game has no partner). Each game's result is for A: +1 win, 0 draw
(or unfinished at the ply cap), -1 loss.
"""

from __future__ import annotations

from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs import Env, State

Policy = Callable[[State, chex.PRNGKey], chex.Array]


def seats(num_games: int) -> chex.Array:
    """Player id of A in each game [num_games]: 0 in the first half, 1 in the rest."""
    return jnp.where(jnp.arange(num_games) < num_games // 2, 0, 1).astype(jnp.int32)


def opening_states(env: Env, key: chex.PRNGKey, num_games: int, opening_plies: int = 0
                   ) -> tuple[State, chex.Array]:
    """Start states [num_games] after `opening_plies` uniformly random moves, and the
    rewards [num_games, 2] paid during the opening (non-zero only if it ended a game).

    Game i plays the same opening as game `i % ceil(num_games / 2)`, so the two halves
    (which swap seats) see the same openings.
    """
    chex.assert_scalar_positive(num_games)
    distinct = num_games - num_games // 2
    pair = jnp.arange(num_games) % distinct
    init_key, move_key = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(init_key, distinct)[pair])

    def one_ply(carry, ply_key):
        states, rewards = carry
        noise = jax.random.uniform(ply_key, (distinct, env.num_actions))[pair]
        actions = jnp.argmax(jnp.where(states.legal_action_mask, noise, -1.0), axis=-1)
        states = jax.vmap(env.step)(states, actions.astype(jnp.int32))
        return (states, rewards + states.rewards), None

    rewards = jnp.zeros((num_games, 2), jnp.float32)
    if opening_plies > 0:
        keys = jax.random.split(move_key, opening_plies)
        (states, rewards), _ = jax.lax.scan(one_ply, (states, rewards), keys)
    return states, rewards


def _for_a(rewards: chex.Array, a_seat: chex.Array) -> chex.Array:
    return jnp.take_along_axis(rewards, a_seat[:, None], axis=1)[:, 0]


def play_match(
    env: Env,
    policy_a: Policy,
    policy_b: Policy,
    key: chex.PRNGKey,
    num_games: int,
    max_plies: int = 10_000,
    opening_plies: int = 0,
) -> chex.Array:
    """Results for A [num_games] (+1/0/-1), on device (traceable, jit it)."""
    open_key, key = jax.random.split(key)
    states, opening_rewards = opening_states(env, open_key, num_games, opening_plies)
    a_seat = seats(num_games)

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
        return states, result + _for_a(states.rewards, a_seat), key, ply + 1

    carry = (states, _for_a(opening_rewards, a_seat), key, jnp.int32(0))
    _, result, _, _ = jax.lax.while_loop(live, one_ply, carry)
    return result


def play_match_host(
    env: Env,
    policy_a: Policy,
    policy_b: Policy,
    key: chex.PRNGKey,
    num_games: int,
    max_plies: int = 10_000,
    opening_plies: int = 0,
    traced: tuple[bool, bool] = (False, False),
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Results for A [num_games] (+1/0/-1), one host step per ply.

    `progress(finished_games)` is called after every ply.

    A policy marked `traced` is called on the whole batch (fixed shapes: pass it already
    jitted); the others only on the sub-batch of live games where they are to move.
    """
    open_key, key = jax.random.split(key)
    states, opening_rewards = jax.jit(opening_states, static_argnums=(0, 2, 3))(
        env, open_key, num_games, opening_plies
    )
    a_seat = np.asarray(seats(num_games))
    result = np.asarray(_for_a(opening_rewards, jnp.asarray(a_seat)))
    step = jax.jit(jax.vmap(env.step))
    policies = (policy_a, policy_b)
    for _ in range(max_plies):
        terminated = np.asarray(states.terminated)
        if terminated.all():
            break
        mover = np.asarray(states.current_player)
        actions = np.zeros(num_games, np.int32)
        for seat_is_a, policy, is_traced in ((True, policies[0], traced[0]),
                                             (False, policies[1], traced[1])):
            turn = ~terminated & ((mover == a_seat) == seat_is_a)
            if not turn.any():
                continue
            key, policy_key = jax.random.split(key)
            if is_traced:
                actions[turn] = np.asarray(policy(states, policy_key))[turn]
            else:
                index = np.flatnonzero(turn)
                sub = jax.tree.map(lambda x: np.asarray(x)[index], states)
                actions[index] = np.asarray(policy(sub, policy_key))
        states = step(states, jnp.asarray(actions))
        result = result + np.asarray(_for_a(states.rewards, jnp.asarray(a_seat)))
        if progress is not None:
            progress(int(np.asarray(states.terminated).sum()))
    return result


def score(results: chex.Array) -> dict[str, float]:
    """Win/draw/loss shares and the score (wins + draws / 2) of a results vector."""
    results = jax.device_get(results)
    n = max(len(results), 1)
    wins, losses = float((results > 0).sum()) / n, float((results < 0).sum()) / n
    return {"win": wins, "draw": 1.0 - wins - losses, "loss": losses,
            "score": wins + 0.5 * (1.0 - wins - losses)}
