"""One tiny 5x5 Go training program for every test that needs a Go run with heads.

Compiling a Go training program costs several times what the tic-tac-toe one of
`tests/tiny.py` does, so the tests that need a Go run with the ownership and score heads,
its replay ring or runs that start from other weights (`tests/test_auxiliary_targets.py`,
`test_warm_start.py`, `test_games_training.py`) share this one: 5x5 Go, a
one-convolution network whose weights fit every board size (`network.pooled_heads`)
with both heads, 4 simulations of Gumbel search with playout cap randomisation (a
quarter of the moves searched in full, the others with 2 simulations), 16 games of 8
moves an iteration, 2 gradient steps of 32 positions once more positions than one
iteration's have an outcome (`learn_after`), and a replay ring that keeps every
position of the run's 8 iterations. The run half (iterations, cadences, warm start)
changes nothing that compiles.

`trained(tmp_path_factory)` trains it once per process with `azjax.train`, into a run
directory (a checkpoint of the last iteration), and hands every caller that run: read
it; copy it (`shutil.copytree`) to change it. `random_params` draws a network's weights
with NumPy, for the tests that need weights but no training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np
import pytest

from azjax import train
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig, abstract_params
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig
from azjax.core.stacked import group_step
from azjax.driver.driver import TrainResult
from azjax.run.config import RunConfig, TrainConfig
from envs import Env

SIZE = 5
GAMES, STEPS, ITERATIONS = 16, 8, 8
LEARN_AFTER = GAMES * STEPS + 1  # never in the first iteration

NETWORK = NetworkConfig(channels=8, num_blocks=0, value_hidden=8, pooled_heads=True,
                        ownership_head=True, score_head=True)

CONFIG = TrainConfig(
    program=ProgramConfig(
        game="go", game_options={"size": SIZE, "komi": 0.5, "history": 2},  # no draws
        network=NETWORK,
        search=SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=4),
        selfplay=SelfPlayConfig(num_games=GAMES, steps_per_iteration=STEPS,
                                full_search_prob=0.25, cheap_simulations=2),
        learner=LearnerConfig(batch_size=32),
        replay_capacity=GAMES * STEPS * ITERATIONS,  # nothing is overwritten
        gradient_steps=2, learn_after=LEARN_AFTER),
    run=RunConfig(iterations=ITERATIONS, eval_every=0, checkpoint_every=0,
                  stop_when_perfect=False),
    seed=0)


def random_params(env: Env, network: NetworkConfig, seed: int = 0) -> dict:
    """Weights of `network` on `env` drawn with NumPy (normal, scale 0.3): nothing to
    compile, unlike the network's own initialisation."""
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda leaf: rng.normal(0, 0.3, leaf.shape).astype(leaf.dtype),
                        abstract_params(env, network))


class Trained(NamedTuple):
    """The shared run: its directory, its game, what `train` returned (the final train
    state, on the host, and one record an iteration), and the compiled step it trained
    with (`azjax.core.stacked.group_step` of one experiment), held here so that a test
    can run one more iteration without compiling it again."""

    path: Path
    env: Env
    result: TrainResult
    step: Callable


_TRAINED: list[Trained] = []


def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """`CONFIG` trained once per process (in the first caller's session directory);
    every later call returns the same run. Read-only."""
    if not _TRAINED:
        path = tmp_path_factory.mktemp("go_tiny") / "run"
        env = CONFIG.make_env()
        result = train(CONFIG, path, progress=None, env=env)
        result = dataclasses.replace(result, train_state=jax.device_get(result.train_state))
        _TRAINED.append(Trained(path, env, result, group_step(env, CONFIG.program, 1)))
    return _TRAINED[0]
