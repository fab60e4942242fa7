"""azjax: AlphaZero in JAX — mctx search, Flax network, Optax learner, one XLA iteration.

The package is built in layers; each imports only from the layers before it:

* `envs` (beside azjax): the games, pure JAX state machines.
* `azjax.core`: what compiles — network, search, self-play, replay, learner, the
  training iteration and the stacked group step, and the agent's players.
* `azjax.run`: a run's definition and what it leaves — configs, recipes, memory and
  device checks, checkpoints, locks, metrics, agent files and the `Agent`.
* `azjax.go`: Go's own tools — GNU Go as a player, the GTP engine and referee, SGF.
* `azjax.evaluation`: baselines, matches, evaluators, gating, ratings, player specs and
  the league.
* `azjax.driver`: the one training driver (`train`, `train_group`), its status lines
  and plots.
* `azjax.sweep`: ablation sweeps over a grid of settings and seeds.
* `azjax.commands`: every command (`azjax COMMAND`, `azjax/__main__.py`): train, sweep,
  arena, league, play, serve (play in the browser), export, info, gtp, gtp_referee, and
  the command-line helpers they share (`errors`, `command_line`). Commands never import
  one another.
* At the top: this public API, and entry points only (`python -m azjax.arena`, `.league`,
  `.play`, `.serve`, `.export`, `.gtp`, `.gtp_referee`, each running its command).

The public API is `__all__` below and each subpackage's `__all__`.
"""

from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig, PolicyValueNet
from azjax.core.players import Player
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig
from azjax.driver.driver import TrainResult, train, train_group
from azjax.evaluation.evaluators import make_evaluator
from azjax.evaluation.match import MatchResult, play_match
from azjax.evaluation.player_specs import make_player
from azjax.run.agents.agent import Agent
from azjax.run.browser.analysis_board import analysis_board
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.directory.process_record import installed_version
from azjax.run.recipes import recipe

__version__ = installed_version()
"""The installed distribution's version (pyproject.toml's), the one to cite ('0+unknown'
for a checkout that was never installed); agent files record it (`Agent.provenance`)."""

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
    "analysis_board",
    "make_evaluator",
    "make_player",
    "play_match",
    "recipe",
    "train",
    "train_group",
]
