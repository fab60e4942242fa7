"""AlphaZero on tic-tac-toe: trains until the network alone plays perfectly.

    python experiments/tictactoe.py [--run-dir DIR] [--seed N] [--help for every option]

The defaults are the measured recipe `azjax.run.recipes.recipe("tictactoe", "cpu")` (see the
README; on a GPU, or with --preset gpu, its gpu variant: 512 games and 128 steps of 512 each):
random openings and a few random moves for coverage, a network wide enough for perfect
play, half the search value in the value target, a replay of the last 8 iterations and
256 gradient steps each.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax.cli import run_script  # noqa: E402

RECIPE = "tictactoe"  # its cpu or gpu variant: azjax.run.recipes.recipe("tictactoe", preset)

if __name__ == "__main__":
    run_script(main, RECIPE, run_dir="runs/tictactoe")
