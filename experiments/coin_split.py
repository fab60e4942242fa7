"""AlphaZero on Grundy's coin-splitting game, scored against its exact Grundy solution.

    python experiments/coin_split.py [--game-options.coins N] [--run-dir DIR] [--help]

Not a board game: a position is a multiset of piles (see `envs/coin_split.py` for the
action encoding and observation). Every reachable position is solved exactly, so the
run reports the share of winning positions where the agent keeps the win, and stops
once the network alone plays perfectly.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax import LearnerConfig, NetworkConfig, SearchConfig, SelfPlayConfig  # noqa: E402
from azjax.config import TrainConfig  # noqa: E402

DEFAULTS = TrainConfig(
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
    iterations=300,
    eval_every=2,
    eval_search_every=5,
    checkpoint_every=20,
)

if __name__ == "__main__":
    sys.exit(main(DEFAULTS, run_dir="runs/coin_split"))
