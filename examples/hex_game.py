"""Hex on an N x N rhombus: a game of your own for azjax, in a file of your own.

Player 0 (X, Red) moves first and connects the top and bottom edges; player 1 (O,
Blue) connects the left and right edges. No swap rule. Hex has no draws: a full
board always holds exactly one player's chain, so a game ends within N*N plies.

Cell (row, col) is action `row * N + col`, row 0 at the top. Each row is drawn one
half-cell further right than the one above, so a cell touches six others:
(row, col -+ 1), (row - 1, col), (row - 1, col + 1), (row + 1, col), (row + 1, col - 1).
Moves are written `c3`: column letter a, b, ... from the left, row number 1, 2, ...
from the top (`a1` is the top-left corner).

Use it from the directory holding this file (the current directory is searched):

    python -m envs.check hex_game:Hex                        # does it keep the protocol?
    python /path/to/azjax/experiments/train.py --game hex_game:Hex \\
        --game-options size=5 --run-dir runs/hex5            # train an agent
    python -m azjax.play hex_game:Hex --run-dir runs/hex5    # play it in the terminal

or in Python: `envs.register("hex5", lambda **o: Hex(size=5, **o))`, then
`envs.make("hex5")` (see notebooks/your_own_game.ipynb).
"""

from __future__ import annotations

import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

import envs

EMPTY = -1
MIN_SIZE, MAX_SIZE = 2, 11
# The six neighbours of a cell as (row, col) offsets on the skewed board.
NEIGHBOURS = ((0, -1), (0, 1), (-1, 0), (-1, 1), (1, 0), (1, -1))
_PLANE = np.arange(3)


@struct.dataclass
class HexState(envs.State):
    """A Hex state; `board` int8 [N*N]: -1 empty, else the id of the stone's player."""

    board: chex.Array = None


def _dilate(cells: chex.Array) -> chex.Array:
    """The cells of bool [N, N] `cells` and their six neighbours (static shifts)."""
    n = cells.shape[0]
    padded = jnp.pad(cells, 1)
    out = cells
    for dr, dc in NEIGHBOURS:
        out = out | padded[1 + dr:1 + dr + n, 1 + dc:1 + dc + n]
    return out


def connects_top_bottom(stones: chex.Array) -> chex.Array:
    """Whether bool [N, N] `stones` hold a chain from row 0 to row N - 1.

    A flood fill: start from the stones on the top row and grow the reached set by
    one step over the six neighbours (staying on stones) until it stops growing. A
    `lax.while_loop` over whole-board shifts: static shapes, so it jits and vmaps, and
    simpler than union-find (cheap enough up to 11x11).
    """
    def grow(carry):
        reached, _ = carry
        new = _dilate(reached) & stones
        return new, jnp.any(new != reached)

    top = stones & (jnp.arange(stones.shape[0]) == 0)[:, None]
    reached, _ = jax.lax.while_loop(lambda carry: carry[1], grow, (top, jnp.bool_(True)))
    return jnp.any(reached[-1])


def _observation(board: chex.Array, player: chex.Array, n: int) -> chex.Array:
    """Planes [N, N, 3] for `player` to move: their stones, the opponent's, and a plane
    that is all True when X (player 0) is to move.

    The board is not transposed for O (which would make both players connect top and
    bottom): actions name cells of the board as it is, so the policy would have to be
    transposed too. The side plane tells the network which edges the mover joins.
    """
    target = jnp.where(_PLANE == 0, player, 1 - player).astype(board.dtype)
    stones = board[:, None] == target[None, :]
    return jnp.where(_PLANE == 2, player == 0, stones).reshape(n, n, 3)


