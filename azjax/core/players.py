"""Players: batched move choosers with one interface.

A `Player` is a name, a pure `policy(params, states [B], key) -> actions [B]` and the
`params` it plays with. Everything that chooses moves (random, the network alone, network
+ search, pure rollout MCTS, AlphaGo-style mixed leaves, alpha-beta, exact solvers) is
one, so matches, evaluators, gating and the league treat them alike. Keeping the
parameters apart from the policy lets a compiled match or evaluation be reused when only
the parameters change (`with_params`): the latest network at every evaluation, or each
experiment of a vmapped sweep group. `jittable` players run inside one on-device match;
the others (alpha-beta on the host) are driven by a host loop over plies.

This module holds the type and the trained agent's two players (`network_player`,
`search_player`); the baselines are in `azjax.evaluation.baselines`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from azjax.core.search import (
    ApplyFn,
    SearchConfig,
    deterministic,
    greedy_action,
    make_search_fn,
    masked_logits,
)
from azjax.core.tree_reuse import empty_kept, make_reusing_search_fn
from envs import Env, State

Policy = Callable[[Any, State, chex.PRNGKey], chex.Array]
ValueFn = Callable[[Any, State], chex.Array]


class Memory(NamedTuple):
    """What a player carries from one of its moves to its next (a search's kept tree).

    Attributes:
      init: `init(params, states [B]) -> memory`, the memory before a game's first move.
      policy: `policy(params, states [B], key, memory) -> (int32 actions [B], memory)`:
        the player's `policy` that also reads and returns its memory. Whoever drives the
        games keeps, per game, the memory of the player's own last move there.
    """

    init: Callable[[Any, State], Any]
    policy: Callable[[Any, State, chex.PRNGKey, Any], tuple[chex.Array, Any]]


@dataclasses.dataclass(frozen=True)
class Player:
    """A named batched policy with its parameters.

    Attributes:
      name: how results and tables call it.
      policy: `policy(params, states [B], key) -> int32 actions [B]`; it must return a
        legal action for every live state (what it returns for a finished game is
        ignored) and consume the key.
      params: what `policy` plays with (network weights, ...; None for fixed players).
      jittable: False for host-side players (their policy gets NumPy states).
      value: optional `value(params, states [B]) -> [B]`, the player's own estimate of
        each position for the player to move (the network's value head).
      memory: optional `Memory`, for a player that carries something between its moves
        (a search that keeps its tree); `policy` is then the same player with nothing
        remembered.
    """

    name: str
    policy: Policy
    params: Any = None
    jittable: bool = True
    value: ValueFn | None = None
    memory: Memory | None = None

    def act(self, states: State, key: chex.PRNGKey) -> chex.Array:
        """Actions [B] for a batch of live states [B]."""
        return self.policy(self.params, states, key)

    def with_params(self, params: Any, name: str | None = None) -> "Player":
        """The same policy playing with other parameters (and optionally another name)."""
        return dataclasses.replace(self, params=params, name=name or self.name)


@functools.lru_cache(maxsize=128)
def compiled(fn: Callable) -> Callable:
    """`jax.jit(fn)`, made once per function object: a player's policy or value compiles
    once and serves any parameters."""
    return jax.jit(fn)


class AgentParams(NamedTuple):
    """The parameters of a search player: network weights and the search's traced
    settings (a `SearchConfig`; its compiled-in settings must be the player's)."""

    network: chex.ArrayTree
    search: SearchConfig


def _value_fn(apply_fn: ApplyFn) -> ValueFn:
    def value(params, states: State) -> chex.Array:
        network = params.network if isinstance(params, AgentParams) else params
        return apply_fn(network, states.observation)[1]

    return value


def network_player(apply_fn: ApplyFn, params: Any = None, name: str = "network",
                   greedy: bool = True) -> Player:
    """The policy head alone: its argmax over legal moves, or a sample from it.

    Args:
      apply_fn: `apply_fn(params, obs (B, *observation_shape)) -> (logits (B, A),
        value (B,))`.
      params: the network's parameters (None: bind them later with `with_params`).
      name: the player's name.
      greedy: argmax (True) or a sample from the policy.

    Returns:
      A `Player` whose `act(states (B,), key)` gives (B,) int32 actions and whose
      `value` is the network's value (B,).
    """

    def policy(params, states: State, key: chex.PRNGKey) -> chex.Array:
        logits, _ = apply_fn(params, states.observation)
        logits = masked_logits(logits, states.legal_action_mask)
        if greedy:
            return jnp.argmax(logits, axis=-1).astype(jnp.int32)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    return Player(name, policy, params, value=_value_fn(apply_fn))


def search_player(env: Env, apply_fn: ApplyFn, params: Any, search: SearchConfig,
                  name: str = "alphazero", greedy: bool = True) -> Player:
    """Network + mctx search (PUCT or Gumbel, any budget; AlphaGo leaf mix when the config's
    `rollout_lambda > 0`).

    The player's params are `AgentParams(network params, search.as_arrays())`, so a
    search config with the same compiled-in settings can be swapped in with
    `with_params` without compiling again.

    Args:
      env: the game.
      apply_fn: the network, as for `network_player`.
      params: the network's parameters.
      search: the search's settings.
      name: the player's name.
      greedy: root noise off and the search's own choice (True), or a sample from the
        search policy with the noise on.

    Returns:
      A `Player` whose `act(states (B,), key)` gives (B,) int32 actions; with
      `search.reuse_tree` its `memory` keeps the search's tree between its moves
      (`azjax.core.tree_reuse`), and its `policy` searches afresh.
    """
    search_fn = make_search_fn(env, apply_fn, search)

    def choose(output, key: chex.PRNGKey) -> chex.Array:
        if greedy:
            return greedy_action(search, output, key)
        pi = output.action_weights
        return jax.random.categorical(key, masked_logits(jnp.log(pi), pi > 0)).astype(
            jnp.int32)

    def settings(params: AgentParams) -> SearchConfig:
        return deterministic(params.search) if greedy else params.search

    def policy(params: AgentParams, states: State, key: chex.PRNGKey) -> chex.Array:
        search_key, sample_key = jax.random.split(key)
        output = search_fn(params.network, settings(params), search_key, states)
        return choose(output, sample_key)

    memory = None
    if search.reuse_tree:
        reusing_fn = make_reusing_search_fn(env, apply_fn, search)

        def init(params: AgentParams, states: State):
            return empty_kept(env, apply_fn, search, params.network, states)

        def remembering(params: AgentParams, states: State, key: chex.PRNGKey, kept):
            search_key, sample_key = jax.random.split(key)
            found = reusing_fn(params.network, settings(params), search_key, states, kept)
            return choose(found.output, sample_key), found.kept

        memory = Memory(init, remembering)

    return Player(name, policy, AgentParams(params, search.as_arrays()),
                  value=_value_fn(apply_fn), memory=memory)
