"""E experiments of one program as one: their states stacked along a leading axis, and
the jitted, vmapped training iteration that advances them together."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from azjax.config import ProgramConfig
from azjax.loop import make_iteration_fn
from azjax.selfplay import tree_select
from envs import Env


def stack(trees: Sequence[Any]) -> Any:
    """One pytree with a leading experiment axis [E, ...] from equally shaped pytrees."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def unstack(tree: Any, index: int) -> Any:
    """Experiment `index` of a stacked pytree."""
    return jax.tree.map(lambda x: x[index], tree)


_CACHE: dict[Any, Any] = {}
_MAX_CACHED = 8


def cached(key: Any, make: Callable[[], Any]) -> Any:
    """The value cached under `key`, made by `make()` the first time (a few are kept)."""
    if key not in _CACHE:
        if len(_CACHE) >= _MAX_CACHED:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make()
    return _CACHE[key]


def group_step(env: Env, program: ProgramConfig, num: int) -> Callable:
    """`step(state [E], active bool [E]) -> (state, metrics [E])`: one jitted, vmapped
    iteration of E experiments (the state is donated); experiments not `active` keep
    their state. Cached by program, so another group of the same program reuses it."""

    def make() -> Callable:
        iteration = jax.vmap(make_iteration_fn(env, program))
        if num == 1:
            def step(state, active):
                del active  # a run of one steps only while it is active
                return iteration(state)
        else:
            def step(state, active):
                new, metrics = iteration(state)
                return tree_select(active, new, state), metrics
        return jax.jit(step, donate_argnums=0)

    return cached(("step", id(env), program.compile_key(), num), make)
