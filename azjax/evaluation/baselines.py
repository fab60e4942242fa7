"""Baseline players that need no training: uniform random play, pure MCTS with random
rollouts (UCT) and a game's exact solver, registered as the player kinds `random`,
`mcts:N[,c=C]` and `solver` (`azjax.run.grammar.specs`). Alpha-beta is
`azjax.evaluation.alphabeta`; the trained agent's players are `azjax.core.players`."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from azjax.core.players import Player
from azjax.core.rollouts import uniform_choice, uniform_legal_actions
from azjax.evaluation.rollout_mcts import UCTConfig, uct_actions
from azjax.run.grammar.specs import PlayerKind, PlayerSpec, number, register_player
from envs import Env, State


def _random_policy(params, states: State, key: chex.PRNGKey) -> chex.Array:
    del params
    return uniform_legal_actions(states, key)


def random_player(name: str = "random") -> Player:
    """Uniform over legal moves."""
    return Player(name, _random_policy)


def rollout_mcts_player(env: Env, num_simulations: int = 1000,
                        exploration: float = UCTConfig.exploration, name: str | None = None
                        ) -> Player:
    """Pure MCTS with random rollouts (UCT), no network."""
    config = UCTConfig(num_simulations=num_simulations, exploration=exploration)
    act = uct_actions(env, config)

    def policy(params, states: State, key: chex.PRNGKey) -> chex.Array:
        del params
        return act(states, key)

    return Player(name or f"mcts:{num_simulations}", policy)


def solver_player(env: Env, name: str = "solver") -> Player:
    """Perfect play from the game's exact solver (`Env.solver`: tic-tac-toe, coin
    splitting), with random choice among its right moves.

    Raises:
      ValueError: for a game without a solver.
    """
    right_moves = env.solver()
    if right_moves is None:
        raise ValueError(
            f"no exact solver for {env.name!r} (its Env.solver hook returns None); games with "
            "one: those whose class overrides Env.solver, e.g. tictactoe and coin_split"
        )
    right_moves = jax.vmap(right_moves)

    def policy(params, states: State, key: chex.PRNGKey) -> chex.Array:
        del params
        legal = states.legal_action_mask
        right = right_moves(states) & legal
        return uniform_choice(jnp.where(jnp.any(right, -1, keepdims=True), right, legal), key)

    return Player(name, policy)


register_player(PlayerKind(
    "random", "random", "uniform over legal moves",
    lambda spec, env, name: random_player(name)))
register_player(PlayerKind(
    "solver", "solver", "exact solution (tic-tac-toe, coin splitting)",
    lambda spec, env, name: solver_player(env, name)))


def _mcts(spec: PlayerSpec, env: Env, name: str) -> Player:
    return rollout_mcts_player(env, spec.value, spec.values.get("c", UCTConfig.exploration),
                               name)


register_player(PlayerKind(
    "mcts", "mcts:N[,c=C]",
    "pure MCTS with random rollouts, N simulations, UCB1 constant C", _mcts,
    arg=number("the simulation count", int), options={"c": number("c")},
    simulations=lambda spec: spec.value))
