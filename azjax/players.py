"""Players: batched move choosers with one interface, `act(states, key) -> actions [B]`.

A `Player` wraps any way of choosing moves (random, the network alone, network + search,
pure rollout MCTS, AlphaGo-style mixed leaves, alpha-beta, exact solvers) so the arena,
the league and training-time evaluation treat them alike. `jittable` players run inside
one on-device `lax.while_loop` match; the others (alpha-beta on the host) are driven by a
host loop over plies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from azjax.rollout_mcts import UCTConfig, uct_actions
from azjax.rollouts import uniform_choice, uniform_legal_actions
from azjax.search import (
    SearchConfig,
    deterministic,
    greedy_action,
    make_search_fn,
    masked_logits,
)
from azjax.solvers import tictactoe as ttt_solver
from envs import Env, State, coin_split

ActFn = Callable[[State, chex.PRNGKey], chex.Array]


@dataclasses.dataclass(frozen=True)
class Player:
    """A named batched policy: `act(states [B], key) -> int32 actions [B]`.

    `act` must return a legal action for every live state; what it returns for a
    finished game is ignored. `jittable=False` marks host-side players.
    """

    name: str
    act: ActFn
    jittable: bool = True


def random_player(name: str = "random") -> Player:
    """Uniform over legal moves."""
    return Player(name, uniform_legal_actions)


def network_player(apply_fn, params, name: str = "network", greedy: bool = True) -> Player:
    """The policy head alone: its argmax over legal moves, or a sample from it."""

    def act(states: State, key: chex.PRNGKey) -> chex.Array:
        logits, _ = apply_fn(params, states.observation)
        logits = masked_logits(logits, states.legal_action_mask)
        if greedy:
            return jnp.argmax(logits, axis=-1).astype(jnp.int32)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    return Player(name, act)


def search_player(env: Env, apply_fn, params, search: SearchConfig, name: str = "alphazero",
                  greedy: bool = True) -> Player:
    """Network + mctx search (PUCT or Gumbel, any budget; AlphaGo leaf mix when the
    config's `rollout_lambda > 0`). Greedy: root noise off and the search's own choice;
    otherwise a sample from the search policy, noise on."""
    search_fn = make_search_fn(env, apply_fn, search)
    search_params = deterministic(search) if greedy else search.params()

    def act(states: State, key: chex.PRNGKey) -> chex.Array:
        search_key, sample_key = jax.random.split(key)
        output = search_fn(params, search_params, search_key, states)
        if greedy:
            return greedy_action(search, output)
        pi = output.action_weights
        return jax.random.categorical(sample_key, masked_logits(jnp.log(pi), pi > 0)).astype(
            jnp.int32
        )

    return Player(name, act)


def rollout_mcts_player(env: Env, num_simulations: int = 1000,
                        exploration: float = UCTConfig.exploration, name: str | None = None
                        ) -> Player:
    """Pure MCTS with random rollouts (UCT), no network."""
    config = UCTConfig(num_simulations=num_simulations, exploration=exploration)
    return Player(name or f"mcts:{num_simulations}", uct_actions(env, config))


def _tictactoe_solver(env: Env) -> ActFn:
    solution = ttt_solver.solution()
    codes = (solution.boards.astype(np.int64) + 1) @ (3 ** np.arange(9))
    table = np.zeros((3**9, 9), bool)
    table[codes] = solution.optimal
    table, powers = jnp.asarray(table), jnp.asarray(3 ** np.arange(9), jnp.int32)

    def act(states: State, key: chex.PRNGKey) -> chex.Array:
        codes = (states.board.astype(jnp.int32) + 1) @ powers
        return uniform_choice(table[codes] & states.legal_action_mask, key)

    return act


def _coin_split_solver(env: Env) -> ActFn:
    grundy = jnp.asarray(coin_split.grundy_values(env.max_coins), jnp.int32)
    table = coin_split.split_table(env.max_coins)
    size, small = jnp.asarray(table[:, 0]), jnp.asarray(table[:, 1])

    def act(states: State, key: chex.PRNGKey) -> chex.Array:
        odd = (states.counts.astype(jnp.int32) % 2) == 1
        terms = jnp.where(odd, grundy[None, :], 0)
        position = jax.lax.reduce(terms, jnp.int32(0), jax.lax.bitwise_xor, (1,))
        after = position[:, None] ^ grundy[size] ^ grundy[small] ^ grundy[size - small]
        legal = states.legal_action_mask
        winning = legal & (after == 0)
        choice = jnp.where(jnp.any(winning, -1, keepdims=True), winning, legal)
        return uniform_choice(choice, key)

    return act


SOLVERS = {"tictactoe": _tictactoe_solver, "coin_split": _coin_split_solver}


def solver_player(env: Env, name: str = "solver") -> Player:
    """Perfect play from the exact solution (tic-tac-toe, coin splitting), with random
    choice among the optimal moves (a random legal move in a lost coin-split position)."""
    if env.name not in SOLVERS:
        raise ValueError(
            f"no exact solver for {env.name!r}; solvers exist for {sorted(SOLVERS)} "
            "(Connect Four is scored on the solver benchmark positions instead)"
        )
    return Player(name, SOLVERS[env.name](env))
