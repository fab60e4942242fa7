"""Ablation sweeps over search and training settings, seeds vmapped in one program.

    python experiments/sweep.py --game tictactoe \\
        --param num_simulations=8,16,32,64 --param policy=puct,gumbel --seeds 4

The same as `azjax sweep tictactoe ...` (`azjax.commands.sweep`, whose --help lists every
option).
"""

from azjax.commands.errors import run_script
from azjax.commands.sweep import main

if __name__ == "__main__":
    run_script(main)
