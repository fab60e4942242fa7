"""What a game's own hooks add to the search: KataGo's score utility (`Env.score_margin`
and the network's score head; `search.score_utility`) and the moves it leaves out
(`Env.futile_moves`, Go's filling of the mover's own true eyes; `search.skip_futile`)."""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs import Env, State

ApplyFn = Callable[[chex.ArrayTree, chex.Array], tuple[chex.Array, chex.Array]]
EndUtility = Callable[[chex.Array, State], chex.Array]
MoveMask = Callable[[State], chex.Array]


def board_cells(env: Env) -> int:
    """The cells of `env`'s board: those of its observation's [H, W] (or [cells]) part."""
    return int(np.prod(env.observation_shape[:-1], dtype=np.int64))


def score_utility(env: Env, apply_fn: ApplyFn, weight: float,
                  scale: float) -> tuple[ApplyFn, EndUtility]:
    """The score utility of `weight` and `scale` as an evaluation of live positions (the
    network's value plus the utility of its score head's margin, `PolicyValueNet(aux=True)`)
    and an extra reward for the mover at the end of a game (the utility of the game's own
    margin)."""
    margin_of = env.score_margin()
    if margin_of is None:
        raise ValueError(f"search.score_utility needs a game with a score margin: "
                         f"{env.name} has no Env.score_margin (set it to 0)")
    cells = board_cells(env)

    def evaluate(params, obs: chex.Array) -> tuple[chex.Array, chex.Array]:
        logits, value, heads = apply_fn(params, obs, aux=True)
        if "score" not in heads:
            raise ValueError("search.score_utility needs a network with a score head "
                             "(network.score_head)")
        return logits, value + weight * jnp.tanh(heads["score"] * cells / scale)

    def end_utility(mover: chex.Array, finished: State) -> chex.Array:
        margin = jax.vmap(margin_of)(finished)
        return weight * jnp.tanh(jnp.where(mover == 0, margin, -margin) / scale)

    return evaluate, end_utility


def legal_moves(states: State) -> chex.Array:
    """bool [B, A]: the legal moves of a batch of states."""
    return states.legal_action_mask


def without_futile(env: Env) -> MoveMask:
    """bool [B, A] of a batch of states: its legal moves less the game's futile ones
    (`Env.futile_moves`), or all its legal moves where that would leave none."""
    futile = env.futile_moves()
    if futile is None:
        raise ValueError(f"search.skip_futile needs a game with futile moves: {env.name} "
                         f"has no Env.futile_moves (set it false)")

    def playable(states: State) -> chex.Array:
        legal = states.legal_action_mask
        kept = legal & ~jax.vmap(futile)(states)
        return jnp.where(kept.any(axis=-1, keepdims=True), kept, legal)

    return playable
