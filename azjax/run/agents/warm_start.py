"""Starting a run from another run's network weights (`RunConfig.warm_start`).

A curriculum over board sizes: train 7x7 Go, then start 9x9 from those weights (KataGo
trained on several board sizes at once for the same reason: small boards teach captures,
eyes and life cheaply). Only the network's parameters carry over; the optimizer, replay
and counters start fresh. Networks with `network.pooled_heads` have the same parameters on
every board size.
"""

from __future__ import annotations

import chex
import jax
import numpy as np

from azjax.core.networks import abstract_params
from azjax.core.program import ProgramConfig
from azjax.run.agents.agent import Agent
from envs import Env


def warm_start_params(source: str, env: Env, program: ProgramConfig) -> chex.ArrayTree:
    """The network weights of `source` (a run directory's newest checkpoint, or an agent
    file) as parameters of `program`'s network on `env`. Raises RunDirError or
    AgentFileError when there is no such run or file, and ValueError when its network's
    parameters do not have this run's shapes."""
    agent = Agent.load(source)
    if not same_shapes(agent.params, abstract_params(env, program.network)):
        raise ValueError(
            f"run.warm_start: the network of {source} ({agent.program.game} "
            f"{agent.program.game_options}, {_describe(agent.program)}) has other "
            f"parameters than this run's ({program.game} {program.game_options}, "
            f"{_describe(program)}); the networks must match, and across board sizes "
            f"both need --network.pooled-heads")
    return jax.tree.map(np.asarray, agent.params)


def same_shapes(a: chex.ArrayTree, b: chex.ArrayTree) -> bool:
    """Whether two parameter trees have one structure, shapes and dtypes (arrays or
    `jax.ShapeDtypeStruct`s)."""
    def shapes(tree):
        return jax.tree.map(lambda x: (tuple(x.shape), x.dtype), tree)
    return shapes(a) == shapes(b)


def _describe(program: ProgramConfig) -> str:
    net = program.network
    heads = [name for name in ("pooled_heads", "ownership_head", "score_head")
             if getattr(net, name)]
    return f"{net.torso} {net.channels}x{net.num_blocks}" + (
        f" with {', '.join(heads)}" if heads else "")


def placed_like(params: chex.ArrayTree, like: chex.ArrayTree) -> chex.ArrayTree:
    """`params` (host arrays) laid out as the arrays of `like` are (their sharding, on
    every process's devices)."""
    return jax.tree.map(
        lambda new, old: jax.make_array_from_callback(old.shape, old.sharding,
                                                      lambda index: new[index]),
        params, like)
