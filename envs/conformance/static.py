"""The parts of `envs.check_env` that need no game played: the checks of a game's
declarations, tracing, output types, symmetry group and move notation, and the helpers
the random games share (their keys and uniforms, leaves of states compared on the host).
(`envs.conformance` runs the whole check; `envs.conformance.rules` holds the rules and
the error; `envs.conformance.games` plays the random games, `envs.conformance.verdicts`
judges them.)"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envs.conformance.rules import EnvCheckError
from envs.core import Env
from envs.origin import user_frame as _user_frame
from envs.state import State

GARBAGE_MOVES = ("", "zz-not-a-move")
_TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
)


def init_keys(seed: int, num_games: int) -> jax.Array:
    """The `env.init` key of each game of `check_env(env, num_games, seed)` [num_games].

    Made from numpy's generator (as are the random moves): JAX's PRNG is slow to compile.

    Args:
      seed: the check's seed.
      num_games: n, the number of games.

    Returns:
      (n,) typed PRNG keys.
    """
    shape = jax.eval_shape(lambda: jax.random.key_data(jax.random.key(0))).shape
    data = np.random.default_rng([seed, 0]).integers(0, 2**32, (num_games, *shape),
                                                     dtype=np.uint32)
    return jax.random.wrap_key_data(jnp.asarray(data))


def uniforms(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """float32 uniforms in [0, 1) from which `check_env` draws its random moves.

    Args:
      seed: the check's seed.
      shape: the shape of the result.

    Returns:
      float32 of shape `shape`.
    """
    return np.random.default_rng([seed, 1]).random(shape, dtype=np.float32)


def trace(what: str, fn: Callable[[], Any], property: str = "traceable") -> Any:
    """Runs `fn` (which traces `what`); a tracing failure raises EnvCheckError: a JAX
    tracer error as "traceable", anything else as `property`.

    Args:
      what: what `fn` traces, for the message (e.g. "env.step").
      fn: a function of no arguments that traces it (e.g. a `jax.eval_shape`).
      property: the property a failure other than a tracer error breaks.

    Returns:
      What `fn` returns.

    Raises:
      EnvCheckError: `fn` raised.
    """
    try:
        return fn()
    except EnvCheckError:
        raise
    except _TRACER_ERRORS as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise EnvCheckError(
            "traceable",
            f"{what} cannot be traced under jax.jit / jax.vmap{_user_frame(err)}; JAX says: "
            f"{first!r}. Python control flow on state values (if, while, and, or, bool(), "
            "int(), float(), np.asarray on a traced array) runs once, at trace time, on "
            "abstract values: use jnp.where, lax.select, lax.cond or lax.while_loop instead",
        ) from err
    except Exception as err:  # reported, with its origin, as a failed check
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        if isinstance(err, (TypeError, ValueError)) and "shape" in first:
            property = "types"  # arrays of the wrong shape met inside the game's code
        raise EnvCheckError(
            property,
            f"{what} raised {type(err).__name__} while traced under jax.jit / jax.vmap"
            f"{_user_frame(err)}: {first}",
        ) from err


def _is_positive_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0


def check_declarations(env: Env, max_plies: int | None) -> int:
    """The game's declared sizes make sense; returns the ply limit to check (the
    `max_plies` argument where given, else `env.max_plies`).

    Args:
      env: the game.
      max_plies: the ply limit `check_env` was given, or None.

    Returns:
      The ply limit.

    Raises:
      EnvCheckError: ("types") a declaration is missing or wrong.
    """
    if not isinstance(env, Env):
        raise EnvCheckError("types", f"{env!r} is a {type(env).__name__}, not an envs.Env")
    if getattr(env, "num_players", None) != 2:
        raise EnvCheckError("types", f"num_players is {env.num_players!r}; games have 2 players")
    if not _is_positive_int(getattr(env, "num_actions", None)):
        raise EnvCheckError("types", f"num_actions is {getattr(env, 'num_actions', None)!r}, "
                                     "not a positive int")
    shape = getattr(env, "observation_shape", None)
    if (not isinstance(shape, tuple) or not shape
            or not all(_is_positive_int(d) for d in shape)):
        raise EnvCheckError("types", f"observation_shape is {shape!r}, not a non-empty tuple "
                                     "of positive ints")
    limit = env.max_plies if max_plies is None else max_plies
    if not _is_positive_int(limit):
        raise EnvCheckError(
            "types",
            f"max_plies is {limit!r}: a game states the most plies it can last as a positive "
            "int (class attribute max_plies), or check_env is given max_plies= (--max-plies)",
        )
    return int(limit)


def _spec_text(x: Any) -> str:
    """'int8[3, 3]' for an array or shape-dtype struct."""
    key = jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
    return f"{x.dtype if key else np.dtype(x.dtype).name}{list(x.shape)}"


def _check_fields(env: Env, state: Any, what: str) -> None:
    """The State fields of `state` (shape-dtype structs) have the protocol's types."""
    if not isinstance(state, State):
        raise EnvCheckError("types", f"{what} returned a {type(state).__name__}, not an "
                                     "envs.State (subclass)")
    want = {
        "observation": (tuple(env.observation_shape), None),
        "legal_action_mask": ((env.num_actions,), np.bool_),
        "rewards": ((2,), np.float32),
        "terminated": ((), np.bool_),
        "current_player": ((), np.int32),
        "step_count": ((), np.int32),
    }
    for field, (shape, dtype) in want.items():
        x = getattr(state, field, None)
        if x is None or not hasattr(x, "shape"):
            raise EnvCheckError("types", f"{what} returned no array in field {field!r}")
        ok_dtype = (np.dtype(x.dtype) == dtype if dtype is not None else
                    np.dtype(x.dtype) == np.bool_
                    or np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating))
        if tuple(x.shape) != shape or not ok_dtype:
            want_text = f"{np.dtype(dtype).name if dtype else 'bool or numeric'}{list(shape)}"
            raise EnvCheckError("types", f"{what} returned {field} as {_spec_text(x)}, "
                                         f"expected {want_text}")
    declared = getattr(env, "observation_dtype", None)
    if declared is not None and np.dtype(state.observation.dtype) != np.dtype(declared):
        raise EnvCheckError("types", f"{what} returned the observation as "
                                     f"{_spec_text(state.observation)}, but the game declares "
                                     f"observation_dtype {np.dtype(declared).name}")


