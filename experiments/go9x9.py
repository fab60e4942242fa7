"""AlphaZero on 9x9 Go (Tromp-Taylor area scoring, komi 7.5, positional superko), scored
against random play and GNU Go level 1.

    python experiments/go9x9.py [--game-options komi=K history=T] [--help]

There is no exact solver for Go here, so every evaluation plays the network alone
(and, every few evaluations, network + search) against a uniformly random player,
half the games from each seat, and reports the score (wins + draws / 2); network +
search also plays GNU Go level 1 (`gnugo:1`), whose score and points margin are logged.
The defaults fit a 2-core CPU: 4 positions of history (AlphaGo Zero used 8), a small residual
network, Gumbel search with 16 simulations, 20 minutes of training. On a GPU (or with
--preset gpu) its gpu variant: 1,024 games, a 64x4 network, 10 minutes.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax.cli import run_script  # noqa: E402

RECIPE = "go9x9"  # its cpu or gpu variant: azjax.run.recipes.recipe("go9x9", preset)

if __name__ == "__main__":
    run_script(main, RECIPE, run_dir="runs/go9x9")
