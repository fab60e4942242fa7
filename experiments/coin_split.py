"""AlphaZero on Grundy's coin-splitting game, scored against its exact Grundy solution.

    python experiments/coin_split.py [--game-options coins=N] [--run-dir DIR] [--help]

Not a board game: a position is a multiset of piles (see `envs/coin_split.py` for the
action encoding and observation). Every reachable position is solved exactly, so the
run reports the share of winning positions where the agent keeps the win, and stops
once the network alone plays perfectly.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax.cli import run_script  # noqa: E402

RECIPE = "coin_split"  # its cpu or gpu variant: azjax.run.recipes.recipe("coin_split", preset)

if __name__ == "__main__":
    run_script(main, RECIPE, run_dir="runs/coin_split")