def leaf_names(tree: Any) -> list[str]:
    """A readable name per leaf of a state pytree, e.g. '.board'.

    Args:
      tree: a pytree (a `State`, or its shape-dtype structure).

    Returns:
      One name per leaf, in `jax.tree.leaves` order.
    """
    paths, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [jax.tree_util.keystr(path) or "(root)" for path, _ in paths]


def _check_same_types(before: Any, after: Any, what: str, property: str = "types") -> None:
    if jax.tree.structure(before) != jax.tree.structure(after):
        raise EnvCheckError(property, f"{what} returned a state of another structure: "
                                      f"{jax.tree.structure(after)} instead of "
                                      f"{jax.tree.structure(before)}")
    for name, x, y in zip(leaf_names(before), jax.tree.leaves(before), jax.tree.leaves(after)):
        if x.shape != y.shape or x.dtype != y.dtype:
            raise EnvCheckError(
                property, f"{what} changes leaf {name} from {_spec_text(x)} to {_spec_text(y)}; "
                "a step keeps every leaf's shape and dtype (lax.scan carries states)")


def _defined_at(fn: Any) -> str:
    """' (file:line)' where `fn` is defined, or ''."""
    try:
        return f" ({inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]})"
    except (TypeError, OSError):
        return ""


def check_tracing_and_types(env: Env) -> Any:
    """init and step trace (alone and under vmap) with the protocol's types; returns the
    shape-dtype structure of one state.

    Args:
      env: the game.

    Returns:
      The unbatched `State` of `jax.ShapeDtypeStruct` leaves.

    Raises:
      EnvCheckError: a function does not trace, or returns the wrong types.
    """
    keys = init_keys(0, 2)  # no JAX PRNG work (slow to compile)
    key = keys[0]
    spec = trace("env.init", lambda: jax.eval_shape(env.init, key))
    _check_fields(env, spec, "init")
    action = jax.ShapeDtypeStruct((), jnp.int32)
    if callable(getattr(env, "_step", None)):  # the game's own step first: its errors are its own
        raw = trace("env._step", lambda: jax.eval_shape(env._step, spec, action))
        _check_same_types(spec, raw, f"the game's _step{_defined_at(type(env)._step)}")
    after = trace("env.step", lambda: jax.eval_shape(env.step, spec, action))
    _check_same_types(spec, after, "step")
    _check_fields(env, after, "step")
    batch = trace("jax.vmap(env.init)", lambda: jax.eval_shape(jax.vmap(env.init), keys))
    _check_same_types(jax.tree.map(lambda x: jax.ShapeDtypeStruct((2, *x.shape), x.dtype), spec),
                      batch, "jax.vmap(env.init)")
    actions = jax.ShapeDtypeStruct((2,), jnp.int32)
    stepped = trace("jax.vmap(env.step)", lambda: jax.eval_shape(jax.vmap(env.step), batch, actions))
    _check_same_types(batch, stepped, "jax.vmap(env.step)")
    g = jax.ShapeDtypeStruct((), jnp.int32)
    moved = trace("env.transform_state", lambda: jax.eval_shape(env.transform_state, spec, g),
                  property="symmetries-transform")
    _check_same_types(spec, moved, "transform_state", property="symmetries-transform")
    return spec


