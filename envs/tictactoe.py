"""Tic-tac-toe as a pure JAX state machine.

Player 0 (X) moves first. Action `row*3+col`, row 0 the top row. The observation is
[3, 3, 3] bool: the mover's stones, the opponent's stones, and a plane that is all True
when the mover is X (the side-to-move plane).

Human notation (`parse_move`, `format_move`): a cell `1`-`9` numbered row by row from
the top-left like a phone keypad (1 2 3 is the top row), or `a1`-`c3`, column letter
a-c from the left and row number 1-3 from the BOTTOM, as `render` labels the board (so
`a3` = `1` is the top-left cell and `a1` = `7` the bottom-left one).

The game knows its exact solution (`envs.tictactoe_minimax`, written independently of
these rules): training scores the network on every reachable live position
(`ground_truth`) and the `solver` player plays from it.
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs import tictactoe_minimax as minimax
from envs.core import Env
from envs.ground_truth import GroundTruth, GroundTruthSource
from envs.picture import Grid, Picture, group, line, piece_class, ring, status
from envs.state import State
from envs.symmetries import Symmetries, dihedral_symmetries

EMPTY = -1
X_COLOUR, O_COLOUR = "#c0392b", "#1f5fbf"
LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]],
    dtype=np.int32,
)
# The 8 lines as bit masks over cells (bit i = cell i), and WINS[m]: whether the 9-bit
# stone mask m holds a line (a 512-entry table; one lookup instead of a reduction).
LINE_MASKS = np.array([sum(1 << int(i) for i in line) for line in LINES], dtype=np.int32)
WINS = np.array([any(m & lm == lm for lm in LINE_MASKS.tolist()) for m in range(512)])
_CELL_BITS = (1 << np.arange(9)).astype(np.int32)
_CELLS = np.arange(9, dtype=np.int32)
# Observation [3, 3, 3] from a packed mask (bits 0-8 one player's stones, bits 9-17 the
# other's): the bit each (row, col, plane) reads, and the side-to-move plane.
_OBS_SHIFT = (_CELLS[:, None] + np.array([9, 0, 0], np.int32)[None, :]).reshape(3, 3, 3)
_SIDE_PLANE = np.broadcast_to(np.arange(3) == 2, (9, 3)).reshape(3, 3, 3)


@struct.dataclass
class TicTacToeState(State):
    """Tic-tac-toe state; `board` int8 [9]: -1 empty, else the id of the stone's player."""

    board: chex.Array = None


_PLANE = np.arange(3, dtype=np.int32)


def _observation(board: chex.Array, player: chex.Array) -> chex.Array:
    # Planes (own, opponent, side to move) as one broadcast compare and select: no
    # concatenate, which XLA compiles to per-element branches under vmap.
    target = jnp.where(_PLANE == 0, player, 1 - player).astype(board.dtype)  # [3]
    stones = board[:, None] == target[None, :]  # [9, 3]
    return jnp.where(_PLANE == 2, player == 0, stones).reshape(3, 3, 3)


def _has_line(board: chex.Array, player: chex.Array) -> chex.Array:
    """Bitboard test: the player's stones as a 9-bit mask against the 8 line masks."""
    bits = jnp.sum(jnp.where(board == player, _CELL_BITS, 0), dtype=jnp.int32)
    return jnp.any((bits & LINE_MASKS) == LINE_MASKS)


def state_from_board(board: chex.Array) -> TicTacToeState:
    """The live or finished state with this board (int [9]: -1 empty, 0 X, 1 O).

    The player to move follows from the stone counts; a board with a line is terminal
    with the line's owner winning. Used by the exact solver and by tests.

    Args:
      board: (9,) integer, row by row from the top-left: -1 empty, 0 X, 1 O.

    Returns:
      The unbatched `TicTacToeState`.
    """
    board = jnp.asarray(board, dtype=jnp.int8)
    count = jnp.sum(board != EMPTY).astype(jnp.int32)
    player = (count % 2).astype(jnp.int32)
    x_won = _has_line(board, 0)
    o_won = _has_line(board, 1)
    won = x_won | o_won
    terminated = won | (count == 9)
    rewards = jnp.where(
        won,
        jnp.where(x_won, jnp.array([1.0, -1.0]), jnp.array([-1.0, 1.0])),
        jnp.zeros(2),
    ).astype(jnp.float32)
    return TicTacToeState(
        current_player=player,
        observation=_observation(board, player),
        legal_action_mask=(board == EMPTY) & ~terminated,
        rewards=rewards,
        terminated=terminated,
        step_count=count,
        board=board,
    )


