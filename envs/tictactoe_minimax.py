"""Exact tic-tac-toe solver over every reachable position, in plain Python.

It enumerates the 5,478 positions reachable from the empty board (4,520 of them not
terminal), their game values under perfect play, and the set of optimal moves, with
its own implementation of the rules (independent of `envs.tictactoe`).
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

EMPTY = -1
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
Board = tuple[int, ...]


def winner(board: Board) -> int | None:
    """The player (0 = X, 1 = O) with three in a row, or None.

    Args:
      board: 9 cells, row by row: -1 empty, 0 X, 1 O.

    Returns:
      0, 1 or None.
    """
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return None


def to_move(board: Board) -> int:
    """The player to move: X when the stone counts are equal.

    Args:
      board: 9 cells: -1 empty, 0 X, 1 O.

    Returns:
      0 (X) or 1 (O).
    """
    return sum(v != EMPTY for v in board) % 2


def is_terminal(board: Board) -> bool:
    """Someone has three in a row, or the board is full.

    Args:
      board: 9 cells: -1 empty, 0 X, 1 O.

    Returns:
      Whether the game is over.
    """
    return winner(board) is not None or all(v != EMPTY for v in board)


def legal_moves(board: Board) -> list[int]:
    """The empty cells of a live board (none once the game is over).

    Args:
      board: 9 cells: -1 empty, 0 X, 1 O.

    Returns:
      The cells 0-8, in increasing order.
    """
    if is_terminal(board):
        return []
    return [i for i, v in enumerate(board) if v == EMPTY]


def play(board: Board, move: int) -> Board:
    """The board after the player to move takes cell `move`.

    Args:
      board: 9 cells: -1 empty, 0 X, 1 O.
      move: an empty cell, 0-8 (not checked).

    Returns:
      The new board.
    """
    b = list(board)
    b[move] = to_move(board)
    return tuple(b)


@functools.lru_cache(maxsize=None)
def value(board: Board) -> int:
    """Game value for the player to move under perfect play: +1 win, 0 draw, -1 loss.

    Args:
      board: 9 cells: -1 empty, 0 X, 1 O.

    Returns:
      +1, 0 or -1.
    """
    w = winner(board)
    if w is not None:
        return 1 if w == to_move(board) else -1
    moves = legal_moves(board)
    if not moves:
        return 0
    return max(-value(play(board, m)) for m in moves)


def optimal_moves(board: Board) -> list[int]:
    """Moves that keep the game value.

    Args:
      board: 9 cells: -1 empty, 0 X, 1 O.

    Returns:
      The cells 0-8, in increasing order; empty on a finished board.
    """
    best = value(board)
    return [m for m in legal_moves(board) if -value(play(board, m)) == best]


class TicTacToeSolution:
    """All reachable positions with values and optimal moves, as NumPy arrays.

    Attributes:
      boards: int8 [N, 9] every reachable position (-1 empty, 0 X, 1 O).
      values: int8 [N] value for the player to move.
      terminal: bool [N].
      optimal: bool [N, 9] optimal moves (all False at terminal positions).
      index: dict from board tuple to row.
    """

    def __init__(self):
        empty: Board = (EMPTY,) * 9
        seen: dict[Board, None] = {}
        stack = [empty]
        while stack:
            board = stack.pop()
            if board in seen:
                continue
            seen[board] = None
            stack.extend(play(board, m) for m in legal_moves(board))
        boards = sorted(seen)
        self.index = {b: i for i, b in enumerate(boards)}
        self.boards = np.array(boards, dtype=np.int8)
        self.values = np.array([value(b) for b in boards], dtype=np.int8)
        self.terminal = np.array([is_terminal(b) for b in boards])
        self.optimal = np.zeros((len(boards), 9), dtype=bool)
        for i, b in enumerate(boards):
            self.optimal[i, optimal_moves(b)] = True

    @property
    def live(self) -> np.ndarray:
        """Indices of the non-terminal positions.

        Returns:
          (L,) int64 rows of `boards`, increasing.
        """
        return np.flatnonzero(~self.terminal)


@functools.lru_cache(maxsize=1)
def solution() -> TicTacToeSolution:
    """The (cached) full solution.

    Returns:
      The `TicTacToeSolution`, built on the first call.
    """
    return TicTacToeSolution()


def losing_lines(choose: Callable[[Board], int], agent_player: int) -> list[list[int]]:
    """Every game the agent loses, as move lists, against all possible opponent replies.

    `choose(board)` is the agent's (deterministic) move wherever it is to move as
    `agent_player` (0 = first, 1 = second); the opponent tries every legal move.
    An empty list means the agent is unbeatable from that seat.

    Args:
      choose: the agent's move on a board (a tuple of 9 cells: -1 empty, 0 X, 1 O).
      agent_player: the agent's seat, 0 or 1.

    Returns:
      The lost games, each the list of its moves from the empty board.

    Raises:
      ValueError: `choose` returned an illegal move.
    """
    losses: list[list[int]] = []

    def walk(board: Board, line: list[int]) -> None:
        w = winner(board)
        if w is not None:
            if w != agent_player:
                losses.append(line)
            return
        moves = legal_moves(board)
        if not moves:
            return
        if to_move(board) == agent_player:
            move = int(choose(board))
            if move not in moves:
                raise ValueError(f"agent chose illegal move {move} in {board}")
            walk(play(board, move), line + [move])
        else:
            for m in moves:
                walk(play(board, m), line + [m])

    walk((EMPTY,) * 9, [])
    return losses


def table_player(boards: Sequence[Board] | np.ndarray, actions: np.ndarray) -> Callable[[Board], int]:
    """A `choose` function from a table of chosen actions per board.

    Args:
      boards: (N, 9) integer boards (or N sequences of 9 cells).
      actions: (N,) integer, the move chosen on each board.

    Returns:
      `choose(board) -> int` for any board of `boards` (KeyError for others).
    """
    table = {tuple(int(v) for v in b): int(a) for b, a in zip(boards, actions)}
    return lambda board: table[board]
