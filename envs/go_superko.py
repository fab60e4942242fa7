"""Positional superko for `envs.go.Go`: position hashes, and the moves that repeat one.

A board's hash is two 32-bit words, each the sum mod 2**32 of the keys of its stones
(`zobrist_keys`: random from a fixed seed, except that the low `INDEX_BITS` bits of word
0 are the point's index). Hashes are always taken with the board as played: a state
turned by a symmetry (`Go.transform_state`) keeps its hashes and records the turn in its
`frame`, whose keys `frame_tables` gives.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs.go_board import BLACK, WHITE

ZOBRIST_SEED = 0x60_5C0
INDEX_BITS = 9
"""Word 0 of a point's key ends in the point's index (19 * 19 < 2**9 points)."""
CAPTURE_CHUNK = 8
"""Capturing moves whose boards `repeated_positions` compares with the game's at a time."""


def zobrist_keys(n: int) -> np.ndarray:
    """uint32 [2 colours, N*N, 2 words] keys: a board's hash is the sum mod 2**32 of the
    keys of its stones, word by word. Random (a fixed seed), except that the low 9 bits
    of word 0 are the point's index, so that two boards that differ by one stone differ
    in word 0 by a number ending in that stone's index (55 random bits are left: two
    boards hash alike with probability 2**-55).

    Args:
      n: the board's side N.

    Returns:
      (2, N * N, 2) uint32, by colour, point and word.
    """
    rng = np.random.default_rng([ZOBRIST_SEED, n])
    keys = rng.integers(0, 2**32, (2, n * n, 2), dtype=np.uint64)
    index_mask = (1 << INDEX_BITS) - 1
    keys[..., 0] = (keys[..., 0] & ~np.uint64(index_mask)) | np.arange(n * n, dtype=np.uint64)
    return keys.astype(np.uint32)


def stone_keys(board: chex.Array, keys: chex.Array) -> chex.Array:
    """uint32 [N*N, 2] the key of each point's stone (`keys` [2, N*N, 2]), 0 where
    empty; the board's hash is their sum.

    Args:
      board: (N * N,) int8: -1 empty, 0 black, 1 white.
      keys: (2, N * N, 2) uint32, from `zobrist_keys`.

    Returns:
      (N * N, 2) uint32.
    """
    return jnp.where((board == BLACK)[:, None], keys[BLACK],
                     jnp.where((board == WHITE)[:, None], keys[WHITE], jnp.uint32(0)))


def frame_tables(cell_perm: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(uint32 [G, 2, N*N, 2] keys by frame, int32 [G, G] composition).

    A state in frame f has `board[p] == played_board[cell_perm[f, p]]`, so its point p has
    the key of point `cell_perm[f, p]` of the game as played. `transform_state(., g)`
    gathers with `cell_perm[g]`, which takes frame f to the h with `cell_perm[h] ==
    cell_perm[f][cell_perm[g]]` (`compose[f, g]`).

    Args:
      cell_perm: (G, N * N) integer, the game's symmetries' cell permutations.
      keys: (2, N * N, 2) uint32, from `zobrist_keys`.

    Returns:
      `(frame_keys, compose)`: (G, 2, N * N, 2) uint32 and (G, G) int32.
    """
    frame_keys = np.stack([keys[:, perm] for perm in cell_perm])
    index = {tuple(perm): h for h, perm in enumerate(cell_perm.tolist())}
    compose = np.array([[index[tuple(f[g].tolist())] for g in cell_perm] for f in cell_perm],
                       dtype=np.int32)
    return frame_keys, compose


def repeated_positions(legal: chex.Array, captures: chex.Array, liberty: chex.Array,
                       mover_key: chex.Array, played_key: chex.Array, stone_key: chex.Array,
                       position: chex.Array, hashes: chex.Array, perm: chex.Array
                       ) -> chex.Array:
    """bool [N*N]: the points whose move makes a board the game has had.

    Args:
      legal: bool [N*N] the points legal under simple ko (only those are checked).
      captures: bool [N*N] the empty points next to an opponent chain in atari.
      liberty: int [N*N] for each stone of an opponent chain in atari, its one liberty;
        N*N elsewhere.
      mover_key: uint32 [N*N, 2] the mover's key of each point, in the state's frame.
      played_key: uint32 [N*N, 2] the mover's key of each point as played (frame 0).
      stone_key: uint32 [N*N, 2] the key of each point's stone (0 if empty).
      position: uint32 [2] the board's hash.
      hashes: uint32 [R, 2] the hashes of the game's boards (rows past the last one are
        zeros, the empty board's hash, which no move can make).
      perm: int [N*N] the frame's cell permutation (point p is point perm[p] as played).

    Returns:
      (N * N,) bool, True only where `legal`.
    """
    nn = legal.shape[0]
    chex.assert_shape([captures, liberty], (nn,))
    chex.assert_shape([mover_key, played_key, stone_key], (nn, 2))
    # A move that captures nothing makes the board plus its stone: the rows that exceed
    # the board's hash by one key, whose point word 0's low bits name (as played).
    diff = hashes - position[None, :]  # [R, 2]
    q = jnp.minimum((diff[:, 0] & jnp.uint32((1 << INDEX_BITS) - 1)).astype(jnp.int32), nn)
    expected = jnp.concatenate([played_key, jnp.zeros((1, 2), jnp.uint32)])[q]
    hit = (q < nn) & jnp.all(diff == expected, axis=1)
    repeats = jnp.zeros(nn + 1, jnp.bool_).at[jnp.where(hit, q, nn)].set(True)[perm]
    repeats = repeats & ~captures
    # A capturing move makes the board plus its stone minus the stones it captures (those
    # of opponent chains whose one liberty is the point: each stone once).
    taken = jnp.zeros((nn + 1, 2), jnp.uint32).at[liberty.astype(jnp.int32)].add(stone_key)
    after = position[None, :] + mover_key - taken[:nn]  # [N*N, 2]
    # Compared with every row, a few capturing moves at a time: under vmap, only as many
    # rounds as the state with the most of them needs.
    todo = legal & captures
    rank = jnp.cumsum(todo) - 1
    chunk = jnp.arange(CAPTURE_CHUNK)[:, None]

    def more(carry):
        start, _ = carry
        return start < jnp.sum(todo)

    def compare(carry):
        start, repeats = carry
        pick = todo[None, :] & (rank[None, :] == start + chunk)  # [C, N*N]
        boards = jnp.sum(jnp.where(pick[..., None], after[None], jnp.uint32(0)), axis=1,
                         dtype=jnp.uint32)  # [C, 2]
        seen = jnp.any(jnp.all(boards[:, None, :] == hashes[None, :, :], axis=2), axis=1)
        return start + CAPTURE_CHUNK, repeats | jnp.any(pick & seen[:, None], axis=0)

    _, repeats = jax.lax.while_loop(more, compare, (jnp.int32(0), repeats))
    return repeats