def host_leaves(tree: Any) -> list[np.ndarray]:
    """The leaves of a state pytree as numpy arrays (PRNG keys as their key data).

    Args:
      tree: a pytree of arrays (PRNG keys allowed).

    Returns:
      One numpy array per leaf, in `jax.tree.leaves` order.
    """
    def plain(x):
        if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(jax.device_get(x))
    return [plain(x) for x in jax.tree.leaves(tree)]


def differing_leaves(names: list[str], a: list[np.ndarray], b: list[np.ndarray]) -> list[str]:
    """Names of the leaves where two host states differ (NaN equals NaN).

    Args:
      names: the leaves' names (`leaf_names`).
      a: one state's leaves (`host_leaves`).
      b: the other's, in the same order.

    Returns:
      The names, in leaf order.
    """
    out = []
    for name, x, y in zip(names, a, b):
        same = x.shape == y.shape and np.array_equal(
            x, y, equal_nan=bool(np.issubdtype(x.dtype, np.inexact)))
        if not same:
            out.append(name)
    return out


def check_init_deterministic(env: Env, key: jax.Array) -> None:
    """`env.init(key)` twice, not jitted (so each call runs the game's Python anew), gives
    the same state.

    Args:
      env: the game.
      key: one () PRNG key.

    Raises:
      EnvCheckError: ("deterministic") the two states differ.
    """
    names = leaf_names(jax.eval_shape(env.init, key))
    diff = differing_leaves(names, host_leaves(env.init(key)), host_leaves(env.init(key)))
    if diff:
        raise EnvCheckError(
            "deterministic",
            f"two calls env.init(key) with the same key differ in {', '.join(diff)}; draw any "
            "randomness from the key (jax.random), never from Python, numpy or a global "
            "counter",
            [],
            env=env,
        )


