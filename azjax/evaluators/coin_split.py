"""Grundy's coin-splitting game against its exact solution (Grundy numbers).

Every position reachable from the start is solved (`envs.coin_split.all_positions`). A
right move keeps a win: the share is taken over the winning positions (in a lost one
every move loses), and the value sign is checked on every live position. Choosing a
winning move in every winning position is perfect play.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from azjax.evaluators.ground_truth import GroundTruth, GroundTruthSource
from envs import Env
from envs.coin_split import all_positions


def load(env: Env) -> GroundTruth:
    """Every live position with its winning moves and its winner."""
    solved = all_positions(env.coins, env.max_coins)
    live = ~solved.terminal
    states = jax.vmap(env.state_from_counts)(jnp.asarray(solved.counts[live]))
    wins = solved.wins[live]
    return GroundTruth(
        states=states,
        right_moves=solved.winning_actions[live],
        counted=wins,
        value_states=states,
        value_sign=np.where(wins, 1, -1),
    )


SOURCE = GroundTruthSource(metric="winning_move_share", complete=True, load=load,
                           values=True)
