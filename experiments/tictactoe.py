"""AlphaZero on tic-tac-toe: trains until the network alone plays perfectly.

    python experiments/tictactoe.py [--run-dir DIR] [--seed N] [--help for every option]

The defaults are the measured recipe `azjax.run.recipes.recipe("tictactoe", "cpu")` (see the
README; on a GPU, or with --preset gpu, its gpu variant: 512 games and 128 steps of 512 each):
random openings and a few random moves for coverage, a network wide enough for perfect
play, half the search value in the value target, a replay of the last 8 iterations and
256 gradient steps each.
"""

from azjax.commands.train import script

if __name__ == "__main__":
    script("tictactoe")  # the same as `azjax train tictactoe`
