"""What compiles: the one XLA program of a training iteration, and the agent's players.

Modules, in the order they build on each other:

* `identity`: caches keyed by a game object itself, never by its hash or equality.
* `fields`: marks on config fields (which settings are traced values) and their checks.
* `conv`, `networks`: the policy-value network (`NetworkConfig`, `PolicyValueNet`).
* `game_hooks`: what a game's own hooks add to the search (score utility, futile moves).
* `rollouts`, `search_model`, `search`: random playouts, the game as mctx's model, and the
  search over any game (`SearchConfig`).
* `tree_reuse`: the search that keeps its subtree between moves (`search.reuse_tree`).
* `replay`: the on-device FIFO ring of positions.
* `selfplay`: B games at once, S moves per call (`SelfPlayConfig`).
* `outcomes`: each self-play position labelled with its game's outcome once it ended.
* `reanalyse`: stored positions searched again with the latest network (MuZero Reanalyse).
* `learner`: the AlphaZero loss and its Optax settings (`LearnerConfig`).
* `memory`: bytes a game, a search or a match needs, estimated from shapes alone.
* `program`: `ProgramConfig`, everything the iteration is built from.
* `counters`: iterations, games and positions in two 32-bit words (`Count`): no ceiling.
* `device_split`: a program split over N devices: each device's share, and what keeps
  a program from splitting.
* `iteration`: one training iteration as one pure function (`TrainState`).
* `stacked`: E experiments of one program as one vmapped, sharded step.
* `players`: the `Player` type and the trained agent's players (network, network + search).

May import: `envs`, and JAX, Flax, Optax, mctx, chex. Nothing of the rest of `azjax`:
the core knows nothing of run directories, evaluation, Go's tools or the driver.
"""

from azjax.core.fields import traced
from azjax.core.iteration import DATA_AXIS, TrainState, init_train_state, make_iteration_fn
from azjax.core.learner import LearnerConfig, LossInfo, alphazero_loss
from azjax.core.networks import NetworkConfig, PolicyValueNet, init_params, make_network
from azjax.core.players import AgentParams, Player, network_player, search_player
from azjax.core.program import ProgramConfig
from azjax.core.replay import Positions, ReplayState
from azjax.core.search import SearchConfig, make_search_fn
from azjax.core.selfplay import SelfPlayConfig, init_games, make_play_fn
from azjax.core.stacked import group_step, stack, unstack

__all__ = [
    "DATA_AXIS",
    "AgentParams",
    "LearnerConfig",
    "LossInfo",
    "NetworkConfig",
    "Player",
    "PolicyValueNet",
    "Positions",
    "ProgramConfig",
    "ReplayState",
    "SearchConfig",
    "SelfPlayConfig",
    "TrainState",
    "alphazero_loss",
    "group_step",
    "init_games",
    "init_params",
    "init_train_state",
    "make_iteration_fn",
    "make_network",
    "make_play_fn",
    "make_search_fn",
    "network_player",
    "search_player",
    "stack",
    "traced",
    "unstack",
]
