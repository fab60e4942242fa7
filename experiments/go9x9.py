"""AlphaZero on 9x9 Go (Tromp-Taylor area scoring, komi 7.5, positional superko), scored
against random play and GNU Go level 1.

    python experiments/go9x9.py [--game-options.komi K] [--game-options.history T] [--help]

There is no exact solver for Go here, so every evaluation plays the network alone
(and, every few evaluations, network + search) against a uniformly random player,
half the games from each seat, and reports the score (wins + draws / 2); network +
search also plays GNU Go level 1 (`gnugo:1`), whose score and points margin are logged.
The defaults fit a 2-core CPU: 4 positions of history (AlphaGo Zero used 8), a small residual
network, Gumbel search with 16 simulations, 20 minutes of training.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import main  # noqa: E402

from azjax.cli import run_script  # noqa: E402
from azjax.run.recipes import recipe  # noqa: E402

DEFAULTS = recipe("go9x9")

if __name__ == "__main__":
    run_script(main, DEFAULTS, run_dir="runs/go9x9")
