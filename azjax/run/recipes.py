"""The measured training recipes of the experiment scripts, as importable configs.

`recipe("tictactoe")` is what `python experiments/tictactoe.py` trains with; notebooks and
sweeps start from the same configs (`.replace(...)` them to change a setting: any field of
either half by its name, e.g. `recipe("tictactoe").replace(seed=3, iterations=50)`).
"""

from __future__ import annotations

import dataclasses

from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig
from azjax.run.config import RunConfig, TrainConfig

# 15x15, five in a row, a small residual network, Gumbel search with 16 simulations,
# 20 minutes of training.
_GOMOKU = TrainConfig(
    program=ProgramConfig(
        game="gomoku",
        game_options={"size": 15, "k": 5},
        network=NetworkConfig(
            channels=32, num_blocks=2, policy_filters=2, value_filters=1, value_hidden=64
        ),
        search=SearchConfig(policy="gumbel", num_simulations=16, max_num_considered_actions=16),
        selfplay=SelfPlayConfig(
            num_games=128,
            steps_per_iteration=8,
            temperature_moves=4,
            random_move_prob=0.0,
            random_opening_moves=2,
        ),
        learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-4, batch_size=128),
        replay_capacity=32 * 128 * 8,
        augment="sample",
        gradient_steps=16,
        value_target_mix=0.5,
    ),
    run=RunConfig(
        iterations=100_000,
        max_minutes=20.0,
        eval_every=10,
        eval_search_every=4,
        checkpoint_every=50,
        stop_when_perfect=False,
    ),
)

RECIPES: dict[str, TrainConfig] = {
    # Random openings and a few random moves for coverage, a 3x128 MLP (the board is too
    # small for convolutions to pay), half the search value in the value target, a replay
    # of the last 8 iterations and 256 gradient steps each at learning rate 2e-3; the
    # network is evaluated after every iteration (one batched pass) so the run stops as
    # soon as it is perfect: perfect play after 17-73 iterations on seeds 0-9 (median
    # 24.5; 44 at 1e-3), ~17 s on a 2-core CPU (benchmarks/tictactoe_time_to_perfect.py).
    "tictactoe": TrainConfig(
        program=ProgramConfig(
            game="tictactoe",
            network=NetworkConfig(torso="mlp", channels=128, mlp_layers=3),
            search=SearchConfig(
                policy="gumbel", num_simulations=32, max_num_considered_actions=16
            ),
            selfplay=SelfPlayConfig(
                num_games=256,
                steps_per_iteration=9,
                temperature_moves=2,
                random_move_prob=0.05,
                random_opening_moves=6,
            ),
            learner=LearnerConfig(learning_rate=2e-3, weight_decay=1e-5, batch_size=256),
            replay_capacity=8 * 256 * 9,
            augment="sample",
            gradient_steps=256,
            value_target_mix=0.5,
        ),
        run=RunConfig(
            iterations=300,
            eval_every=1,
            eval_search_every=0,
            checkpoint_every=20,
        ),
    ),
    # Fits a 2-core CPU: a small residual network (the search is bound by the network on
    # CPU), Gumbel search with 32 simulations, 60 minutes of training.
    "connect_four": TrainConfig(
        program=ProgramConfig(
            game="connect_four",
            network=NetworkConfig(
                channels=32, num_blocks=3, policy_filters=4, value_filters=2, value_hidden=64
            ),
            search=SearchConfig(policy="gumbel", num_simulations=32, max_num_considered_actions=8,
                                discount=0.97),
            selfplay=SelfPlayConfig(
                num_games=256,
                steps_per_iteration=8,
                temperature_moves=6,
                random_move_prob=0.02,
                random_opening_moves=4,
            ),
            learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-4, batch_size=256),
            replay_capacity=64 * 256 * 8,
            augment="sample",
            gradient_steps=32,
            value_target_mix=0.5,
        ),
        run=RunConfig(
            iterations=100_000,
            max_minutes=60.0,
            eval_every=10,
            eval_search_every=12,
            eval_simulations=512,
            checkpoint_every=50,
            stop_when_perfect=False,
        ),
    ),
    # Every reachable position is solved exactly; stops once the network alone is perfect.
    "coin_split": TrainConfig(
        program=ProgramConfig(
            game="coin_split",
            game_options={"coins": 20},
            network=NetworkConfig(channels=64, policy_filters=8, value_filters=4, value_hidden=64),
            search=SearchConfig(policy="gumbel", num_simulations=16, max_num_considered_actions=16),
            selfplay=SelfPlayConfig(
                num_games=256,
                steps_per_iteration=8,
                temperature_moves=2,
                random_move_prob=0.05,
                random_opening_moves=4,
            ),
            learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-5, batch_size=256),
            replay_capacity=16 * 256 * 8,
            augment="none",
            gradient_steps=64,
            value_target_mix=0.5,
        ),
        run=RunConfig(
            iterations=300,
            eval_every=2,
            eval_search_every=5,
            checkpoint_every=20,
        ),
    ),
    "gomoku": _GOMOKU,
    # The Gomoku recipe on 9x9 Go: 4 positions of history (AlphaGo Zero used 8), twice as
    # many opening plies sampled from the search policy, a replay twice as long; measured
    # against GNU Go level 1 (16 games, colours alternating) every 20 iterations.
    "go9x9": _GOMOKU.replace(
        game="go",
        game_options={"size": 9, "komi": 7.5, "history": 4},
        selfplay=dataclasses.replace(_GOMOKU.program.selfplay, temperature_moves=8),
        replay_capacity=64 * 128 * 8,
        eval_every=20,
        eval_search_every=2,
        eval_opponents=("gnugo:1",),
        eval_games=16,
    ),
}


def recipe(name: str) -> TrainConfig:
    """The training config of `experiments/<name>.py` (ValueError for an unknown name)."""
    if name not in RECIPES:
        raise ValueError(f"no recipe {name!r}; recipes: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]


def defaults_for(game: str) -> TrainConfig:
    """The recipe called `game` (`go9x9` included), else plain defaults for the game
    `game` names (any name or import path `envs.make` takes)."""
    if game in RECIPES:
        return RECIPES[game]
    return TrainConfig(program=ProgramConfig(game=game))
