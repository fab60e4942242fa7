"""Measuring agents: baseline players, matches and their one scorer, the evaluators a run
reports while it trains, AlphaGo Zero gating, Elo ratings and the league.

Modules:

* `baselines`, `rollout_mcts`, `alphabeta`: players that need no training (random,
  pure MCTS with random rollouts, alpha-beta, exact solvers).
* `player_specs`: a player from a spec string (`make_player("mcts:100", env)`).
* `stats`, `ratings`: confidence intervals, Bradley-Terry Elo.
* `match`: `play_match`, the one function that plays one player against another, and
  `MatchResult`, the one scorer.
* `evaluators`: what a run reports about its agent (ground truth, or scores against
  baselines).
* `gating`: the latest network must beat the best one to replace it.
* `league`: a round robin over a run's checkpoints and baselines, rated by Elo.

May import: `envs`, `azjax.core`, `azjax.run`, `azjax.go`.
"""

from azjax.evaluation.alphabeta import alphabeta_player
from azjax.evaluation.baselines import random_player, rollout_mcts_player, solver_player
from azjax.evaluation.evaluators import make_evaluator
from azjax.evaluation.gating import Gate
from azjax.evaluation.league import League, run_league
from azjax.evaluation.match import MatchResult, play_match
from azjax.evaluation.player_specs import make_player
from azjax.evaluation.ratings import Ratings, fit_elo
from azjax.evaluation.stats import mean_ci, wilson_interval

__all__ = [
    "Gate",
    "League",
    "MatchResult",
    "Ratings",
    "alphabeta_player",
    "fit_elo",
    "make_evaluator",
    "make_player",
    "mean_ci",
    "play_match",
    "random_player",
    "rollout_mcts_player",
    "run_league",
    "solver_player",
    "wilson_interval",
]
