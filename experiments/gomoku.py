"""AlphaZero on Gomoku (freestyle: k or more in a row wins), scored against random play.

    python experiments/gomoku.py [--game-options size=N k=K] [--help]

There is no exact solver for Gomoku here, so every evaluation plays the network alone
(and, every few evaluations, network + search) against a uniformly random player,
half the games from each seat, and reports the score (wins + draws / 2).
The defaults fit a 2-core CPU: 15x15, five in a row, a small residual network and
Gumbel search with 16 simulations, 20 minutes of training. On a GPU (or with --preset
gpu) its gpu variant: 1,024 games, a 64x4 network, 10 minutes.
"""

from azjax.commands.train import script

if __name__ == "__main__":
    script("gomoku")  # the same as `azjax train gomoku`
