"""Hex in plain Python: an independent reference for `hex_game.Hex`, for the checker.

A protocol check cannot tell a wrong rule from a right one (a missing neighbour, the
wrong winner, a player who moves twice); a second implementation of the same rules,
written differently, can. `envs.check_env(env, reference=HexReference(5))` replays every
random game in both and stops at the first ply where they disagree:

    python -m envs.check hex_game:Hex --game-options size=5 --reference hex_reference:HexReference

The reference speaks OpenSpiel's state API (`new_initial_state()`, then
`current_player()`, `legal_actions()`, `apply_action(a)`, `is_terminal()`, `returns()`),
so an OpenSpiel game can serve as one too. This one walks the board cell by cell with a
depth-first search, where `hex_game.py` grows whole-board masks.
"""

from __future__ import annotations

# Cell (row, col) touches these six cells on the rhombus (row r is drawn r half-cells right).
STEPS = ((0, -1), (0, 1), (-1, 0), (-1, 1), (1, 0), (1, -1))


class HexReference:
    """The game: `new_initial_state()` starts one."""

    def __init__(self, size: int = 5):
        self.size = int(size)

    def new_initial_state(self) -> HexReferenceState:
        """An empty board, player 0 to move."""
        return HexReferenceState(self.size)


class HexReferenceState:
    """One game of Hex: `cells[r][c]` is None or the id of the player whose stone it is."""

    def __init__(self, size: int):
        self.size = size
        self.cells = [[None] * size for _ in range(size)]
        self.player = 0
        self.winner: int | None = None

    def current_player(self) -> int:
        return self.player

    def is_terminal(self) -> bool:
        return self.winner is not None

    def legal_actions(self) -> list[int]:
        if self.is_terminal():
            return []
        n = self.size
        return [r * n + c for r in range(n) for c in range(n) if self.cells[r][c] is None]

    def returns(self) -> list[float]:
        if self.winner is None:
            return [0.0, 0.0]
        return [1.0, -1.0] if self.winner == 0 else [-1.0, 1.0]

    def apply_action(self, action: int) -> None:
        row, col = divmod(int(action), self.size)
        if self.is_terminal() or self.cells[row][col] is not None:
            raise ValueError(f"illegal move {action}")
        self.cells[row][col] = self.player
        if self._joins_edges(self.player):
            self.winner = self.player
        self.player = 1 - self.player

    def _joins_edges(self, player: int) -> bool:
        """Player 0 joins the top and bottom rows, player 1 the left and right columns."""
        n = self.size
        if player == 0:
            starts = [(0, c) for c in range(n)]
            goal = lambda r, c: r == n - 1  # noqa: E731
        else:
            starts = [(r, 0) for r in range(n)]
            goal = lambda r, c: c == n - 1  # noqa: E731
        stack = [(r, c) for r, c in starts if self.cells[r][c] == player]
        seen = set(stack)
        while stack:
            r, c = stack.pop()
            if goal(r, c):
                return True
            for dr, dc in STEPS:
                nr, nc = r + dr, c + dc
                if (0 <= nr < n and 0 <= nc < n and (nr, nc) not in seen
                        and self.cells[nr][nc] == player):
                    seen.add((nr, nc))
                    stack.append((nr, nc))
        return False
