"""Tic-tac-toe against its exact solution: all 4,520 reachable non-terminal positions.

A right move is an optimal one; besides the share of positions where the agent plays one,
its whole table of moves is checked for being unbeatable from each seat, exhaustively
against every opponent reply (`azjax.solvers.tictactoe.losing_lines`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from azjax.evaluators.ground_truth import GroundTruth, GroundTruthSource
from azjax.solvers import tictactoe as solver
from envs import Env
from envs.tictactoe import state_from_board


def unbeatable(boards: np.ndarray, actions: np.ndarray) -> dict[str, float]:
    """Whether the player choosing `actions` [N] on `boards` [N, 9] (every live position)
    loses no game from the first seat, from the second, and from both (1.0 or 0.0)."""
    choose = solver.table_player(boards, actions)
    first = not solver.losing_lines(choose, 0)
    second = not solver.losing_lines(choose, 1)
    return {"unbeatable_first": float(first), "unbeatable_second": float(second),
            "unbeatable": float(first and second)}


def load(env: Env) -> GroundTruth:
    """Every live position with its optimal moves."""
    del env
    solution = solver.solution()
    live = solution.live
    boards = solution.boards[live]
    return GroundTruth(
        states=jax.vmap(state_from_board)(jnp.asarray(boards)),
        right_moves=solution.optimal[live],
        counted=np.ones(len(live), bool),
        check_actions=lambda actions: unbeatable(boards, actions),
    )


SOURCE = GroundTruthSource(metric="optimal_share", complete=True, load=load)