_STATES_FROM_BOARDS = jax.jit(jax.vmap(state_from_board))


def states_from_boards(boards: chex.Array) -> TicTacToeState:
    """`state_from_board` of each board, as one compiled program (per batch size):
    op by op, each of its operations would compile on its own.

    Args:
      boards: int [B, 9], -1 empty, 0 X, 1 O.

    Returns:
      The states, batched [B].
    """
    return _STATES_FROM_BOARDS(jnp.asarray(boards, dtype=jnp.int8))


def parse_move(text: str) -> int:
    """A human move, keypad `"1"`-`"9"` or board `"a1"`-`"c3"`, as an action 0-8.

    Args:
      text: what the human typed.

    Returns:
      The action id, 0-8.

    Raises:
      ValueError: for text that is neither.
    """
    t = text.strip().lower()
    if len(t) == 1 and "1" <= t <= "9":
        return int(t) - 1
    if len(t) == 2 and t[0] in "abc" and t[1] in "123":
        return (3 - int(t[1])) * 3 + "abc".index(t[0])
    raise ValueError(
        f"expected a cell 1-9 (1 = top-left, row by row) or a1-c3 (column a-c, row 1-3 "
        f"from the bottom), got {text!r}"
    )


def format_move(action: int) -> str:
    """An action 0-8 as the board coordinate `"a1"`-`"c3"` shown by `render`.

    Args:
      action: the action id, 0-8.

    Returns:
      The coordinate, e.g. `"a3"` for the top-left cell.

    Raises:
      ValueError: `action` is outside 0-8.
    """
    action = int(action)
    if not 0 <= action < 9:
        raise ValueError(f"tic-tac-toe actions are 0-8, got {action}")
    row, col = divmod(action, 3)
    return f"{'abc'[col]}{3 - row}"


