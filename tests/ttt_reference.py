"""Plain-Python tic-tac-toe for tests, independent of envs/ and azjax/.

A board is a tuple of 9 ints: -1 empty, 0 X, 1 O; X moves first.
"""

from __future__ import annotations

import functools

import numpy as np

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def winner(b):
    """The player with three in a row, or None."""
    for x, y, z in LINES:
        if b[x] != -1 and b[x] == b[y] == b[z]:
            return b[x]
    return None


def to_move(b):
    return sum(v != -1 for v in b) % 2


def terminal(b):
    return winner(b) is not None or all(v != -1 for v in b)


def legal_moves(b):
    """Empty cells, none once the game is over."""
    return [] if terminal(b) else [i for i in range(9) if b[i] == -1]


def play(b, m):
    out = list(b)
    out[m] = to_move(b)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def reachable_boards():
    """Every board reachable from the empty one (5,478), sorted."""
    seen, stack = set(), [(-1,) * 9]
    while stack:
        b = stack.pop()
        if b not in seen:
            seen.add(b)
            stack.extend(play(b, m) for m in legal_moves(b))
    return sorted(seen)


@functools.lru_cache(maxsize=None)
def negamax(b):
    """Game value for the player to move under perfect play."""
    w = winner(b)
    if w is not None:
        return 1 if w == to_move(b) else -1
    moves = legal_moves(b)
    if not moves:
        return 0
    return max(-negamax(play(b, m)) for m in moves)


@functools.lru_cache(maxsize=None)
def random_play_odds(b):
    """(P X wins, P draw, P O wins) when both sides play uniformly random moves from b."""
    w = winner(b)
    if w is not None:
        return (1.0, 0.0, 0.0) if w == 0 else (0.0, 0.0, 1.0)
    moves = legal_moves(b)
    if not moves:
        return (0.0, 1.0, 0.0)
    return tuple(sum(np.array(random_play_odds(play(b, m))) for m in moves) / len(moves))
