"""An open-line evaluation for k-in-a-row games (tic-tac-toe, Connect Four, Gomoku).

Alpha-beta search (`azjax.evaluation.alphabeta`) needs a value for live positions at its depth
limit; k-in-a-row games offer this one through `Env.heuristic` (and every game with a
`line_length` through the `lines` evaluation of the `alphabeta:` player spec).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import chex
import jax.numpy as jnp

# The raw window score x is squashed to EVAL_LIMIT * tanh(x / LINE_SCALE), inside
# (-0.5, 0.5), so that decided results always dominate it.
EVAL_LIMIT = 0.49
LINE_SCALE = 2.0
LINE_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def _windows(height: int, width: int, k: int) -> list[list[tuple[slice, slice]]]:
    """Per direction, the k slices whose i-th picks cell i of every length-k window."""
    windows = []
    for dr, dc in LINE_DIRECTIONS:
        rows = height - dr * (k - 1)
        cols = width - abs(dc) * (k - 1)
        if rows <= 0 or cols <= 0:
            continue
        col0 = k - 1 if dc < 0 else 0
        windows.append(
            [
                (slice(i * dr, i * dr + rows), slice(col0 + i * dc, col0 + i * dc + cols))
                for i in range(k)
            ]
        )
    return windows


@functools.cache
def line_count_eval(height: int, width: int, k: int) -> Callable[[chex.Array], chex.Array]:
    """The open-line heuristic of a k-in-a-row game on a `height` x `width` board: a
    function of ONE observation ([H, W, C], channel 0 the mover's stones, channel 1 the
    opponent's) to a float32 value for the mover.

    Every length-k window (horizontal, vertical, both diagonals) holding n >= 1 of the
    mover's stones and none of the opponent's adds 4**(n - k + 1); one holding only the
    opponent's stones subtracts the same. The sum x is squashed to
    `0.49 * tanh(x / 2)`, inside (-0.5, 0.5). Cached, so it is one function per shape.

    Args:
      height: the board's rows H.
      width: the board's columns W.
      k: the length of a winning line.

    Returns:
      `evaluate(observation) -> () float32`, for one (H, W, C) observation
      (C >= 2); `jax.vmap` it for a batch.
    """
    windows = _windows(height, width, k)
    weights = jnp.asarray([0.0] + [4.0 ** (n - k + 1) for n in range(1, k + 1)], jnp.float32)

    def evaluate(observation: chex.Array) -> chex.Array:
        own = observation[..., 0].astype(jnp.int32)
        opp = observation[..., 1].astype(jnp.int32)
        score = jnp.zeros((), jnp.float32)
        for cells in windows:
            n_own = sum(own[cell] for cell in cells)
            n_opp = sum(opp[cell] for cell in cells)
            mine = jnp.where(n_opp == 0, weights[n_own], 0.0)
            theirs = jnp.where(n_own == 0, weights[n_opp], 0.0)
            score = score + jnp.sum(mine - theirs)
        return EVAL_LIMIT * jnp.tanh(score / LINE_SCALE)

    return evaluate
