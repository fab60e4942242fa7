"""AlphaZero on Connect Four, scored against exact solver positions while it trains.

    python experiments/connect_four.py [--run-dir DIR] [--max-minutes M] [--help for every option]

Every evaluation reports the share of the 1,000 solved positions of
`azjax/data/connect4/dev_set.jsonl` where the network alone (and, every third evaluation,
network + search at the training budget) picks an optimal move, overall and on the
non-trivial half, and the value-sign accuracy on the public solver benchmark positions.
The defaults fit a 2-core CPU: a small residual network (the search is bound by the
network on CPU), Gumbel search with 32 simulations, and 60 minutes of training.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax import LearnerConfig, NetworkConfig, SearchConfig, SelfPlayConfig  # noqa: E402
from azjax.config import TrainConfig  # noqa: E402

DEFAULTS = TrainConfig(
    game="connect_four",
    network=NetworkConfig(
        channels=32, num_blocks=3, policy_filters=4, value_filters=2, value_hidden=64
    ),
    search=SearchConfig(policy="gumbel", num_simulations=32, max_num_considered_actions=8),
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
    iterations=100_000,
    max_minutes=60.0,
    eval_every=10,
    eval_search_every=3,
    checkpoint_every=50,
    stop_when_perfect=False,
)

if __name__ == "__main__":
    sys.exit(main(DEFAULTS, run_dir="runs/connect_four"))
