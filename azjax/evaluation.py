"""Evaluation reported during training, against exact ground truth where a game has one.

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

from azjax.search import SearchConfig, greedy_action, make_search_fn, masked_logits
from azjax.solvers import tictactoe as ttt_solver
from envs import Env
from envs.tictactoe import state_from_board



def network_greedy_actions(apply_fn, params, states) -> chex.Array:
    """Argmax of the policy head over legal moves [B]."""
    logits, _ = apply_fn(params, states.observation)
    return jnp.argmax(masked_logits(logits, states.legal_action_mask), axis=-1)


def deterministic(search_config: SearchConfig):
    """Search params with the root noise switched off (Dirichlet and Gumbel)."""
    return search_config.params().replace(
        dirichlet_fraction=jnp.float32(0.0), gumbel_scale=jnp.float32(0.0)
    )


class TicTacToeEvaluator:
    """Scores a tic-tac-toe network against the exact solution."""

    def __init__(self, env: Env, apply_fn, search_config: SearchConfig):
        self.solution = ttt_solver.solution()
        live = self.solution.live
        self.boards = self.solution.boards[live]
        self.optimal = self.solution.optimal[live]
        self.states = jax.vmap(state_from_board)(jnp.asarray(self.boards))
        search_fn = make_search_fn(env, apply_fn, search_config)
        search_params = deterministic(search_config)
        self._network = jax.jit(lambda params: network_greedy_actions(apply_fn, params, self.states))
        self._search = jax.jit(
            lambda params, key: greedy_action(
                search_config, search_fn(params, search_params, key, self.states)
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

def make_evaluator(
    env: Env, apply_fn, search_config: SearchConfig
) -> TicTacToeEvaluator | None:
    """The ground-truth evaluator of `env`, or None where the game has none yet."""
    if env.name == "tictactoe":
        return TicTacToeEvaluator(env, apply_fn, search_config)
    return None
