"""Go's board apart from the rules engine of `envs.go`: the colours and constants, move
notation ("D4", `parse_move` / `format_move`), a board's neighbours, the Tromp-Taylor
area count, and the bytes of one state. `envs.go` exposes all of its public names."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs.limits import check_fits

EMPTY = -1
BLACK = 0
WHITE = 1
NO_POINT = -1
COLUMNS = "ABCDEFGHJKLMNOPQRST"
MAX_SIZE = len(COLUMNS)
KO_RULES = ("positional", "simple")
"""The values of `Go(ko=...)`: positional superko (the default) or simple ko."""


def parse_move(text: str, size: int) -> int:
    """Parses "D4" (column letter without I, line number from the bottom) or "pass".

    Args:
      text: what the human or GTP typed; case does not matter.
      size: the board's side N.

    Returns:
      The action id: `row * N + col` (row 0 the top line), or N * N for pass.

    Raises:
      ValueError: for text that is not a point of the board or "pass".
    """
    t = text.strip().upper()
    if t == "PASS":
        return size * size
    letters = COLUMNS[:size]
    column, line = t[:1], t[1:]
    on_board = line.isascii() and line.isdigit() and 1 <= int(line) <= size
    if not column or column not in letters or not on_board:
        raise ValueError(
            f"not a move on a {size}x{size} board: {text!r} (expected a point A1-"
            f"{letters[-1]}{size}, column letters without I, or 'pass')"
        )
    return (size - int(line)) * size + letters.index(column)


def format_move(action: int, size: int) -> str:
    """Formats an action as "D4" or "pass" (inverse of `parse_move`).

    Args:
      action: the action id, in [0, N * N].
      size: the board's side N.

    Returns:
      The point, e.g. "D4", or "pass".

    Raises:
      ValueError: `action` is outside [0, N * N].
    """
    action = int(action)
    if action == size * size:
        return "pass"
    if not 0 <= action < size * size:
        raise ValueError(f"not an action on a {size}x{size} board: {action}")
    row, col = divmod(action, size)
    return f"{COLUMNS[col]}{size - row}"


def neighbour_table(n: int) -> np.ndarray:
    """int32 [N*N, 4] neighbour cells (up, down, left, right); N*N means off the board.

    Args:
      n: the board's side N.

    Returns:
      (N * N, 4) int32.
    """
    table = np.full((n * n, 4), n * n, dtype=np.int32)
    for r in range(n):
        for c in range(n):
            for k, (dr, dc) in enumerate(((-1, 0), (1, 0), (0, -1), (0, 1))):
                rr, cc = r + dr, c + dc
                if 0 <= rr < n and 0 <= cc < n:
                    table[r * n + c, k] = rr * n + cc
    return table


def shifted(x: chex.Array, fill) -> list[chex.Array]:
    """The 4 neighbour views of an [N, N] array (value of the up/down/left/right cell).

    Args:
      x: (N, N) any dtype.
      fill: what a view reads off the board.

    Returns:
      Four (N, N) arrays of the dtype of `x`: up, down, left, right.
    """
    p = jnp.pad(x, 1, constant_values=fill)
    return [p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]]


def any_neighbour(x: chex.Array) -> chex.Array:
    """bool [N, N]: the points with a True neighbour in `x` [N, N].

    Args:
      x: (N, N) bool.

    Returns:
      (N, N) bool.
    """
    up, down, left, right = shifted(x, False)
    return up | down | left | right


def _reach(board: chex.Array, n: int, needed: chex.Array) -> chex.Array:
    """bool [2, N, N]: the points holding, or reaching through empty points, a black
    (row 0) and a white (row 1) stone; only computed where `needed` (a while loop under
    vmap runs only while some game needs it)."""
    grid = board.reshape(n, n)
    empty = grid == EMPTY

    def grow(reach):
        return reach | (empty[None] & jax.vmap(any_neighbour)(reach))

    def cond(carry):
        _, changed = carry
        return changed

    def body(carry):
        reach, _ = carry
        new = grow(reach)
        return new, jnp.any(new != reach)

    start = jnp.stack([grid == BLACK, grid == WHITE])
    reach, _ = jax.lax.while_loop(cond, body, (start, needed))
    return reach


def own_true_eyes(board: chex.Array, n: int, player: chex.Array) -> chex.Array:
    """bool [N*N]: the empty points of `board` [N*N] that are true eyes of `player`: every
    neighbour on the board is the player's stone, and no diagonal point holds an opponent's
    stone (at most one where all four diagonals are on the board).

    Args:
      board: (N * N,) int8: -1 empty, 0 black, 1 white.
      n: the board's side N.
      player: () int32, the player, 0 or 1.

    Returns:
      (N * N,) bool.
    """
    grid = board.reshape(n, n)
    own = grid == player.astype(jnp.int8)
    opp = grid == (1 - player).astype(jnp.int8)
    walled = (grid == EMPTY) & jnp.all(jnp.stack(shifted(own, True)), axis=0)
    p_opp = jnp.pad(opp, 1, constant_values=False).astype(jnp.int32)
    p_on = jnp.pad(jnp.ones((n, n), jnp.int32), 1)
    corners = ((0, 0), (0, 2), (2, 0), (2, 2))
    enemies = sum(p_opp[r:r + n, c:c + n] for r, c in corners)
    on_board = sum(p_on[r:r + n, c:c + n] for r, c in corners)
    return (walled & (enemies <= jnp.where(on_board == 4, 1, 0))).reshape(n * n)


def tromp_taylor_area(board: chex.Array, n: int, needed: chex.Array) -> chex.Array:
    """float32 [2] Tromp-Taylor area (black, white) of `board` [N*N]; only computed where
    `needed` (a while loop under vmap runs only while some game needs it).

    Args:
      board: (N * N,) int8: -1 empty, 0 black, 1 white.
      n: the board's side N.
      needed: () bool, whether this game needs the count.

    Returns:
      (2,) float32, stones plus the empty points reaching only that colour; meaningful
      only where `needed`.
    """
    reach = _reach(board, n, needed)
    black = reach[0] & ~reach[1]
    white = reach[1] & ~reach[0]
    return jnp.stack([black.sum(), white.sum()]).astype(jnp.float32)


def tromp_taylor_owner(board: chex.Array, n: int, needed: chex.Array) -> chex.Array:
    """int8 [N*N] who owns each point of `board` [N*N] by Tromp-Taylor area: +1 Black,
    -1 White, 0 neither (an empty point reaching both colours, or none).

    Args:
      board: (N * N,) int8: -1 empty, 0 black, 1 white.
      n: the board's side N.
      needed: () bool, whether this game needs the count.

    Returns:
      (N * N,) int8; meaningful only where `needed`.
    """
    reach = _reach(board, n, needed).reshape(2, n * n)
    return (reach[0] & ~reach[1]).astype(jnp.int8) - (reach[1] & ~reach[0]).astype(jnp.int8)


def hash_rows(max_moves: int, ko: str) -> int:
    """Rows of `GoState.hashes`: every position of the game under superko, else one.

    Args:
      max_moves: the game's move limit.
      ko: 'positional' or 'simple'.

    Returns:
      The number of rows.
    """
    return max_moves + 1 if ko == "positional" else 1


def state_bytes(size: int, history: int, max_moves: int, ko: str = "positional") -> int:
    """Bytes of one `GoState`: int8 past boards [T, N*N], bool observation [N, N, 2T+1],
    a few per-point arrays (board, chain, legal mask: 4 bytes a point), the position
    hashes (uint32 [rows, 2]) and a few scalars.

    Args:
      size: the board's side N.
      history: T, the past boards the observation holds.
      max_moves: the game's move limit.
      ko: 'positional' or 'simple'.

    Returns:
      The number of bytes.
    """
    return (size * size * (history + (2 * history + 1) + 4)
            + 8 * hash_rows(max_moves, ko) + 64)


def check_state_fits(size: int, history: int, max_moves: int, ko: str) -> None:
    """Raises ValueError (one line, `envs.limits.check_fits`) when one state of
    `Go(size, history=history, max_moves=max_moves, ko=ko)` would not fit in memory,
    naming the option that makes it big.

    Args:
      size: the board's side N.
      history: the past boards the observation holds.
      max_moves: the game's move limit.
      ko: 'positional' or 'simple'.

    Raises:
      ValueError: the state does not fit in `envs.limits.available_bytes()`.
    """
    needed = state_bytes(size, history, max_moves, ko)
    hash_bytes = 8 * hash_rows(max_moves, ko)
    if 2 * hash_bytes <= needed:
        what, detail = f"Go history={history}", "one state's past boards and observation"
    else:
        what = f"Go max_moves={max_moves} with ko='positional'"
        detail = "one state's superko position hashes; ko='simple' keeps none"
    check_fits(what, needed, detail)
