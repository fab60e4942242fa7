"""Grundy's coin-splitting game against its exact solution (Grundy numbers).

Every position reachable from the start is solved (`envs.coin_split.all_positions`).
Reported: the share of winning positions (the player to move can force a win) where the
agent picks a winning move, and the share of live positions where the sign of the
network's value is right. The network alone is perfect when it picks a winning move in
every winning position: that is perfect play.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from azjax.players import network_player, search_player
from azjax.search import SearchConfig
from envs import Env
from envs.coin_split import all_positions


class CoinSplitEvaluator:
    """Scores a coin-splitting network (alone and with search) on every reachable position."""

    def __init__(self, env: Env, apply_fn, search_config: SearchConfig):
        solved = all_positions(env.coins, env.max_coins)
        live = ~solved.terminal
        self.wins = solved.wins[live]
        self.winning_actions = solved.winning_actions[live]
        self.states = jax.vmap(env.state_from_counts)(jnp.asarray(solved.counts[live]))
        self._network = jax.jit(
            lambda params: (
                network_player(apply_fn, params).act(self.states, None),
                apply_fn(params, self.states.observation)[1],
            )
        )
        self._search = jax.jit(
            lambda params, key: search_player(env, apply_fn, params, search_config).act(
                self.states, key
            )
        )

    def winning_share(self, actions: np.ndarray) -> float:
        """Share of winning positions where `actions` keep the win."""
        actions = np.asarray(actions)
        right = self.winning_actions[np.arange(len(actions)), actions]
        return float(right[self.wins].mean()) if self.wins.any() else 1.0

    def network_metrics(self, params) -> dict[str, float]:
        """Winning-move share of the policy head's argmax, value-sign accuracy, `perfect`."""
        actions, value = jax.device_get(self._network(params))
        share = self.winning_share(actions)
        value_right = (np.asarray(value) > 0) == self.wins
        return {
            "net_winning_move_share": share,
            "net_value_accuracy": float(value_right.mean()),
            "perfect": float(share == 1.0),
        }

    def search_metrics(self, params, key: chex.PRNGKey) -> dict[str, float]:
        """Winning-move share of network + search at the training budget, noise off."""
        return {"search_winning_move_share": self.winning_share(jax.device_get(self._search(params, key)))}
