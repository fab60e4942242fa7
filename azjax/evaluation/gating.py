"""AlphaGo Zero gating: the latest network must beat the best one to replace it.

Every `gate_every` iterations the latest network and the best so far play `gate_games`
games with search (noise off, `gate_openings` random opening plies paired across seats so
the games differ), through `azjax.evaluation.match.play_match`. The latest becomes the best when its
score, draws counted as half a point, reaches `gate_threshold` (0.55 in the paper); a
draw-heavy arena therefore never promotes a network that did not win more than it lost.
"""

from __future__ import annotations

import chex

from azjax.core.players import Player
from azjax.evaluation.match import MatchResult, play_match
from azjax.run.config import RunConfig
from envs import Env


def gate_decision(result: MatchResult, threshold: float) -> tuple[float, bool]:
    """(score of the latest network, whether it replaces the best) from its arena result."""
    # Compared in points, so that e.g. 55 of 100 is not lost to float rounding.
    return result.score, result.points >= threshold * result.num_games - 1e-9


class Gate:
    """The gating arena of a run: `latest` and `best` are search players of the same
    compiled search (the run's, at `gate_simulations` when set), bound anew to each
    gate's parameters."""

    def __init__(self, env: Env, latest: Player, best: Player, run: RunConfig):
        self.env, self.latest, self.best, self.run = env, latest, best, run

    def __call__(self, latest_params, best_params, key: chex.PRNGKey) -> tuple[float, bool]:
        """Plays the arena; returns the latest network's score and the decision."""
        result = play_match(self.env, self.latest.with_params(latest_params),
                            self.best.with_params(best_params), key, self.run.gate_games,
                            self.run.gate_openings)
        return gate_decision(result, self.run.gate_threshold)
