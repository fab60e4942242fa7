"""Tic-tac-toe as a pure JAX state machine.

Player 0 (X) moves first. Action `row*3+col`. The observation is [3, 3, 3] bool:
the mover's stones, the opponent's stones, and a plane that is all True when the
mover is X (the side-to-move plane).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env, State, Symmetries, dihedral_symmetries

EMPTY = -1
LINES = np.array(
    [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]],
    dtype=np.int32,
)


@struct.dataclass
class TicTacToeState(State):
    """Tic-tac-toe state; `board` int8 [9]: -1 empty, else the id of the stone's player."""

    board: chex.Array = None


def _observation(board: chex.Array, player: chex.Array) -> chex.Array:
    own = board == player
    opp = board == 1 - player
    side = jnp.broadcast_to(player == 0, board.shape)
    return jnp.stack([own, opp, side], axis=-1).reshape(3, 3, 3)


def _has_line(board: chex.Array, player: chex.Array) -> chex.Array:
    return jnp.any(jnp.all(board[LINES] == player, axis=1))


def state_from_board(board: chex.Array) -> TicTacToeState:
    """The live or finished state with this board (int [9]: -1 empty, 0 X, 1 O).

    The player to move follows from the stone counts; a board with a line is terminal
    with the line's owner winning. Used by the exact solver and by tests.
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


class TicTacToe(Env):
    """Tic-tac-toe (3x3, three in a row wins, full board draws)."""

    name = "tictactoe"
    num_actions = 9
    observation_shape = (3, 3, 3)

    def _init(self, key: chex.PRNGKey) -> TicTacToeState:
        del key
        return state_from_board(jnp.full(9, EMPTY, jnp.int8))

    def _step(self, state: TicTacToeState, action: chex.Array) -> TicTacToeState:
        mover = state.current_player
        board = state.board.at[action].set(mover.astype(jnp.int8))
        won = _has_line(board, mover)
        full = jnp.all(board != EMPTY)
        terminated = won | full
        reward = jnp.where(won, 1.0, 0.0)
        rewards = jnp.zeros(2, jnp.float32).at[mover].set(reward).at[1 - mover].set(-reward)
        next_player = 1 - mover
        return state.replace(
            current_player=next_player,
            observation=_observation(board, next_player),
            legal_action_mask=(board == EMPTY) & ~terminated,
            rewards=rewards,
            terminated=terminated,
            step_count=state.step_count + 1,
            board=board,
        )

    @property
    def symmetries(self) -> Symmetries:
        return dihedral_symmetries(3, 3)

    def transform_state(self, state: TicTacToeState, g: chex.Array) -> TicTacToeState:
        sym = self.symmetries
        return state.replace(
            board=state.board[sym.cell_perm[g]],
            observation=sym.observation(state.observation, g),
            legal_action_mask=sym.policy(state.legal_action_mask, g),
        )

    def render(self, state: TicTacToeState) -> str:
        board = np.asarray(jax.device_get(state.board)).reshape(3, 3)
        marks = {EMPTY: ".", 0: "X", 1: "O"}
        rows = [f"{3 - r} " + " ".join(marks[int(v)] for v in board[r]) for r in range(3)]
        return "\n".join(rows + ["  a b c"])