def check_symmetry_group(env: Env) -> int:
    """The declared symmetries form a group of matching cell and action permutations;
    returns their number G.

    Args:
      env: the game.

    Returns:
      G, the number of symmetries.

    Raises:
      EnvCheckError: ("symmetries-group") the permutations are malformed or no group.
    """
    try:
        sym = env.symmetries
        cell, act, inv = (np.asarray(jax.device_get(x)) for x in
                          (sym.cell_perm, sym.action_perm, sym.inverse_action_perm))
    except Exception as err:  # reported as a failed check
        raise EnvCheckError("symmetries-group", f"env.symmetries raised "
                                                f"{type(err).__name__}: {err}") from err
    cells = math.prod(env.observation_shape[:-1])
    num = env.num_actions

    def fail(message: str):
        raise EnvCheckError("symmetries-group", message)

    if cell.ndim != 2 or cell.shape[1] != cells or cell.shape[0] < 1:
        fail(f"cell_perm has shape {list(cell.shape)}, expected [G, {cells}] (G >= 1)")
    size = cell.shape[0]
    for name, perms in (("action_perm", act), ("inverse_action_perm", inv)):
        if perms.shape != (size, num):
            fail(f"{name} has shape {list(perms.shape)}, expected [{size}, {num}]")
    for name, perms in (("cell_perm", cell), ("action_perm", act), ("inverse_action_perm", inv)):
        if not np.issubdtype(perms.dtype, np.integer):
            fail(f"{name} has dtype {perms.dtype}, expected an integer dtype")
        width = perms.shape[1]
        for g in range(size):
            if not np.array_equal(np.sort(perms[g]), np.arange(width)):
                fail(f"{name}[{g}] is not a permutation of 0..{width - 1}")
    if not (np.array_equal(cell[0], np.arange(cells)) and np.array_equal(act[0], np.arange(num))):
        fail("entry 0 of cell_perm / action_perm is not the identity")
    for g in range(size):
        if not np.array_equal(inv[g][act[g]], np.arange(num)):
            fail(f"inverse_action_perm[{g}] is not the inverse of action_perm[{g}]")
    index = {}
    for g in range(size):
        pair = (cell[g].tobytes(), act[g].tobytes())
        if pair in index:
            fail(f"symmetries {index[pair]} and {g} are the same (cell, action) permutation")
        index[pair] = g
    identity = (cell[0].tobytes(), act[0].tobytes())
    for g in range(size):
        has_inverse = False
        for h in range(size):
            composed = (cell[g][cell[h]].tobytes(), act[g][act[h]].tobytes())
            if composed not in index:
                fail(f"composing symmetries {g} and {h} gives a permutation that is not among "
                     f"the {size} symmetries: the set is not closed")
            has_inverse |= composed == identity
        if not has_inverse:
            fail(f"symmetry {g} has no inverse among the {size} symmetries")
    return size


def check_notation(env: Env) -> None:
    """format_move / parse_move round-trip every action; garbage raises ValueError.

    Args:
      env: the game.

    Raises:
      EnvCheckError: ("notation") a move does not round-trip, or garbage is accepted.
    """
    for a in range(env.num_actions):
        try:
            text = env.format_move(a)
        except Exception as err:  # reported as a failed check
            raise EnvCheckError("notation", f"format_move({a}) raised {type(err).__name__}: "
                                            f"{err}") from err
        if not isinstance(text, str) or not text.strip():
            raise EnvCheckError("notation", f"format_move({a}) returned {text!r}, not a "
                                            "non-empty str")
        try:
            back = env.parse_move(text)
        except Exception as err:  # reported as a failed check
            raise EnvCheckError("notation", f"parse_move({text!r}) (the text format_move({a}) "
                                            f"gives) raised {type(err).__name__}: {err}") from err
        if isinstance(back, bool) or not isinstance(back, (int, np.integer)) or back != a:
            raise EnvCheckError("notation", f"parse_move(format_move({a})) is {back!r}: "
                                            f"format_move({a}) = {text!r} does not read back")
    for text in GARBAGE_MOVES:
        try:
            got = env.parse_move(text)
        except ValueError:
            continue
        except Exception as err:  # reported as a failed check
            raise EnvCheckError("notation", f"parse_move({text!r}) raised {type(err).__name__} "
                                            f"instead of ValueError: {err}") from err
        raise EnvCheckError("notation", f"parse_move({text!r}) returned {got!r} instead of "
                                        "raising ValueError")
