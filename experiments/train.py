"""Train on any game: a shipped one, a pgx game, or a game of your own by import path.

    python experiments/train.py --game my_games.hex:Hex [--game-options size=5] \\
        [--run-dir DIR] [--iterations N] [--help for every option]

The same as `azjax train my_games.hex:Hex ...` (`azjax.commands.train`, whose --help says
what `--game` takes).
"""

from azjax.commands.errors import run_script
from azjax.commands.train import main

if __name__ == "__main__":
    run_script(main)
