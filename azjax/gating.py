"""AlphaGo Zero gating: the latest network must beat the best one to replace it.

Every `gate_every` iterations the latest network and the best so far play
`gate_games` games with search (noise off, `gate_openings` random opening plies paired
across seats so the games differ). The latest becomes the best when its score, draws
counted as half a point, reaches `gate_threshold` (0.55 in the paper); a draw-heavy
arena therefore never promotes a network that did not win more than it lost.
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import numpy as np

from azjax import match
from azjax.config import TrainConfig
from azjax.players import search_player
from envs import Env


def gate_decision(results, threshold: float) -> tuple[float, bool]:
    """(score of the latest network, whether it replaces the best) from arena results."""
    results = np.asarray(jax.device_get(results))
    points = float((results > 0).sum()) + 0.5 * float((results == 0).sum())
    # Compared in points, so that e.g. 55 of 100 is not lost to float rounding.
    return points / len(results), points >= threshold * len(results) - 1e-9


class Gate:
    """The compiled gating arena of a run."""

    def __init__(self, env: Env, apply_fn, config: TrainConfig):
        search = config.search
        if config.gate_simulations:
            search = dataclasses.replace(search, num_simulations=config.gate_simulations)
        self.threshold = config.gate_threshold

        def arena(params, best_params, key):
            latest = search_player(env, apply_fn, params, search, "latest")
            best = search_player(env, apply_fn, best_params, search, "best")
            return match.play_match(env, latest.act, best.act, key, config.gate_games,
                                    opening_plies=config.gate_openings)

        self._arena = jax.jit(arena)

    def __call__(self, params, best_params, key: chex.PRNGKey) -> tuple[float, bool]:
        """Plays the arena; returns the latest network's score and the decision."""
        return gate_decision(self._arena(params, best_params, key), self.threshold)
