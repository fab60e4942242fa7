"""AlphaZero on tic-tac-toe: trains until the network alone plays perfectly.

    python experiments/tictactoe.py [--run-dir DIR] [--seed N] [--help for every option]

The defaults below are the measured recipe (see the README): random openings and a few
random moves for coverage, a network wide enough for perfect play, half the search value
in the value target, a replay of the last 8 iterations and 256 gradient steps each.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax import LearnerConfig, NetworkConfig, SearchConfig, SelfPlayConfig  # noqa: E402
from azjax.config import TrainConfig  # noqa: E402

DEFAULTS = TrainConfig(
    game="tictactoe",
    network=NetworkConfig(channels=128, policy_filters=32, value_filters=4, value_hidden=64),
    search=SearchConfig(policy="gumbel", num_simulations=32, max_num_considered_actions=16),
    selfplay=SelfPlayConfig(
        num_games=256,
        steps_per_iteration=9,
        temperature_moves=2,
        random_move_prob=0.05,
        random_opening_moves=6,
    ),
    learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-5, batch_size=256),
    replay_capacity=8 * 256 * 9,
    augment="sample",
    gradient_steps=256,
    value_target_mix=0.5,
    iterations=300,
    eval_every=2,
    eval_search_every=5,
    checkpoint_every=20,
)

if __name__ == "__main__":
    sys.exit(main(DEFAULTS, run_dir="runs/tictactoe"))
