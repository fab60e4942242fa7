"""Counters a run cannot outgrow: iterations, games and positions in two 32-bit words.

JAX computes in 32 bits (64-bit types need `jax_enable_x64`, which doubles every index
array), so one int32 would stop a run at 2**31 positions: 14 hours of a GPU at 41,000
positions a second. A `Count` keeps the low 31 bits and the number of 2**31 carries in
two uint32 words, up to 2**63 - 1: at a billion positions a second, 292 years. Adding
costs two integer ops and a shift per iteration, inside the compiled program; the host
reads the whole number with `int(count)` (or `value(count, index)` for a stacked one).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

LOW_BITS = 31
LOW_MASK = (1 << LOW_BITS) - 1
MAX_VALUE = (1 << (32 + LOW_BITS)) - 1


@struct.dataclass
class Count:
    """A non-negative count of up to 2**63 - 1, as `high * 2**31 + low` (uint32 words;
    `low < 2**31`). Leading axes, if any, are experiments of a stacked state."""

    low: chex.Array
    high: chex.Array

    def __int__(self) -> int:
        return value(self)

    def __index__(self) -> int:
        return value(self)


def zero() -> Count:
    """A count of 0 (scalar words)."""
    return Count(low=jnp.uint32(0), high=jnp.uint32(0))


def add(count: Count, amount: chex.Array) -> Count:
    """`count + amount`, for an integer `amount` (array or int) in [0, 2**31 - 1]."""
    total = count.low + jnp.asarray(amount).astype(jnp.uint32)
    return Count(low=total & jnp.uint32(LOW_MASK),
                 high=count.high + (total >> jnp.uint32(LOW_BITS)))


def value(count: Count, index: int | tuple[int, ...] = ()) -> int:
    """The count as a Python int (of experiment `index` of a stacked count)."""
    values = array(count)[index]
    if np.ndim(values):
        raise ValueError(f"a count of shape {np.shape(values)}: pass the index of one")
    return int(values)


def array(count: Count) -> np.ndarray:
    """The count as int64 on the host, one per experiment of a stacked count."""
    high = np.asarray(count.high).astype(np.int64)
    return (high << LOW_BITS) | np.asarray(count.low).astype(np.int64)


def of(number: int) -> Count:
    """The `Count` holding `number` (0 to 2**63 - 1), on the default device."""
    if not 0 <= number <= MAX_VALUE:
        raise ValueError(f"a count must be in [0, 2**63 - 1], got {number}")
    return Count(low=jnp.uint32(number & LOW_MASK), high=jnp.uint32(number >> LOW_BITS))


def is_count(x: object) -> bool:
    """Whether `x` is a `Count` (for `jax.tree.map(..., is_leaf=is_count)`)."""
    return isinstance(x, Count)


def fold_in(key: chex.PRNGKey, number: int) -> chex.PRNGKey:
    """`jax.random.fold_in` of a count that may exceed 32 bits: its low 32 bits, and its
    high bits where there are any (a count below 2**32 gets the key of a plain `fold_in`, so such keys do not depend on
    whether the count is a `Count`)."""
    key = jax.random.fold_in(key, number & 0xFFFFFFFF)
    return jax.random.fold_in(key, number >> 32) if number >> 32 else key