class TicTacToe(Env):
    """Tic-tac-toe (3x3, three in a row wins, full board draws)."""

    name = "tictactoe"
    num_actions = 9
    observation_shape = (3, 3, 3)
    max_plies = 9
    player_marks = ("X", "O")
    line_length = 3
    move_notation = ("a cell 1-9 (1 = top-left, row by row, like a phone keypad) or a1-c3 "
                     "(column a-c, row 1-3 from the bottom, as on the board)")

    def _init(self, key: chex.PRNGKey) -> TicTacToeState:
        # Constants equal to `state_from_board(empty board)`, without its line tests.
        del key
        return TicTacToeState(
            current_player=jnp.int32(0),
            observation=jnp.zeros((3, 3, 3), jnp.bool_).at[:, :, 2].set(True),
            legal_action_mask=jnp.ones(9, jnp.bool_),
            rewards=jnp.zeros(2, jnp.float32),
            terminated=jnp.bool_(False),
            step_count=jnp.int32(0),
            board=jnp.full(9, EMPTY, jnp.int8),
        )

    def _step(self, state: TicTacToeState, action: chex.Array) -> TicTacToeState:
        mover = state.current_player
        # One-hot select instead of a scatter (scatters are slow under vmap).
        board = jnp.where(_CELLS == action, mover.astype(jnp.int8), state.board)
        # Everything else from one packed mask: bits 0-8 the mover's stones, 9-17 the
        # other player's (one reduction, then elementwise ops that fuse under vmap).
        packed = jnp.sum(
            jnp.where(board == mover, _CELL_BITS, jnp.where(board == 1 - mover, _CELL_BITS << 9, 0)),
            dtype=jnp.int32,
        )
        own = packed & 511
        won = jnp.asarray(WINS)[own]
        full = (own | (packed >> 9)) == 511
        terminated = won | full
        # +1 for the mover and -1 for the other on a win, without a scatter.
        sign = jnp.where(mover == 0, 1.0, -1.0) * jnp.array([1.0, -1.0], jnp.float32)
        rewards = jnp.where(won, sign, 0.0).astype(jnp.float32)
        next_player = 1 - mover
        # The next mover's stones are bits 9-17, the opponent's bits 0-8.
        observation = jnp.where(_SIDE_PLANE, next_player == 0, ((packed >> _OBS_SHIFT) & 1) == 1)
        return state.replace(
            current_player=next_player,
            observation=observation,
            legal_action_mask=(board == EMPTY) & ~terminated,
            rewards=rewards,
            terminated=terminated,
            step_count=state.step_count + 1,
            board=board,
        )

    @property
    def symmetries(self) -> Symmetries:
        """The 8 rotations and reflections of the board."""
        return dihedral_symmetries(3, 3)

    def transform_state(self, state: TicTacToeState, g: chex.Array) -> TicTacToeState:
        """Applies symmetry `g` to the board, the observation and the legal moves.

        Args:
          state: an unbatched `TicTacToeState`.
          g: () int32, the symmetry, in [0, 8).

        Returns:
          The transformed `TicTacToeState`.
        """
        sym = self.symmetries
        return state.replace(
            board=state.board[sym.cell_perm[g]],
            observation=sym.observation(state.observation, g),
            legal_action_mask=sym.policy(state.legal_action_mask, g),
        )

    def parse_move(self, text: str) -> int:
        """A human move, `"1"`-`"9"` or `"a1"`-`"c3"`, as an action (ValueError on bad input).

        Args:
          text: what the human typed.

        Returns:
          The action id, 0-8.
        """
        return parse_move(text)

    def format_move(self, action: int) -> str:
        """An action as the board coordinate `"a1"`-`"c3"`.

        Args:
          action: the action id, 0-8.

        Returns:
          The coordinate.
        """
        return format_move(action)

    def render(self, state: TicTacToeState) -> str:
        """The board as text: X, O and `.`, rows numbered 3-1 and columns a-c.

        Args:
          state: an unbatched `TicTacToeState`.

        Returns:
          Four lines of text.
        """
        board = np.asarray(jax.device_get(state.board)).reshape(3, 3)
        marks = {EMPTY: ".", 0: "X", 1: "O"}
        rows = [f"{3 - r} " + " ".join(marks[int(v)] for v in board[r]) for r in range(3)]
        return "\n".join(rows + ["  a b c"])

    def picture(self, state: TicTacToeState, last_move: int | None = None) -> Picture:
        """The 3x3 board: X (player 0) as a cross, O as a ring, columns a-c and rows 3-1
        as `format_move` writes them; a spot on every cell.

        Args:
          state: an unbatched `TicTacToeState`.
          last_move: the action id to mark, or None.

        Returns:
          The `envs.picture.Picture`.
        """
        state = jax.device_get(state)
        grid = Grid(3, 3, cell=64.0)
        out = grid.picture(status(state, self.player_marks), column_labels=list("abc"),
                           row_labels=["3", "2", "1"])
        arm = grid.cell * 0.28
        for cell, player in enumerate(np.asarray(state.board).tolist()):
            x, y = grid.centre(*divmod(cell, 3))
            if player == 0:
                out = out.add(group([line(x - arm, y - arm, x + arm, y + arm, X_COLOUR, 6),
                                     line(x - arm, y + arm, x + arm, y - arm, X_COLOUR, 6)],
                                    piece_class(0)))
            elif player == 1:
                out = out.add(ring(x, y, arm * 1.1, O_COLOUR, 6, cls=piece_class(1)))
        spots = {cell: grid.centre(*divmod(cell, 3)) for cell in range(9)}
        return dataclasses.replace(out, spots=spots).mark_last_move(last_move)

    def ground_truth(self) -> GroundTruthSource:
        """Every reachable live position with its optimal moves; perfect play is a right
        move in all of them (and the table of chosen moves unbeatable from both seats).

        Returns:
          The `GroundTruthSource` (metric `optimal_share`, complete).
        """
        return GROUND_TRUTH

    def solver(self):
        """The optimal moves of a state, looked up in the exact solution.

        Returns:
          `optimal(state) -> (9,) bool` for an unbatched live state (see `optimal_moves`).
        """
        return optimal_moves()


