"""AlphaZero on 9x9 Go (Tromp-Taylor area scoring, komi 7.5, simple ko), scored against random play.

    python experiments/go9x9.py [--game-options.komi K] [--game-options.history T] [--help]

There is no exact solver for Go here, so every evaluation plays the network alone
(and, every few evaluations, network + search) against a uniformly random player,
half the games from each seat, and reports the score (wins + draws / 2). The defaults
fit a 2-core CPU: 4 positions of history (AlphaGo Zero used 8), a small residual
network, Gumbel search with 16 simulations, 20 minutes of training.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax import LearnerConfig, NetworkConfig, SearchConfig, SelfPlayConfig  # noqa: E402
from azjax.config import TrainConfig  # noqa: E402

DEFAULTS = TrainConfig(
    game="go",
    game_options={"size": 9, "komi": 7.5, "history": 4},
    network=NetworkConfig(
        channels=32, num_blocks=2, policy_filters=2, value_filters=1, value_hidden=64
    ),
    search=SearchConfig(policy="gumbel", num_simulations=16, max_num_considered_actions=16),
    selfplay=SelfPlayConfig(
        num_games=128,
        steps_per_iteration=8,
        temperature_moves=8,
        random_move_prob=0.0,
        random_opening_moves=2,
    ),
    learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-4, batch_size=128),
    replay_capacity=64 * 128 * 8,
    augment="sample",
    gradient_steps=16,
    value_target_mix=0.5,
    iterations=100_000,
    max_minutes=20.0,
    eval_every=10,
    eval_search_every=4,
    checkpoint_every=50,
    stop_when_perfect=False,
)

if __name__ == "__main__":
    sys.exit(main(DEFAULTS, run_dir="runs/go9x9"))
