"""Freestyle Gomoku (k or more in a row wins) as a pure JAX state machine.

`Gomoku(size=15, k=5)`: a size x size board, player 0 (Black, X) moves first. Action
`row*size+col` with row 0 the TOP row of the observation. `k` or more stones in a row
(horizontal, vertical or diagonal) win; a full board without one is a draw.

The observation is [size, size, 3] bool from the mover's point of view: the mover's
stones, the opponent's stones, and a plane that is all True when player 0 is to move.

Human notation: column letters `a`, `b`, ... from the left and row numbers 1..size from
the BOTTOM, so on 15x15 `h8` is the centre (action 7*15+7). Columns past `z` continue
`aa`, `ab`, ...
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env
from envs.limits import INT32_MAX, check_fits, check_option
from envs.lines import line_count_eval
from envs.picture import Picture, status, stone_board
from envs.state import State
from envs.symmetries import Symmetries, dihedral_symmetries

EMPTY = -1
# The four line directions (d_row, d_col); each is walked both ways from the new stone.
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))
MAX_SIZE = math.isqrt(INT32_MAX)
"""Actions (and the ray table's cells) are int32: size * size must fit."""


@struct.dataclass
class GomokuState(State):
    """Gomoku state; `board` int8 [size*size]: -1 empty, else the id of the stone's player."""

    board: chex.Array = None


def _ray_table(size: int, k: int) -> np.ndarray:
    """int32 [size*size, 8, k-1]: the cells 1..k-1 steps away from each cell along each
    of the 8 half-directions (4 directions, then their opposites); `size*size` (off the
    board) where the ray leaves the board."""
    n = size * size
    steps = np.arange(1, k)
    table = np.full((n, 8, k - 1), n, np.int32)
    rows, cols = np.divmod(np.arange(n), size)
    for d, (dr, dc) in enumerate(DIRECTIONS):
        for sign, slot in ((1, d), (-1, d + 4)):
            r = rows[:, None] + sign * dr * steps[None, :]
            c = cols[:, None] + sign * dc * steps[None, :]
            inside = (r >= 0) & (r < size) & (c >= 0) & (c < size)
            table[:, slot, :] = np.where(inside, r * size + c, n)
    return table


def table_bytes(size: int, k: int) -> int:
    """Bytes of the tables a `Gomoku(size, k)` builds: the ray table (`_ray_table`, int32,
    with its int64 row and column temporaries) and the 8 symmetries' three int32
    permutations, kept on the host and on the device.

    Args:
      size: the board's side.
      k: the winning line's length.

    Returns:
      The number of bytes.
    """
    cells = size * size
    rays = cells * 8 * (k - 1) * 4 + 2 * cells * (k - 1) * 8
    symmetries = 2 * 3 * 8 * cells * 4
    return rays + symmetries


def _column_label(col: int) -> str:
    """Column letters: 0 -> "a", 25 -> "z", 26 -> "aa", ...

    Args:
      col: the column, 0 on the left.

    Returns:
      The letters.
    """
    label = ""
    col += 1
    while col > 0:
        col, rem = divmod(col - 1, 26)
        label = chr(ord("a") + rem) + label
    return label


def format_move(action: int, size: int) -> str:
    """An action `row*size+col` in human notation, e.g. 112 -> "h8" on 15x15.

    Args:
      action: the action id, in [0, size * size).
      size: the board's side.

    Returns:
      Column letters and the row number counted from the bottom.

    Raises:
      ValueError: `action` is off the board.
    """
    action = int(action)
    if not 0 <= action < size * size:
        raise ValueError(f"actions on a {size}x{size} board are 0-{size * size - 1}, got {action}")
    row, col = divmod(action, size)
    return f"{_column_label(col)}{size - row}"


def parse_move(text: str, size: int) -> int:
    """A human move like "h8" (column letters, row number from the bottom) as an action.

    Args:
      text: what the human typed.
      size: the board's side.

    Returns:
      The action id `row * size + col`, row 0 the top row.

    Raises:
      ValueError: `text` is not a move, or names a point off the board.
    """
    stripped = text.strip().lower()
    letters = stripped.rstrip("0123456789")
    digits = stripped[len(letters) :]
    if not letters or not digits or not letters.isalpha() or not letters.isascii():
        raise ValueError(
            f"expected a move like {format_move(size * size // 2, size)!r} "
            f"(column {_column_label(0)}-{_column_label(size - 1)}, "
            f"row 1-{size}), got {text!r}"
        )
    col = 0
    for ch in letters:
        col = col * 26 + (ord(ch) - ord("a") + 1)
    col -= 1
    number = int(digits)
    if not (0 <= col < size and 1 <= number <= size):
        raise ValueError(
            f"move {text!r} is off the {size}x{size} board "
            f"(columns {_column_label(0)}-{_column_label(size - 1)}, rows 1-{size})"
        )
    return (size - number) * size + col


class Gomoku(Env):
    """Freestyle Gomoku on a size x size board: k or more in a row wins.

    `size` is at most 46340 (actions are int32) and as large as the memory allows for
    the ray and symmetry tables (`table_bytes`); `2 <= k <= size`.
    """

    name = "gomoku"
    player_marks = ("X", "O")
    move_notation = "a point like d4 (column letter, row number from the bottom; no pass)"

    def __init__(self, size: int = 15, k: int = 5):
        self.size = check_option("gomoku size", size, int, 3, MAX_SIZE)
        self.k = check_option("gomoku k", k, int, 2, self.size)
        check_fits(f"gomoku size={self.size}", table_bytes(self.size, self.k),
                   "its line and symmetry tables")
        self.num_actions = self.size * self.size
        self.observation_shape = (self.size, self.size, 3)
        self.max_plies = self.num_actions
        self.line_length = self.k
        self._rays = _ray_table(self.size, self.k)
        self._symmetries = dihedral_symmetries(self.size, self.size)

    def _observation(self, board: chex.Array, player: chex.Array) -> chex.Array:
        own = board == player
        opp = board == 1 - player
        side = jnp.broadcast_to(player == 0, board.shape)
        return jnp.stack([own, opp, side], axis=-1).reshape(self.observation_shape)

    def _init(self, key: chex.PRNGKey) -> GomokuState:
        del key
        board = jnp.full(self.num_actions, EMPTY, jnp.int8)
        player = jnp.int32(0)
        return GomokuState(
            current_player=player,
            observation=self._observation(board, player),
            legal_action_mask=jnp.ones(self.num_actions, jnp.bool_),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=board,
        )

    def _step(self, state: GomokuState, action: chex.Array) -> GomokuState:
        mover = state.current_player
        stone = mover.astype(jnp.int8)
        board = state.board.at[action].set(stone)
        # Stones along each half-ray; cells off the board read as EMPTY.
        along = jnp.take(board, jnp.asarray(self._rays)[action], mode="fill", fill_value=EMPTY)
        run = jnp.cumprod(along == stone, axis=-1).sum(axis=-1)  # [8] unbroken run lengths
        won = jnp.any(run[:4] + run[4:] + 1 >= self.k)
        terminated = won | (state.step_count + 1 == self.num_actions)
        # +1 for the mover and -1 for the other on a win, without a scatter (slow under vmap).
        sign = jnp.where(mover == 0, 1.0, -1.0) * jnp.array([1.0, -1.0], jnp.float32)
        rewards = jnp.where(won, sign, 0.0).astype(jnp.float32)
        next_player = 1 - mover
        return state.replace(
            current_player=next_player,
            observation=self._observation(board, next_player),
            legal_action_mask=(board == EMPTY) & ~terminated,
            rewards=rewards,
            terminated=terminated,
            step_count=state.step_count + 1,
            board=board,
        )

    @property
    def symmetries(self) -> Symmetries:
        """The 8 rotations and reflections of the square board."""
        return self._symmetries

    def transform_state(self, state: GomokuState, g: chex.Array) -> GomokuState:
        """Applies symmetry `g` to the board, the observation and the legal moves.

        Args:
          state: an unbatched `GomokuState`.
          g: () int32, the symmetry, in [0, 8).

        Returns:
          The transformed `GomokuState`.
        """
        sym = self.symmetries
        return state.replace(
            board=state.board[sym.cell_perm[g]],
            observation=sym.observation(state.observation, g),
            legal_action_mask=sym.policy(state.legal_action_mask, g),
        )

    def parse_move(self, text: str) -> int:
        """A human move like "h8" as an action (ValueError on bad input).

        Args:
          text: what the human typed.

        Returns:
          The action id, in [0, size * size).
        """
        return parse_move(text, self.size)

    def format_move(self, action: int) -> str:
        """An action in human notation like "h8".

        Args:
          action: the action id, in [0, size * size).

        Returns:
          The move, e.g. "h8".
        """
        return format_move(action, self.size)

    def render(self, state: GomokuState) -> str:
        """The board as text: X, O and `.`, rows numbered from the bottom, columns lettered.

        Args:
          state: an unbatched `GomokuState`.

        Returns:
          size + 1 lines of text.
        """
        board = np.asarray(jax.device_get(state.board)).reshape(self.size, self.size)
        marks = {EMPTY: ".", 0: "X", 1: "O"}
        labels = [_column_label(c) for c in range(self.size)]
        width = max(len(s) for s in labels)
        num_width = len(str(self.size))
        lines = []
        for r in range(self.size):
            cells = " ".join(marks[int(v)].rjust(width) for v in board[r])
            lines.append(f"{self.size - r:>{num_width}} {cells}")
        lines.append(" " * num_width + " " + " ".join(s.rjust(width) for s in labels))
        return "\n".join(lines)

    def picture(self, state: GomokuState, last_move: int | None = None) -> Picture:
        """Black's (X's) and White's stones on the points of a wooden board, columns
        a, b, ... and rows 1..size from the bottom as `format_move` writes them; a spot
        on every point.

        Args:
          state: an unbatched `GomokuState`.
          last_move: the action id to mark, or None.

        Returns:
          The `envs.picture.Picture`.
        """
        state = jax.device_get(state)
        header = status(state, ("Black (X)", "White (O)"))
        if self.k != 5:
            header += f", {self.k} in a row wins"
        out, _ = stone_board(header, np.asarray(state.board), self.size,
                             [_column_label(c) for c in range(self.size)])
        return out.mark_last_move(last_move)

    def __repr__(self) -> str:
        return f"Gomoku(size={self.size}, k={self.k})"

    def heuristic(self):
        """The open-line heuristic (`envs.lines`) for k in a row.

        Returns:
          `value(observation) -> () float32` for one (size, size, 3) observation.
        """
        return line_count_eval(self.size, self.size, self.k)
