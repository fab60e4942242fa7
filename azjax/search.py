"""mctx search over any env with a policy-value network.

The env itself is the model: `recurrent_fn` steps the real game. Illegal actions are
masked at every node (mctx masks only the root), and the two-player sign convention is
`discount = -1` (the next node's value is from the opponent's view) and 0 once the game
has ended.

AlphaGo-style leaf evaluation: with `rollout_lambda > 0` a leaf's value is
`(1 - lambda) * network value + lambda * z`, z the result of one uniformly random
playout from the leaf, as AlphaGo mixed its value network with fast rollouts
(lambda = 0 is AlphaZero, lambda = 1 leaves the network only the prior). The config's
value decides whether the compiled search has playouts at all (0: none, and the search
is exactly the AlphaZero one); the traced `SearchParams.rollout_lambda` sets the mix, so
one compiled search can sweep it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Literal

import chex
import jax
import jax.numpy as jnp
import mctx
from flax import struct

from azjax.rollouts import random_playout
from envs import Env, State

ApplyFn = Callable[[chex.ArrayTree, chex.Array], tuple[chex.Array, chex.Array]]
POLICIES = ("puct", "gumbel")


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Settings of the search; the float ones become traced `SearchParams`."""

    policy: Literal["puct", "gumbel"] = "gumbel"
    """'puct' (mctx.muzero_policy, Dirichlet noise at the root) or 'gumbel'."""
    num_simulations: int = 32
    """Simulations per move."""
    c_puct: float = 1.25
    """PUCT exploration constant (mctx pb_c_init)."""
    pb_c_base: float = 19652.0
    """PUCT base constant (mctx pb_c_base)."""
    dirichlet_alpha: float = 0.3
    """Dirichlet concentration of the root noise (PUCT)."""
    dirichlet_fraction: float = 0.25
    """Share of Dirichlet noise in the root prior (PUCT)."""
    gumbel_scale: float = 1.0
    """Scale of the Gumbel noise (Gumbel); 0 makes the search deterministic."""
    max_num_considered_actions: int = 16
    """Actions sampled at the root by Gumbel sequential halving."""
    rollout_lambda: float = 0.0
    """AlphaGo leaf mix: value = (1 - lambda) * network + lambda * random-playout result."""

    def validate(self) -> None:
        """Raises ValueError for settings mctx would reject or mis-handle."""
        if self.policy not in POLICIES:
            raise ValueError(f"search policy must be one of {POLICIES}, got {self.policy!r}")
        if self.num_simulations < 1:
            raise ValueError(f"num_simulations must be >= 1, got {self.num_simulations}")
        if self.max_num_considered_actions < 1:
            raise ValueError(
                f"max_num_considered_actions must be >= 1, got {self.max_num_considered_actions}"
            )
        for name in ("c_puct", "pb_c_base", "dirichlet_alpha"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0.0 <= self.dirichlet_fraction <= 1.0:
            raise ValueError(f"dirichlet_fraction must be in [0, 1], got {self.dirichlet_fraction}")
        if self.gumbel_scale < 0:
            raise ValueError(f"gumbel_scale must be >= 0, got {self.gumbel_scale}")
        if not 0.0 <= self.rollout_lambda <= 1.0:
            raise ValueError(f"rollout_lambda must be in [0, 1], got {self.rollout_lambda}")

    def params(self) -> "SearchParams":
        """The traced (non-shape) settings."""
        return SearchParams(
            c_puct=jnp.float32(self.c_puct),
            pb_c_base=jnp.float32(self.pb_c_base),
            dirichlet_alpha=jnp.float32(self.dirichlet_alpha),
            dirichlet_fraction=jnp.float32(self.dirichlet_fraction),
            gumbel_scale=jnp.float32(self.gumbel_scale),
            rollout_lambda=jnp.float32(self.rollout_lambda),
        )


@struct.dataclass
class SearchParams:
    """Search settings that do not change a shape, passed as traced values."""

    c_puct: chex.Array
    pb_c_base: chex.Array
    dirichlet_alpha: chex.Array
    dirichlet_fraction: chex.Array
    gumbel_scale: chex.Array
    rollout_lambda: chex.Array


def deterministic(search_config: SearchConfig) -> SearchParams:
    """Search params with the root noise switched off (Dirichlet and Gumbel)."""
    return search_config.params().replace(
        dirichlet_fraction=jnp.float32(0.0), gumbel_scale=jnp.float32(0.0)
    )


def masked_logits(logits: chex.Array, legal: chex.Array) -> chex.Array:
    """Logits with illegal actions set to the lowest finite value (never -inf)."""
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def mixed_value(env: Env, value: chex.Array, states: State, rollout_lambda: chex.Array,
                key: chex.PRNGKey) -> chex.Array:
    """`(1 - lambda) * value + lambda * playout result` [B]; no playout when lambda is 0."""
    playout = jax.lax.cond(
        rollout_lambda > 0,
        lambda: random_playout(env, states, key),
        lambda: jnp.zeros_like(value),
    )
    return (1.0 - rollout_lambda) * value + rollout_lambda * playout


def make_recurrent_fn(env: Env, apply_fn: ApplyFn, rollouts: bool = False
                      ) -> mctx.RecurrentFn:
    """The mctx model: step the game, evaluate the new position with the network (mixed
    with a random playout's result when `rollouts`).

    Its `params` are `(network params, SearchParams)` (the latter for the leaf mix).
    """

    def recurrent_fn(params, rng_key, action, state: State):
        params, search_params = params
        mover = state.current_player
        next_state = jax.vmap(env.step)(state, action)
        logits, value = apply_fn(params, next_state.observation)
        if rollouts:
            value = mixed_value(env, value, next_state, search_params.rollout_lambda, rng_key)
        reward = jnp.take_along_axis(next_state.rewards, mover[:, None], axis=1)[:, 0]
        ended = next_state.terminated
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=jnp.where(ended, 0.0, -1.0),
            prior_logits=masked_logits(logits, next_state.legal_action_mask),
            value=jnp.where(ended, 0.0, value),
        )
        return output, next_state

    return recurrent_fn