class SeatCheck:
    """Whether a table of chosen moves loses no game from either seat, checked against
    every opponent reply: the positions the table can reach are propagated ply by ply
    over the solver's game graph (`envs.tictactoe_minimax`'s own rules), a few NumPy
    operations per ply instead of a walk over every game line."""

    def __init__(self):
        solution = minimax.solution()
        boards = [tuple(int(v) for v in b) for b in solution.boards]
        n = len(boards)
        self.children = np.full((n, 9), -1, np.int32)
        for i, board in enumerate(boards):
            for m in minimax.legal_moves(board):
                self.children[i, m] = solution.index[minimax.play(board, m)]
        self.root = solution.index[(minimax.EMPTY,) * 9]
        winner = [minimax.winner(b) for b in boards]
        self.won_by = np.array([-1 if w is None else w for w in winner], np.int8)
        self.live = solution.live
        stones = (solution.boards != minimax.EMPTY).sum(axis=1)
        self.levels = [self.live[stones[self.live] == k] for k in range(9)]
        self.mover = stones % 2

    def __call__(self, actions: np.ndarray) -> dict[str, float]:
        """`actions` [L]: the move chosen on each live board (in `minimax.solution().live`
        order); 1.0 or 0.0 for unbeatable from the first seat, the second, and both."""
        chosen = np.full(len(self.children), -1, np.int64)
        chosen[self.live] = actions
        if (self.children[self.live, chosen[self.live]] < 0).any():
            raise ValueError("the table chooses an illegal move")
        first, second = (self._holds(seat, chosen) for seat in (0, 1))
        return {"unbeatable_first": float(first), "unbeatable_second": float(second),
                "unbeatable": float(first and second)}

    def _holds(self, seat: int, chosen: np.ndarray) -> bool:
        reached = np.zeros(len(self.children), bool)
        reached[self.root] = True
        for level in self.levels:
            here = level[reached[level]]
            mine = here[self.mover[here] == seat]
            reached[self.children[mine, chosen[mine]]] = True
            replies = self.children[here[self.mover[here] != seat]]
            reached[replies[replies >= 0]] = True
        return not (reached & (self.won_by == 1 - seat)).any()


def _load_ground_truth(env: Env) -> GroundTruth:
    del env
    solution = minimax.solution()
    live = solution.live
    boards = solution.boards[live]
    return GroundTruth(
        states=states_from_boards(boards),
        right_moves=solution.optimal[live],
        counted=np.ones(len(live), bool),
        check_actions=SeatCheck(),
    )


GROUND_TRUTH = GroundTruthSource(metric="optimal_share", complete=True, load=_load_ground_truth)


def optimal_moves():
    """The exact solver: one state -> its optimal moves (bool [9]), by table lookup.

    Returns:
      `optimal(state) -> (9,) bool`, for an unbatched `TicTacToeState` (jit/vmap-able):
      its optimal moves, all False on a finished state.
    """
    solution = minimax.solution()
    powers = 3 ** np.arange(9)
    codes = (solution.boards.astype(np.int64) + 1) @ powers
    table = np.zeros((3**9, 9), bool)
    table[codes] = solution.optimal
    table, powers = jnp.asarray(table), jnp.asarray(powers, jnp.int32)

    def optimal(state: TicTacToeState) -> jax.Array:
        return table[(state.board.astype(jnp.int32) + 1) @ powers] & state.legal_action_mask

    return optimal
