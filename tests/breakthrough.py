"""Breakthrough on a small or an 8 x 8 board, a capture game for the checker's tests: the
JAX game, a plain-Python reference with OpenSpiel's state API, and copies whose only bug
is the score of a rare ending (every pawn of one side captured).

Each side starts with its two home rows full of pawns (one row on a board of 4 rows or
fewer). A pawn moves one row forward: straight to an empty cell, or diagonally to a cell
not its own, capturing what stands there. A pawn that reaches the far row wins, as does
capturing every pawn of the other side or leaving it without a move. An action is
`cell * 3 + d` for the pawn on `cell` (row-major, row 0 is player 0's home row) and the
direction d (0 left diagonal, 1 straight, 2 right diagonal, as seen from row 0).

Uniform random play ends nearly every game by a pawn reaching the far row; the wipe-out
is the ending the checker has to look for.
"""

from __future__ import annotations

import chex
import jax.numpy as jnp
import numpy as np
from flax import struct

import envs

_DC = (-1, 0, 1)  # the column step of each direction


def home_rows(rows: int) -> int:
    """How many rows each side fills at the start: 2, or 1 on a board of 4 rows or fewer."""
    return 2 if rows > 4 else 1


@struct.dataclass
class PawnsState(envs.State):
    board: chex.Array = None  # int8 [rows * cols]: -1 empty, else the pawn's player


class Breakthrough(envs.Env):
    """Breakthrough on `rows` x `cols` (see the module docstring)."""

    def __init__(self, rows: int = 8, cols: int = 8):
        if rows < 3 or cols < 2:
            raise ValueError(f"Breakthrough needs at least 3 rows and 2 columns, got "
                             f"{rows} x {cols}")
        self.rows, self.cols = rows, cols
        self.name = f"breakthrough{rows}x{cols}"
        cells = rows * cols
        self.num_actions = cells * 3
        self.observation_shape = (rows, cols, 3)
        # Every move advances a pawn a row, and a pawn's last advance ends the game: the
        # game ends by the move after every pawn has made all of its other advances.
        self.max_plies = 2 * cols * sum(rows - 2 - r for r in range(home_rows(rows))) + 1
        targets = np.full((2, cells * 3), -1, np.int32)
        for player, dr in ((0, 1), (1, -1)):
            for cell in range(cells):
                r, c = divmod(cell, cols)
                for d, dc in enumerate(_DC):
                    if 0 <= r + dr < rows and 0 <= c + dc < cols:
                        targets[player, cell * 3 + d] = (r + dr) * cols + c + dc
        self._targets = targets
        self._from = np.repeat(np.arange(cells), 3)
        self._straight = np.tile(np.array(_DC) == 0, cells)

    def _legal(self, board, player):
        to = jnp.asarray(self._targets)[player]
        there = board[jnp.maximum(to, 0)]
        free = jnp.where(jnp.asarray(self._straight), there < 0, there != player)
        return (board[jnp.asarray(self._from)] == player) & (to >= 0) & free

    def _state(self, state, board, player, done, rewards, step_count):
        cells = self.rows * self.cols
        planes = jnp.stack([board == player, board == 1 - player,
                            jnp.broadcast_to(player == 0, (cells,))], axis=-1)
        return state.replace(current_player=player, board=board, terminated=done,
                             observation=planes.reshape(self.observation_shape),
                             legal_action_mask=self._legal(board, player) & ~done,
                             rewards=rewards.astype(jnp.float32), step_count=step_count)

    def _init(self, key):
        del key
        cells, home = self.rows * self.cols, home_rows(self.rows) * self.cols
        at = jnp.arange(cells)
        board = jnp.where(at < home, 0, jnp.where(at >= cells - home, 1, -1)).astype(jnp.int8)
        blank = PawnsState(current_player=jnp.int32(0), observation=None,
                           legal_action_mask=None, rewards=None, terminated=None,
                           step_count=None, board=board)
        return self._state(blank, board, jnp.int32(0), jnp.bool_(False), jnp.zeros(2),
                           jnp.int32(0))

    def _step(self, state, action):
        mover = state.current_player
        to = jnp.asarray(self._targets)[mover, action]
        cells = jnp.arange(self.rows * self.cols)
        board = jnp.where(cells == jnp.asarray(self._from)[action], -1,
                          jnp.where(cells == to, mover, state.board)).astype(jnp.int8)
        far = to // self.cols == jnp.where(mover == 0, self.rows - 1, 0)
        wiped = ~jnp.any(board == 1 - mover)
        stuck = ~jnp.any(self._legal(board, 1 - mover))
        done = far | wiped | stuck
        rewards = self.result(mover, far, wiped, done)
        return self._state(state, board, 1 - mover, done, rewards, state.step_count + 1)

    def result(self, mover, far, wiped, done):
        """The rewards of a move: +1 to the mover on a win (every ending is one).

        Args:
          mover: () int32, the player who moved.
          far, wiped, done: () bool, the move reached the far row, captured the last
            pawn of the other side, ended the game.

        Returns:
          float32 [2], indexed by player id.
        """
        del far, wiped
        return jnp.where(done, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)


class WipeOutIsADraw(Breakthrough):
    """Capturing the last pawn ends the game as a draw."""

    def result(self, mover, far, wiped, done):
        return jnp.where(wiped, 0.0, super().result(mover, far, wiped, done))


class WipeOutGoesToPlayerZero(Breakthrough):
    """Capturing the last pawn wins for player 0, whoever captured it."""

    def result(self, mover, far, wiped, done):
        return jnp.where(wiped, jnp.array([1.0, -1.0]), super().result(mover, far, wiped, done))


class BreakthroughReference:
    """The same Breakthrough in plain Python, with OpenSpiel's state API."""

    def __init__(self, rows: int = 8, cols: int = 8):
        self.rows, self.cols = rows, cols

    def new_initial_state(self):
        return _PawnsState(self.rows, self.cols)


class _PawnsState:
    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        home = home_rows(rows)
        self.grid = [[0 if r < home else 1 if r >= rows - home else None for _ in range(cols)]
                     for r in range(rows)]
        self.player, self.winner = 0, None

    def _moves(self, player):
        step = 1 if player == 0 else -1
        out = []
        for r in range(self.rows):
            for c in range(self.cols):
                if self.grid[r][c] != player:
                    continue
                for d, dc in enumerate(_DC):
                    rr, cc = r + step, c + dc
                    if not (0 <= rr < self.rows and 0 <= cc < self.cols):
                        continue
                    there = self.grid[rr][cc]
                    if (there is None) if dc == 0 else (there != player):
                        out.append(((r * self.cols + c) * 3 + d, rr, cc))
        return out

    def current_player(self):
        return self.player

    def is_terminal(self):
        return self.winner is not None

    def legal_actions(self):
        return [] if self.is_terminal() else [a for a, _, _ in self._moves(self.player)]

    def apply_action(self, action):
        _, rr, cc = next(m for m in self._moves(self.player) if m[0] == action)
        cell = action // 3
        self.grid[cell // self.cols][cell % self.cols] = None
        self.grid[rr][cc] = self.player
        other = 1 - self.player
        if (rr == (self.rows - 1 if self.player == 0 else 0)
                or not any(other in row for row in self.grid) or not self._moves(other)):
            self.winner = self.player
        self.player = other

    def returns(self):
        if self.winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.winner == 0 else [-1.0, 1.0]

    def wiped_out(self) -> bool:
        """Whether the game ended with every pawn of one side captured."""
        return self.is_terminal() and not any(self.player in row for row in self.grid)