class Hex(envs.Env):
    """Hex on a `size` x `size` rhombus (2 to 11; default 5)."""

    name = "hex"
    player_marks = ("X", "O")

    def __init__(self, size: int = 5):
        if not isinstance(size, (int, np.integer)) or not MIN_SIZE <= size <= MAX_SIZE:
            raise ValueError(f"Hex size must be an integer {MIN_SIZE}-{MAX_SIZE}, got {size!r}")
        self.size = n = int(size)
        self.num_actions = n * n
        self.observation_shape = (n, n, 3)
        self.max_plies = n * n
        self._cells = np.arange(n * n)

    def _init(self, key: chex.PRNGKey) -> HexState:
        del key  # no chance in Hex
        board = jnp.full(self.num_actions, EMPTY, jnp.int8)
        return HexState(
            current_player=jnp.int32(0),
            observation=_observation(board, jnp.int32(0), self.size),
            legal_action_mask=jnp.ones(self.num_actions, jnp.bool_),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=board,
        )

    def _step(self, state: HexState, action: chex.Array) -> HexState:
        n, mover = self.size, state.current_player
        board = jnp.where(self._cells == action, mover.astype(jnp.int8), state.board)
        own = (board == mover).reshape(n, n)
        # Only the mover can have won. Transposing keeps the six neighbours (the offsets
        # map onto each other), so O's left-right goal becomes top-bottom too.
        won = connects_top_bottom(jnp.where(mover == 0, own, own.T))
        # +1 for the mover and -1 for the other on a win.
        rewards = jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0)
        next_player = 1 - mover
        return state.replace(
            current_player=next_player,
            observation=_observation(board, next_player, n),
            legal_action_mask=(board == EMPTY) & ~won,
            rewards=rewards.astype(jnp.float32),
            terminated=won,
            step_count=state.step_count + 1,
            board=board,
        )

    # --- symmetries: the 180-degree rotation is the only one that keeps both goals ---

    @property
    def symmetries(self) -> envs.Symmetries:
        """Identity and the 180-degree rotation (cell i <-> cell N*N - 1 - i)."""
        cells = np.arange(self.num_actions)
        return envs.from_cell_permutations(np.stack([cells, cells[::-1]]))

    def transform_state(self, state: HexState, g: chex.Array) -> HexState:
        sym = self.symmetries
        return state.replace(
            board=state.board[sym.cell_perm[g]],
            observation=sym.observation(state.observation, g),
            legal_action_mask=sym.policy(state.legal_action_mask, g),
        )

    # --- how humans read and type moves ---

    @property
    def move_notation(self) -> str:
        last = "abcdefghijk"[self.size - 1]
        return (f"a cell a1-{last}{self.size}: column letter a-{last} from the left, "
                f"row number 1-{self.size} from the top")

    def parse_move(self, text: str) -> int:
        """`"c3"` (column c, row 3) as an action; ValueError for anything else."""
        match = re.fullmatch(r"([a-z])(\d{1,2})", text.strip().lower())
        if match:
            col, row = ord(match[1]) - ord("a"), int(match[2]) - 1
            if col < self.size and 0 <= row < self.size:
                return row * self.size + col
        raise ValueError(f"expected {self.move_notation}, got {text!r}")

    def format_move(self, action: int) -> str:
        action = int(action)
        if not 0 <= action < self.num_actions:
            raise ValueError(f"Hex {self.size}x{self.size} actions are "
                             f"0-{self.num_actions - 1}, got {action}")
        row, col = divmod(action, self.size)
        return f"{chr(ord('a') + col)}{row + 1}"

    def render(self, state: HexState) -> str:
        """The rhombus, each row one space further right, with coordinates."""
        n = self.size
        board = np.asarray(jax.device_get(state.board)).reshape(n, n)
        marks = {EMPTY: ".", 0: "X", 1: "O"}
        letters = " ".join(chr(ord("a") + c) for c in range(n))
        lines = ["    " + letters]
        for r in range(n):
            cells = " ".join(marks[int(v)] for v in board[r])
            lines.append(" " * r + f"{r + 1:>2}  {cells}  {r + 1}")
        lines.append(" " * (n + 4) + letters)
        return "\n".join(lines)

    def result_text(self, state: HexState) -> str | None:
        """How a finished game was decided (read from the board, not the rewards)."""
        if not bool(state.terminated):
            return None
        stones = np.asarray(jax.device_get(state.board)).reshape(self.size, self.size)
        for player, goal in ((0, "top and bottom"), (1, "left and right")):
            mine = stones == player
            if connects_top_bottom(mine if player == 0 else mine.T):
                return f"{self.player_marks[player]} connected {goal}."
        return f"{self.player_marks[int(state.current_player)]} lost by an illegal move."
