"""azjax: AlphaZero in JAX — mctx search, Flax network, Optax learner, one XLA iteration.

The public API (`__all__`): configs, the driver (`train`, `train_group`), agents, players
and matches. Command-line tools are modules run with `python -m`: `azjax.arena`,
`azjax.league`, `azjax.play`, `azjax.export`; sweeps are `azjax.sweep.run_sweep` (and
`experiments/sweep.py`).
"""

from azjax.agent import Agent
from azjax.config import ProgramConfig, RunConfig, TrainConfig
from azjax.driver import TrainResult, train, train_group
from azjax.evaluation import make_evaluator
from azjax.learner import LearnerConfig
from azjax.match import MatchResult, play_match
from azjax.networks import NetworkConfig, PolicyValueNet
from azjax.player_specs import make_player
from azjax.players import Player
from azjax.recipes import recipe
from azjax.search import SearchConfig
from azjax.selfplay import SelfPlayConfig

evaluate = play_match
"""The name the arena's match function had before `play_match`; kept for scripts."""

__all__ = [
    "Agent",
    "LearnerConfig",
    "MatchResult",
    "NetworkConfig",
    "Player",
    "PolicyValueNet",
    "ProgramConfig",
    "RunConfig",
    "SearchConfig",
    "SelfPlayConfig",
    "TrainConfig",
    "TrainResult",
    "evaluate",
    "make_evaluator",
    "make_player",
    "play_match",
    "recipe",
    "train",
    "train_group",
]