def make_search_fn(env: Env, apply_fn: ApplyFn, config: SearchConfig):
    """Returns `search(params, search_params, key, states) -> mctx.PolicyOutput`.

    `states` is a batch of live States [B]; the key is consumed. With PUCT the root
    prior gets Dirichlet noise (set `dirichlet_fraction=0` to switch it off).
    """
    config.validate()
    rollouts = config.rollout_lambda > 0
    recurrent_fn = make_recurrent_fn(env, apply_fn, rollouts)

    def search(params, search_params: SearchParams, key: chex.PRNGKey, states: State):
        chex.assert_rank(states.legal_action_mask, 2)
        logits, value = apply_fn(params, states.observation)
        if rollouts:
            root_key, key = jax.random.split(key)
            value = mixed_value(env, value, states, search_params.rollout_lambda, root_key)
        legal = states.legal_action_mask
        root = mctx.RootFnOutput(
            prior_logits=masked_logits(logits, legal), value=value, embedding=states
        )
        if config.policy == "puct":
            return mctx.muzero_policy(
                (params, search_params),
                key,
                root,
                recurrent_fn,
                num_simulations=config.num_simulations,
                invalid_actions=~legal,
                dirichlet_fraction=search_params.dirichlet_fraction,
                dirichlet_alpha=search_params.dirichlet_alpha,
                pb_c_init=search_params.c_puct,
                pb_c_base=search_params.pb_c_base,
            )
        return mctx.gumbel_muzero_policy(
            (params, search_params),
            key,
            root,
            recurrent_fn,
            num_simulations=config.num_simulations,
            invalid_actions=~legal,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=search_params.gumbel_scale,
        )

    return search


def root_value(output: mctx.PolicyOutput) -> chex.Array:
    """The search's value of each root [B], from the mover's point of view."""
    return output.search_tree.summary().value


def visit_counts(output: mctx.PolicyOutput) -> chex.Array:
    """Root visit counts [B, A]."""
    return output.search_tree.summary().visit_counts


def greedy_action(config: SearchConfig, output: mctx.PolicyOutput) -> chex.Array:
    """The search's deterministic choice [B]: most visits (PUCT) or the Gumbel winner.

    With `gumbel_scale=0` the Gumbel winner is deterministic too.
    """
    if config.policy == "puct":
        return jnp.argmax(visit_counts(output), axis=-1).astype(jnp.int32)
    return output.action.astype(jnp.int32)
