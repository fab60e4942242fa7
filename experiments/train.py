"""Train on any game: a shipped one, a pgx game, or a game of your own by import path.

    python experiments/train.py --game my_games.hex:Hex [--game-options size=5] \\
        [--run-dir DIR] [--iterations N] [--help for every option]

`--game` takes a registered name (tictactoe, connect_four, gomoku, go, coin_split, or a
name an installed package declares), a recipe name (go9x9), `pgx:<id>`, or the import path
`module:Class` of an `envs.Env` subclass or factory in your own file (the current
directory is searched, so `my_game:MyGame` finds ./my_game.py). The defaults are the
game's recipe (`azjax.run.recipes`) where it has one, else plain defaults. Check a game of
your own first: `python -m envs.check my_game:MyGame`.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import game_and_defaults, main  # noqa: E402

from azjax.cli import run_script  # noqa: E402


def run(argv: list[str] | None = None) -> int:
    """Trains the game `--game` names; returns the exit code."""
    game, defaults, argv = game_and_defaults(sys.argv[1:] if argv is None else argv)
    run_dir = "runs/" + re.sub(r"[^A-Za-z0-9_-]+", "_", game).strip("_")
    return main(defaults, run_dir=run_dir, argv=argv)


if __name__ == "__main__":
    run_script(run)
