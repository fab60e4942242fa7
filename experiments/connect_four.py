"""AlphaZero on Connect Four, scored against exact solver positions while it trains.

    python experiments/connect_four.py [--run-dir DIR] [--max-minutes M] [--help for every option]

Every evaluation reports the share of the 1,000 solved positions of
`envs/data/connect4/dev_set.jsonl` where the network alone (and, every third evaluation,
network + search at the training budget) picks an optimal move, overall and on the
non-trivial half, and the value-sign accuracy on the public solver benchmark positions.
The defaults fit a 2-core CPU: a small residual network (the search is bound by the
network on CPU), Gumbel search with 32 simulations, and 60 minutes of training. On a
GPU (or with --preset gpu) its gpu variant: 4,096 games, a 64x5 network, 10 minutes.
"""

from azjax.commands.train import script

if __name__ == "__main__":
    script("connect_four")  # the same as `azjax train connect_four`
