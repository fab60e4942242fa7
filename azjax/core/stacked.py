"""E experiments of one program as one: their states stacked along a leading axis, and
the jitted, vmapped training iteration that advances them together, split over the
devices of a data mesh (`azjax.run.process.devices`): each experiment's games and replay ring along
`DATA_AXIS`, everything else replicated."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec

from azjax.core.identity import Identity
from azjax.core.iteration import DATA_AXIS, TrainState, init_train_state, make_iteration_fn
from azjax.core.program import ProgramConfig
from azjax.core.selfplay import tree_select
from envs import Env


def stack(trees: Sequence[Any]) -> Any:
    """One pytree with a leading experiment axis from equally shaped pytrees.

    Args:
      trees: E pytrees of the same structure and shapes.

    Returns:
      The pytree whose leaves are (E, ...) arrays.
    """
    return _stack(*trees)


def unstack(tree: Any, index: int) -> Any:
    """One experiment of a stacked pytree.

    Args:
      tree: a pytree whose leaves are (E, ...) arrays.
      index: the experiment, in [0, E).

    Returns:
      The pytree of its (...) slices.
    """
    return _unstack(tree, index)


# One program each, not one per leaf: run op by op they compiled a program per leaf.
@jax.jit
def _stack(*trees: Any) -> Any:
    return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


@functools.partial(jax.jit, static_argnums=1)
def _unstack(tree: Any, index: int) -> Any:
    return jax.tree.map(lambda x: x[index], tree)


_CACHE: dict[Any, Any] = {}
_MAX_CACHED = 8


def cached(key: Any, make: Callable[[], Any]) -> Any:
    """The value cached under `key`, made by `make()` the first time (a few are kept).

    Args:
      key: hashable; a game in it goes in as `Identity(env)`, so that a game of the
        user's need not be hashable and two equal games never share an entry.
      make: builds the value.

    Returns:
      The cached value.
    """
    if key not in _CACHE:
        if len(_CACHE) >= _MAX_CACHED:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = make()
    return _CACHE[key]


def state_specs(state: TrainState, stacked: bool = True) -> TrainState:
    """The PartitionSpec of every leaf of a (stacked) train state: the self-play games
    and the replay ring split along `DATA_AXIS`, everything else replicated."""
    split = PartitionSpec(None, DATA_AXIS) if stacked else PartitionSpec(DATA_AXIS)
    specs = jax.tree.map(lambda _: PartitionSpec(), state)
    return specs.replace(
        selfplay=jax.tree.map(lambda _: split, state.selfplay),
        replay=specs.replay.replace(data=jax.tree.map(lambda _: split, state.replay.data)),
    )


def _put(x: Any, sharding: jax.sharding.NamedSharding) -> Any:
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):  # device_put takes their data
        return jax.random.wrap_key_data(_put(jax.random.key_data(x), sharding),
                                        impl=jax.random.key_impl(x))
    return jax.device_put(x, sharding)


def state_shardings(state: TrainState, mesh: Mesh, stacked: bool = True) -> TrainState:
    """The NamedSharding on `mesh` of every leaf of a (stacked, abstract) train state, as
    `state_specs` says."""
    return jax.tree.map(lambda spec: jax.sharding.NamedSharding(mesh, spec),
                        state_specs(state, stacked))


def placed(state: TrainState, mesh: Mesh, stacked: bool = True) -> TrainState:
    """`state` laid out on `mesh` as `state_specs` says (every process passes the same
    state: a fresh one is made alike in each)."""
    return jax.tree.map(_put, state, state_shardings(state, mesh, stacked))


def init_placed(env: Env, program: ProgramConfig, key: jax.Array, mesh: Mesh) -> TrainState:
    """`init_train_state` made where `placed(..., stacked=False)` would put it: one
    program writing each device's part (placing a state made on one device would copy it
    leaf by leaf, a noticeable share of a short run's start:
    docs/results.md#what-took-time-off). Several processes place the state
    they each made (`placed`): a program over all of them takes global inputs only."""
    if jax.process_count() > 1:
        return placed(init_train_state(env, program, key), mesh, stacked=False)
    make = functools.partial(init_train_state, env, program)
    shardings = state_shardings(jax.eval_shape(make, key), mesh, stacked=False)
    return jax.jit(make, out_shardings=shardings)(key)


def compile_ahead(step: Callable, env: Env, program: ProgramConfig, num: int,
                  mesh: Mesh | None = None) -> threading.Thread:
    """Starts compiling `step` (`group_step`'s) for E = `num` fresh or restored states of
    `program` in a background thread, and returns the thread: join it before the first
    step, which then finds the program traced and compiled (JAX's in-memory caches)
    while this thread's compilation overlapped the run's set-up. Should the shapes not
    match after all, the first step compiles as it would have anyway."""

    def compile_() -> None:
        try:
            one = jax.eval_shape(functools.partial(init_train_state, env, program),
                                 jax.random.key(0))
            abstract = jax.tree.map(
                lambda x: jax.ShapeDtypeStruct((num, *x.shape), x.dtype), one)
            if mesh is not None:
                abstract = jax.tree.map(
                    lambda x, sharding: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
                    abstract, state_shardings(abstract, mesh))
            step.lower(abstract, jax.ShapeDtypeStruct((num,), jnp.bool_)).compile()
        except Exception:  # noqa: BLE001, S110 - a head start only: the first step reports
            pass

    thread = threading.Thread(target=compile_, name="azjax-compile-ahead", daemon=True)
    thread.start()
    return thread


def group_step(env: Env, program: ProgramConfig, num: int, mesh: Mesh | None = None
               ) -> Callable:
    """One jitted, vmapped iteration of E experiments of one program.

    Cached by program and mesh, so another group of the same program reuses the
    compiled step.

    Args:
      env: the game.
      program: the program every experiment runs (their traced settings may differ).
      num: E, the number of experiments.
      mesh: with N > 1 devices, each device runs its share of every experiment
        (`shard_map`; the state laid out by `placed`); None for one device.

    Returns:
      `step(state, active) -> (state, metrics)`: `state` is a stacked `TrainState` with
      leading axis (E,) (donated), `active` (E,) bool (experiments not active keep their
      state), metrics by name of (E,) values.
    """
    devices = 1 if mesh is None else mesh.size

    def make() -> Callable:
        iteration = jax.vmap(make_iteration_fn(env, program, devices))
        if num == 1:
            def step(state, active):
                del active  # a run of one steps only while it is active
                return iteration(state)
        else:
            def step(state, active):
                new, metrics = iteration(state)
                return tree_select(active, new, state), metrics
        if devices > 1:
            inner = step

            def step(state, active):
                specs = state_specs(state)
                # check_vma off: mctx's while loops carry values it cannot type; what
                # leaves replicated is equal on every device (pmean-ed or unsplit)
                return jax.shard_map(inner, mesh=mesh, in_specs=(specs, PartitionSpec()),
                                     out_specs=(specs, PartitionSpec()),
                                     check_vma=False)(state, active)
        return jax.jit(step, donate_argnums=0)

    devices_key = None if mesh is None else tuple(d.id for d in mesh.devices.flat)
    return cached(("step", Identity(env), program.compile_key(), num, devices_key), make)
