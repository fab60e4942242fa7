"""One tiny tic-tac-toe program for every test that only needs *a* run.

Compiling a training program is most of what a training test costs, so the tests that
need a run, but not a particular one, train this one: `CONFIG` in Python, and `FLAGS`
on the command line of `experiments/tictactoe.py`, which give the same program
(`tests/test_tiny.py` holds them together). It is the tic-tac-toe recipe (cpu preset)
shrunk: a one-layer MLP of 16 units, 4 simulations of Gumbel search, 16 games, 4
gradient steps of 32 positions. The run half (iterations, cadences) changes nothing
that compiles: pick what a test needs with `CONFIG.replace(iterations=...)` or by adding
flags after `FLAGS`.

`tests/conftest.py` trains it once per worker (`tiny_run`, two iterations with a
checkpoint after each) for the tests that read a run; `tiny_run_copy` is a copy of
that run for a test that damages or resumes it.
"""

from __future__ import annotations

import dataclasses

from azjax.core.networks import NetworkConfig
from azjax.core.search import SearchConfig
from azjax.run.config import TrainConfig
from azjax.run.recipes import recipe

_RECIPE = recipe("tictactoe", "cpu")

CONFIG: TrainConfig = _RECIPE.replace(
    network=NetworkConfig(torso="mlp", channels=16, mlp_layers=1),
    search=SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=9),
    selfplay=dataclasses.replace(_RECIPE.program.selfplay, num_games=16),
    learner=dataclasses.replace(_RECIPE.program.learner, batch_size=32),
    replay_capacity=1024,
    gradient_steps=4,
    iterations=2,
    eval_every=0,
    checkpoint_every=1,
    stop_when_perfect=False,
)

# The same program from the command line (`--preset cpu`: the cpu recipe on any machine),
# and the same run half.
FLAGS: list[str] = [
    "--preset", "cpu",
    "--network.channels", "16", "--network.mlp-layers", "1",
    "--search.num-simulations", "4", "--search.max-num-considered-actions", "9",
    "--selfplay.num-games", "16", "--learner.batch-size", "32",
    "--replay-capacity", "1024", "--gradient-steps", "4",
    "--iterations", "2", "--eval-every", "0", "--checkpoint-every", "1",
    "--no-stop-when-perfect",
]
