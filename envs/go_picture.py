"""Go's picture (`Go.picture`): the stones on the points of a wooden board with the star
points, the coordinates of Go's notation (columns A-T without I, rows numbered from the
bottom), and a "pass" button below the board whose centre is the pass move's spot."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from envs.go_board import COLUMNS
from envs.picture import INK, Picture, rect, stone_board, text

NAMES = ("Black", "White")


def _star_points(size: int) -> list[tuple[int, int]]:
    """The star points (hoshi) of a board, (row, col): on the third line from the edge
    below 13x13 and the fourth from 13x13, the centre of an odd board, and the middle
    of each side from 15x15; none below 9x9.

    Args:
      size: the board's side.

    Returns:
      The points as (row, col), row 0 the top line.
    """
    if size < 9:
        return []
    edge = 2 if size < 13 else 3
    lines = [edge, size - 1 - edge]
    if size % 2:
        mid = size // 2
        sides = [mid] if size >= 15 else []
        points = {(r, c) for r in lines + sides for c in lines + sides}
        points.add((mid, mid))
        return sorted(points)
    return [(r, c) for r in lines for c in lines]


def header(env: Any, state: Any) -> tuple[str, str | None]:
    """Whose move it is, or who won and by how much (and the area count, the line of
    `result_text`, for a finished game).

    Args:
      env: the `envs.go.Go` game.
      state: one unbatched `GoState` (on the host).

    Returns:
      `(title, result)`: the header line, and the area-count line or None.
    """
    if not bool(state.terminated):
        return f"{NAMES[int(state.current_player)]} to move", None
    black, white = np.asarray(env.area_scores(state)).tolist()
    margin = black - white - env.komi
    rewards = np.asarray(state.rewards)
    if rewards[0] == rewards[1]:
        return "draw", env.result_text(state)
    winner = int(np.argmax(rewards))
    by = f" by {abs(margin):g}" if np.sign(margin) == (1 if winner == 0 else -1) else ""
    return f"{NAMES[winner]} won{by}", env.result_text(state)


def go_picture(env: Any, state: Any, last_move: int | None = None) -> Picture:
    """The picture of one state of `env` (an `envs.go.Go`), the last move marked (a pass
    on the button). Spots: every point (action row * size + col) and pass (the button).

    Args:
      env: the `envs.go.Go` game.
      state: one unbatched `GoState`.
      last_move: the action id to mark (N * N: pass), or None.

    Returns:
      The `envs.picture.Picture`.
    """
    state = jax.device_get(state)
    size = env.size
    title, result = header(env, state)
    button_h = 30.0
    extra = button_h + 10 + (18 if result else 0)
    out, grid = stone_board(title, np.asarray(state.board), size, list(COLUMNS[:size]),
                            stars=_star_points(size), extra_height=extra)
    # The label on the left, clear of the marks drawn on the spot (the button's centre).
    button_w = max(100.0, 3.2 * grid.cell)
    x = grid.left + grid.board_width / 2
    y = grid.top + grid.board_height + grid.label + 6 + button_h / 2
    out = out.add(rect(x - button_w / 2, y - button_h / 2, button_w, button_h, "#f4efe4",
                       stroke=INK, width=1.2, radius=6, cls="button"),
                  text(x - button_w / 2 + 10, y + 5, "pass", 13, anchor="start"))
    if result:
        out = out.add(text(x, y + button_h / 2 + 16, result, 11, "#555"))
    spots = {**out.spots, size * size: (x, y)}
    return Picture(out.width, out.height, out.elements, spots,
                   spot_size=grid.cell).mark_last_move(last_move)
