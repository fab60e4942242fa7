"""AlphaZero on Grundy's coin-splitting game, scored against its exact Grundy solution.

    python experiments/coin_split.py [--game-options coins=N] [--run-dir DIR] [--help]

Not a board game: a position is a multiset of piles (see `envs/coin_split.py` for the
action encoding and observation). Every reachable position is solved exactly, so the
run reports the share of winning positions where the agent keeps the win, and stops
once the network alone plays perfectly.
"""

from azjax.commands.train import script

if __name__ == "__main__":
    script("coin_split")  # the same as `azjax train coin_split`
