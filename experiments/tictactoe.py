"""AlphaZero on tic-tac-toe: trains until the network alone plays perfectly.

    python experiments/tictactoe.py [--run-dir DIR] [--seed N] [--help for every option]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax.config import TrainConfig  # noqa: E402

DEFAULTS = TrainConfig(game="tictactoe")

if __name__ == "__main__":
    sys.exit(main(DEFAULTS, run_dir="runs/tictactoe"))
