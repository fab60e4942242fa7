"""How many bytes a game, a search or a training program needs, before anything is built.

Sizes come from shapes alone (`jax.eval_shape`): nothing is allocated to estimate them.
The estimates count what is held at once (replay ring, live games, search trees, network
and optimizer, activations), not XLA's temporaries, so they are a floor; `check_fits`
refuses only what exceeds the memory outright.

    from azjax.core import memory
    memory.check_fits("the arena", memory.search_tree_bytes(env, 4096, 800))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax

from azjax.core.identity import cache_by_identity
from azjax.core.networks import NetworkConfig, abstract_params
from envs import Env
from envs.limits import available_bytes, check_fits, format_bytes

__all__ = [
    "activation_bytes",
    "arena_bytes",
    "available_bytes",
    "check_fits",
    "check_match_fits",
    "check_parts",
    "describe",
    "format_bytes",
    "network_bytes",
    "replay_entry_bytes",
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


@cache_by_identity(maxsize=64)
def _abstract_state(env: Env):
    return jax.eval_shape(env.init, jax.random.key(0))


def state_bytes(env: Env) -> int:
    """Bytes of one (unbatched) state of `env` (from `jax.eval_shape`: nothing built)."""
    return tree_bytes(_abstract_state(env))


def search_tree_bytes(env: Env, batch: int, simulations: int) -> int:
    """Bytes of the mctx search tree of `batch` roots with `simulations` simulations each
    (every node keeps its state and per-action statistics); a tree kept between moves
    (`SearchConfig.tree_nodes`) counts as `tree_nodes - 1` simulations."""
    per_node = state_bytes(env) + env.num_actions * TREE_BYTES_PER_ACTION + TREE_BYTES_PER_NODE
    return batch * (simulations + 1) * per_node


def replay_entry_bytes(env: Env) -> int:
    """Bytes of one position in the replay ring (`azjax.core.replay.Positions`)."""
    observation = _abstract_state(env).observation
    return (math.prod(env.observation_shape) * observation.dtype.itemsize
            + env.num_actions * 4 + REPLAY_SCALAR_BYTES)


@cache_by_identity(maxsize=64)
def network_bytes(env: Env, network: NetworkConfig) -> int:
    """Bytes of the parameters of `env`'s network (`azjax.core.networks.abstract_params`)."""
    return tree_bytes(abstract_params(env, network))


def activation_bytes(env: Env, network: NetworkConfig, batch: int) -> int:
    """Rough bytes of the network's activations on `batch` positions: each 3x3 conv sees
    its input 9 times over (`azjax.core.networks.PatchConv`); float32 throughout."""
    *cells, planes = env.observation_shape
    area = math.prod(cells)
    c = network.channels
    per_position = area * (9 * planes + c + network.num_blocks * 2 * (9 * c + 3 * c))
    return batch * per_position * 4


def arena_bytes(env: Env, games: int, simulations: int) -> int:
    """Bytes of a match of `games` games played at once with searches of `simulations`
    simulations (the games, their openings and one search tree)."""
    return 2 * games * state_bytes(env) + search_tree_bytes(env, games, simulations)


def describe(parts: dict[str, int], top: int = 3) -> str:
    """The largest parts as "replay ring 35.1 GB, self-play search trees 4.0 GB"."""
    largest = sorted(parts.items(), key=lambda item: -item[1])[:top]
    return ", ".join(f"{name} {format_bytes(size)}" for name, size in largest)


def check_parts(what: str, parts: dict[str, int], experiments: int = 1) -> None:
    """ValueError (one line, the largest parts named) when `experiments` copies of
    `parts` would not fit in memory (`check_fits`)."""
    detail = describe(parts)
    if experiments > 1:
        what, detail = f"{experiments} experiments of {what}", f"each: {detail}"
    check_fits(what, experiments * sum(parts.values()), detail)


def check_match_fits(env: Env, num_games: int, searches: Sequence[tuple[str, int]]
                     ) -> None:
    """ValueError (one line, before anything is allocated) when a match of `num_games`
    batched games would not fit in memory: the live games, and a search tree over the
    batch for each searching player (`searches`: (player name, simulations per move))."""
    if num_games < 1:
        return  # play_match refuses it with its own message
    parts = {"live games": num_games * state_bytes(env)}
    for name, simulations in searches:
        if simulations > 0:
            parts[f"search trees of {name}"] = search_tree_bytes(env, num_games, simulations)
    check_fits(f"a match of {num_games:,} games of {env.name}", sum(parts.values()),
               describe(parts))
