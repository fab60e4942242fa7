"""How many bytes a game, a search or a training program needs, before anything is built.

Sizes come from shapes alone (`jax.eval_shape`): nothing is allocated to estimate them.
The estimates count what is held at once (replay ring, live games, search trees, network
and optimizer, activations), not XLA's temporaries, so they are a floor; `check_fits`
refuses only what exceeds the memory outright.

    from azjax import memory
    memory.check_fits("the arena", memory.search_tree_bytes(env, 4096, 800))
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import jax

from azjax.networks import NetworkConfig, abstract_params
from envs import Env
from envs.core import available_bytes, check_fits, format_bytes

if TYPE_CHECKING:
    from azjax.config import ProgramConfig, TrainConfig

__all__ = [
    "activation_bytes",
    "arena_bytes",
    "available_bytes",
    "check_fits",
    "check_program_fits",
    "check_run_fits",
    "describe",
    "format_bytes",
    "network_bytes",
    "program_bytes",
    "program_parts",
    "replay_entry_bytes",
    "run_parts",
    "search_tree_bytes",
    "state_bytes",
    "tree_bytes",
]

# mctx's tree per node: 6 arrays over the actions (children index, prior logits, visits,
# rewards, discounts, values) and 5 scalars (visits, raw and mean value, parent, action).
TREE_BYTES_PER_ACTION = 6 * 4
TREE_BYTES_PER_NODE = 5 * 4
# Replay per position, besides observation and policy: player, search value, z, slot
# (4 bytes each) and has_z (1 byte).
REPLAY_SCALAR_BYTES = 4 * 4 + 1


def tree_bytes(tree) -> int:
    """Bytes of a pytree of arrays or `jax.ShapeDtypeStruct`s."""
    return sum(math.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))


@functools.lru_cache(maxsize=64)
def _abstract_state(env: Env):
    return jax.eval_shape(env.init, jax.random.key(0))


def state_bytes(env: Env) -> int:
    """Bytes of one (unbatched) state of `env` (from `jax.eval_shape`: nothing built)."""
    return tree_bytes(_abstract_state(env))


def search_tree_bytes(env: Env, batch: int, simulations: int) -> int:
    """Bytes of the mctx search tree of `batch` roots with `simulations` simulations each
    (every node keeps its state and per-action statistics)."""
    per_node = state_bytes(env) + env.num_actions * TREE_BYTES_PER_ACTION + TREE_BYTES_PER_NODE
    return batch * (simulations + 1) * per_node


def replay_entry_bytes(env: Env) -> int:
    """Bytes of one position in the replay ring (`azjax.replay.Positions`)."""
    observation = _abstract_state(env).observation
    return (math.prod(env.observation_shape) * observation.dtype.itemsize
            + env.num_actions * 4 + REPLAY_SCALAR_BYTES)


@functools.lru_cache(maxsize=64)
def network_bytes(env: Env, network: NetworkConfig) -> int:
    """Bytes of the parameters of `env`'s network (`azjax.networks.abstract_params`)."""
    return tree_bytes(abstract_params(env, network))


def activation_bytes(env: Env, network: NetworkConfig, batch: int) -> int:
    """Rough bytes of the network's activations on `batch` positions: each 3x3 conv sees
    its input 9 times over (`azjax.networks.PatchConv`); float32 throughout."""
    *cells, planes = env.observation_shape
    area = math.prod(cells)
    c = network.channels
    per_position = area * (9 * planes + c + network.num_blocks * 2 * (9 * c + 3 * c))
    return batch * per_position * 4


def arena_bytes(env: Env, games: int, simulations: int) -> int:
    """Bytes of a match of `games` games played at once with searches of `simulations`
    simulations (the games, their openings and one search tree)."""
    return 2 * games * state_bytes(env) + search_tree_bytes(env, games, simulations)


def program_parts(program: ProgramConfig, env: Env) -> dict[str, int]:
    """Bytes a training program holds, by part: replay ring, self-play search trees and
    games, one iteration's positions, network and optimizer, network activations (the
    estimate `program_bytes` sums)."""
    games = program.selfplay.num_games
    entry = replay_entry_bytes(env)
    # Parameters, gradients and Adam's two moments; the gating regime keeps a best copy.
    copies = 5 if program.regime == "gating" else 4
    # Training keeps forward activations for the backward pass: about twice the batch.
    activations = max(2 * program.learner.batch_size, games)
    return {
        "replay ring": program.replay_capacity * entry,
        "self-play search trees": search_tree_bytes(
            env, games, program.search.num_simulations),
        "self-play games": games * state_bytes(env),
        "one iteration's positions": program.replay_entries_per_iteration(env) * entry,
        "network and optimizer": copies * network_bytes(env, program.network),
        "network activations": activation_bytes(env, program.network, activations),
    }


def program_bytes(program: ProgramConfig, env: Env, experiments: int = 1) -> int:
    """Estimated bytes of a training program on `env`, for `experiments` programs run
    side by side (a vmapped group)."""
    return experiments * sum(program_parts(program, env).values())


def describe(parts: dict[str, int], top: int = 3) -> str:
    """The largest parts as "replay ring 35.1 GB, self-play search trees 4.0 GB"."""
    largest = sorted(parts.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name} {format_bytes(size)}" for name, size in largest)


def run_parts(config: TrainConfig, env: Env) -> dict[str, int]:
    """`program_parts` and the largest match a run plays beside its training state: the
    evaluation games (network + search) or the gating arena."""
    program, run = config.program, config.run
    parts = program_parts(program, env)
    matches = {}
    if run.eval_every and (run.eval_search_every or run.eval_opponents):
        matches["evaluation games"] = arena_bytes(
            env, run.eval_games, program.search.num_simulations)
    if program.regime == "gating":
        matches["gating arena"] = arena_bytes(
            env, run.gate_games, run.gate_simulations or program.search.num_simulations)
    if matches:
        name = max(matches, key=matches.get)
        parts[name] = matches[name]
    return parts


def check_program_fits(program: ProgramConfig, env: Env, experiments: int = 1) -> None:
    """Raises ValueError (one line, the largest parts named) when the training program
    would not fit in memory (`program_bytes` against `available_bytes`)."""
    _check_parts("this training program", program_parts(program, env), experiments)


def check_run_fits(config: TrainConfig, env: Env, experiments: int = 1) -> None:
    """`check_program_fits` with the run's evaluation and gating matches (`run_parts`)."""
    _check_parts("this training run", run_parts(config, env), experiments)


def _check_parts(what: str, parts: dict[str, int], experiments: int) -> None:
    detail = describe(parts)
    if experiments > 1:
        what, detail = f"{experiments} experiments of {what}", f"each: {detail}"
    check_fits(what, experiments * sum(parts.values()), detail)
