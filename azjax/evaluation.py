"""Evaluation reported during training, against exact ground truth where a game has one.

Every evaluator has `network_metrics(params)` (cheap; includes `perfect`, which stops
training when the game's ground truth says the network plays perfectly) and
`search_metrics(params, key)` (network + search, noise off; costlier, run less often).
`make_evaluator` picks the game's evaluator: exact ground truth for tic-tac-toe,
Connect Four (solver benchmark positions) and the coin-splitting game (Grundy values);
games against a uniformly random player for every other game.

Tic-tac-toe: the share of the 4,520 reachable non-terminal positions where the agent
plays an optimal move (one batched pass over all of them), and whether the greedy agent
is unbeatable, checked exhaustively from both seats against every opponent reply. Both
for the network alone (argmax over legal moves) and for network + search (noise off).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from azjax import match
from azjax.players import network_player, search_player
from azjax.rollouts import uniform_legal_actions
from azjax.search import SearchConfig
from azjax.solvers import tictactoe as ttt_solver
from envs import Env
from envs.tictactoe import state_from_board

# Metric keys the progress line and the plots show, with their short labels.
METRIC_LABELS = {
    "net_optimal_share": "net optimal",
    "net_unbeatable": "net unbeatable",
    "search_optimal_share": "search optimal",
    "search_unbeatable": "search unbeatable",
    "net_move_accuracy": "net moves",
    "net_move_accuracy_hard": "net hard moves",
    "search_move_accuracy": "search moves",
    "search_move_accuracy_hard": "search hard moves",
    "net_value_accuracy": "net value sign",
    "net_winning_move_share": "net winning moves",
    "search_winning_move_share": "search winning moves",
    "net_vs_random": "net vs random",
    "search_vs_random": "search vs random",
}

class TicTacToeEvaluator:
    """Scores a tic-tac-toe network against the exact solution."""

    def __init__(self, env: Env, apply_fn, search_config: SearchConfig):
        self.solution = ttt_solver.solution()
        live = self.solution.live
        self.boards = self.solution.boards[live]
        self.optimal = self.solution.optimal[live]
        self.states = jax.vmap(state_from_board)(jnp.asarray(self.boards))
        self._network = jax.jit(
            lambda params: network_player(apply_fn, params).act(self.states, None)
        )
        self._search = jax.jit(
            lambda params, key: search_player(env, apply_fn, params, search_config).act(
                self.states, key
            )
        )

    def score(self, actions: np.ndarray, prefix: str) -> dict[str, float]:
        """Optimal-move share and unbeatability of a table of actions (one per position)."""
        actions = np.asarray(actions)
        share = float(np.mean(self.optimal[np.arange(len(actions)), actions]))
        choose = ttt_solver.table_player(self.boards, actions)
        first = not ttt_solver.losing_lines(choose, 0)
        second = not ttt_solver.losing_lines(choose, 1)
        return {
            f"{prefix}optimal_share": share,
            f"{prefix}unbeatable_first": float(first),
            f"{prefix}unbeatable_second": float(second),
            f"{prefix}unbeatable": float(first and second),
        }

    def network_metrics(self, params) -> dict[str, float]:
        """The network alone (argmax over legal moves), plus `perfect`."""
        metrics = self.score(jax.device_get(self._network(params)), "net_")
        metrics["perfect"] = float(metrics["net_optimal_share"] == 1.0 and metrics["net_unbeatable"])
        return metrics

    def search_metrics(self, params, key: chex.PRNGKey) -> dict[str, float]:
        """Network + search, noise off."""
        return self.score(jax.device_get(self._search(params, key)), "search_")

    def __call__(self, params, key: chex.PRNGKey | None = None, with_search: bool = False):
        """Metrics for the network alone (and with search when `with_search`)."""
        metrics = self.network_metrics(params)
        if with_search:
            key = jax.random.key(0) if key is None else key
            metrics.update(self.search_metrics(params, key))
        return metrics


class VersusRandomEvaluator:
    """Score (wins + draws / 2) against a uniformly random player, half the games per seat."""

    def __init__(self, env: Env, apply_fn, search_config: SearchConfig,
                 net_games: int = 128, search_games: int = 32):
        def net_match(params, key):
            return match.play_match(
                env, network_player(apply_fn, params).act, uniform_legal_actions, key, net_games
            )

        def search_match(params, key):
            agent = search_player(env, apply_fn, params, search_config)
            return match.play_match(env, agent.act, uniform_legal_actions, key, search_games)

        self._net = jax.jit(net_match)
        self._search = jax.jit(search_match)

    def network_metrics(self, params, key: chex.PRNGKey | None = None) -> dict[str, float]:
        """The network alone against random play (by default the same random opponent
        every time, so that a change between evaluations is the network's)."""
        key = jax.random.key(0) if key is None else key
        return {"net_vs_random": match.score(self._net(params, key))["score"], "perfect": 0.0}

    def search_metrics(self, params, key: chex.PRNGKey) -> dict[str, float]:
        """Network + search (noise off) against random play."""
        return {"search_vs_random": match.score(self._search(params, key))["score"]}


def make_evaluator(env: Env, apply_fn, search_config: SearchConfig):
    """The evaluator of `env`: exact ground truth where the game has one, else vs random."""
    if env.name == "tictactoe":
        return TicTacToeEvaluator(env, apply_fn, search_config)
    if env.name == "connect_four":
        from azjax.evaluators.connect_four import ConnectFourEvaluator

        return ConnectFourEvaluator(env, apply_fn, search_config)
    if env.name == "coin_split":
        from azjax.evaluators.coin_split import CoinSplitEvaluator

        return CoinSplitEvaluator(env, apply_fn, search_config)
    return VersusRandomEvaluator(env, apply_fn, search_config)
