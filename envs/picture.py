"""Game states as SVG pictures.

`Env.picture(state)` returns a `Picture`: the SVG elements of one state, its size, and
where each move is drawn (its *spot*, which the analysis board writes on and the browser
page clicks). A notebook shows a `Picture` written as the last line of a cell
(`_repr_svg_`); `Picture.svg()` is the text of a standalone SVG file. `tile` lays several
pictures out in a grid (`draw` does it for a batch of states). `Grid`, `stone_board`,
`status` and the element helpers (`disc`, `ring`, `text`, `line`, `rect`, `group`) are
what the shipped games draw with. Pieces carry the class `piece p0` or `piece p1`
(`piece_class`, by player id), the last-move dot the class `last-move`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import jax
import numpy as np

FONT = "font-family=\"Helvetica, Arial, sans-serif\""
INK = "#222"
PLAYER_COLOURS = ("#1f1f1f", "#f4f4f4")
"""Fill of player 0's and player 1's pieces in the default picture (dark, light)."""
LAST_MOVE = "#e0362b"
HEADER_CHAR = 7.8
"""About the mean width of one character of a 14-unit header line."""


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _cls(cls: str | None) -> str:
    return f'class="{escape(cls)}" ' if cls else ""


def text(x: float, y: float, s: str, size: float = 12, fill: str = INK,
         anchor: str = "middle", weight: str = "normal", *, cls: str | None = None) -> str:
    """A line of text whose baseline is centred (anchor 'middle') or starts at x, y.
    `cls`, here and in the other element helpers: the element's class attribute.

    Args:
      x: the anchor's x.
      y: the baseline's y.
      s: the text (escaped here).
      size: the font size.
      fill: the colour.
      anchor: SVG `text-anchor`: 'start', 'middle' or 'end'.
      weight: SVG `font-weight`.
      cls: the class attribute, or None.

    Returns:
      The SVG element.
    """
    return (f'<text {_cls(cls)}x="{_num(x)}" y="{_num(y)}" font-size="{_num(size)}" {FONT} '
            f'fill="{fill}" text-anchor="{anchor}" font-weight="{weight}">{escape(s)}</text>')


def disc(x: float, y: float, r: float, fill: str, stroke: str = INK, width: float = 1.0,
         opacity: float = 1.0, *, cls: str | None = None) -> str:
    """A filled circle.

    Args:
      x: the centre's x.
      y: the centre's y.
      r: the radius.
      fill: the fill colour.
      stroke: the outline's colour.
      width: the outline's width.
      opacity: the fill's opacity, in [0, 1].
      cls: the class attribute, or None.

    Returns:
      The SVG element.
    """
    extra = f' fill-opacity="{opacity:.3f}"' if opacity < 1 else ""
    return (f'<circle {_cls(cls)}cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}" fill="{fill}"{extra} '
            f'stroke="{stroke}" stroke-width="{_num(width)}"/>')


def ring(x: float, y: float, r: float, stroke: str, width: float = 2.0, *,
         cls: str | None = None) -> str:
    """An unfilled circle.

    Args:
      x: the centre's x.
      y: the centre's y.
      r: the radius.
      stroke: the colour.
      width: the line's width.
      cls: the class attribute, or None.

    Returns:
      The SVG element.
    """
    return (f'<circle {_cls(cls)}cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}" fill="none" '
            f'stroke="{stroke}" stroke-width="{_num(width)}"/>')


def line(x1: float, y1: float, x2: float, y2: float, stroke: str = INK,
         width: float = 1.0, *, cls: str | None = None) -> str:
    """A straight line.

    Args:
      x1: the start's x.
      y1: the start's y.
      x2: the end's x.
      y2: the end's y.
      stroke: the colour.
      width: the line's width.
      cls: the class attribute, or None.

    Returns:
      The SVG element.
    """
    return (f'<line {_cls(cls)}x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
            f'stroke="{stroke}" stroke-width="{_num(width)}" stroke-linecap="round"/>')


def rect(x: float, y: float, w: float, h: float, fill: str, stroke: str = "none",
         width: float = 1.0, radius: float = 0.0, opacity: float = 1.0, *,
         cls: str | None = None) -> str:
    """A rectangle (rounded corners with `radius`).

    Args:
      x: the left edge.
      y: the top edge.
      w: the width.
      h: the height.
      fill: the fill colour.
      stroke: the outline's colour ('none': no outline).
      width: the outline's width.
      radius: the corners' radius.
      opacity: the fill's opacity, in [0, 1].
      cls: the class attribute, or None.

    Returns:
      The SVG element.
    """
    extra = f' fill-opacity="{opacity:.3f}"' if opacity < 1 else ""
    return (f'<rect {_cls(cls)}x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" '
            f'rx="{_num(radius)}" fill="{fill}"{extra} stroke="{stroke}" '
            f'stroke-width="{_num(width)}"/>')


@dataclasses.dataclass(frozen=True)
class Picture:
    """One SVG picture: its elements, its size, and where each move is drawn.

    Attributes:
      width, height: the size in SVG units (pixels at scale 1).
      elements: SVG elements, drawn in order.
      spots: action id -> (x, y) centre of where that move is drawn (and clicked); moves
        with no place on the picture are absent.
      spot_size: the side of one spot (a cell), for marks drawn on spots.
    """

    width: float
    height: float
    elements: tuple[str, ...] = ()
    spots: dict[int, tuple[float, float]] = dataclasses.field(default_factory=dict)
    spot_size: float = 40.0

    def add(self, *elements: str) -> "Picture":
        """This picture with `elements` drawn on top.

        Args:
          *elements: SVG elements.

        Returns:
          A new `Picture`; this one is unchanged.
        """
        return dataclasses.replace(self, elements=self.elements + tuple(elements))

    def mark_last_move(self, action: int | None) -> "Picture":
        """This picture with a red dot on the spot of `action` (None or no spot: as is).

        Args:
          action: an action id, or None.

        Returns:
          A new `Picture`, or this one.
        """
        if action is None or int(action) not in self.spots:
            return self
        x, y = self.spots[int(action)]
        return self.add(disc(x, y, self.spot_size * 0.12, LAST_MOVE, stroke="white",
                             width=1.5, cls="last-move"))

    def svg(self) -> str:
        """The text of a standalone SVG document.

        Returns:
          The SVG text.
        """
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(self.width)}" '
                f'height="{_num(self.height)}" viewBox="0 0 {_num(self.width)} '
                f'{_num(self.height)}">' + "".join(self.elements) + "</svg>")

    def save(self, path: str | Path) -> Path:
        """Writes `svg()` to `path`; returns it.

        Args:
          path: the file to write (usually `*.svg`).

        Returns:
          `path` as a `Path`.
        """
        path = Path(path)
        path.write_text(self.svg())
        return path

    def _repr_svg_(self) -> str:
        return self.svg()


def group(elements: Sequence[str], cls: str | None = None) -> str:
    """Elements as one group element (one piece drawn with several shapes, say).

    Args:
      elements: SVG elements.
      cls: the group's class attribute, or None.

    Returns:
      The SVG `<g>` element.
    """
    return f"<g {_cls(cls)}".rstrip() + ">" + "".join(elements) + "</g>"


def piece_class(player: int) -> str:
    """The class attribute of a piece of `player`: "piece p0" or "piece p1" (the pictures
    of the shipped games and the default one mark their pieces so).

    Args:
      player: the player id, 0 or 1.

    Returns:
      The class attribute's value.
    """
    return f"piece p{int(player)}"


def status(state: Any, names: Sequence[str]) -> str:
    """Whose move it is ("X to move"), or the result of a finished game ("X won",
    "draw"), from one state's `current_player` and `rewards`; `names`: the players by id
    (None: "player 0", "player 1").

    Args:
      state: one unbatched `State` (on host or device).
      names: the players' names by id, or None.

    Returns:
      The status text.
    """
    names = tuple(names) if names else ("player 0", "player 1")
    if bool(state.terminated):
        rewards = np.asarray(state.rewards)
        return "draw" if rewards[0] == rewards[1] else f"{names[int(np.argmax(rewards))]} won"
    return f"{names[int(state.current_player)]} to move"


def place(picture: Picture, x: float, y: float) -> str:
    """`picture` as one element whose top-left corner is at (x, y) of another.

    Args:
      picture: the picture to place.
      x: where its left edge goes.
      y: where its top edge goes.

    Returns:
      The SVG `<g>` element.
    """
    return (f'<g transform="translate({_num(x)},{_num(y)})">' + "".join(picture.elements)
            + "</g>")


def tile(pictures: Sequence[Picture], columns: int = 4,
         captions: Sequence[str] | None = None, gap: float = 16.0) -> Picture:
    """Pictures in a grid of `columns`, row by row, each with its caption below. The
    result has no spots.

    Args:
      pictures: the pictures, at least one.
      columns: pictures per row.
      captions: one caption per picture, or None for none.
      gap: the space between pictures.

    Returns:
      The tiled `Picture`.

    Raises:
      ValueError: no pictures, or captions not one per picture.
    """
    if not pictures:
        raise ValueError("tile needs at least one picture")
    if captions is not None and len(captions) != len(pictures):
        raise ValueError(f"{len(captions)} captions for {len(pictures)} pictures")
    columns = max(1, min(columns, len(pictures)))
    caption_height = 18.0 if captions else 0.0
    cell_w = max(p.width for p in pictures) + gap
    cell_h = max(p.height for p in pictures) + caption_height + gap
    rows = -(-len(pictures) // columns)
    out = Picture(cell_w * columns - gap, cell_h * rows - gap)
    for i, pic in enumerate(pictures):
        x, y = (i % columns) * cell_w, (i // columns) * cell_h
        out = out.add(place(pic, x, y))
        if captions:
            out = out.add(text(x + pic.width / 2, y + pic.height + 13, captions[i], 12))
    return out


def draw(env: Any, states: Any, last_moves: Sequence[int | None] | None = None,
         columns: int = 4, captions: Sequence[str] | None = None) -> Picture:
    """The picture of one state, or of a batch of states as a grid (`tile`).

    Args:
      env: the game (`envs.Env`).
      states: a `State`, unbatched, or batched (its fields have a leading (B,) axis).
      last_moves: the move to mark in each state, B of them (None for no marks); for an
        unbatched state, its first element.
      columns: pictures per row of the grid.
      captions: B captions, or None.

    Returns:
      The `Picture`.

    Raises:
      ValueError: `last_moves` is not one per state.
    """
    states = jax.device_get(states)
    if np.ndim(states.current_player) == 0:
        last = last_moves[0] if last_moves else None
        return env.picture(states, last_move=last)
    n = len(states.current_player)
    if last_moves is not None and len(last_moves) != n:
        raise ValueError(f"{len(last_moves)} last moves for {n} states")
    pictures = [env.picture(jax.tree.map(lambda x, i=i: x[i], states),
                            last_move=None if last_moves is None else last_moves[i])
                for i in range(n)]
    return tile(pictures, columns, captions)


@dataclasses.dataclass(frozen=True)
class Grid:
    """The geometry of a board of `rows` x `cols` cells (or, with `points=True`, of
    intersections, as in Go), with room for a header line above and labels around.

    Row 0 is the top row, as in the games' observations.
    """

    rows: int
    cols: int
    cell: float = 40.0
    points: bool = False
    header: float = 24.0
    label: float = 18.0

    @property
    def left(self) -> float:
        """The x of the board's left edge (right of the row labels)."""
        return self.label + 6

    @property
    def top(self) -> float:
        """The y of the board's top edge (below the header)."""
        return self.header + 6

    @property
    def board_width(self) -> float:
        """The board's width: `cols * cell`."""
        return self.cols * self.cell

    @property
    def board_height(self) -> float:
        """The board's height: `rows * cell`."""
        return self.rows * self.cell

    def centre(self, row: int, col: int) -> tuple[float, float]:
        """The centre of cell (row, col), or the intersection (row, col).

        Args:
          row: the row, 0 at the top.
          col: the column, 0 on the left.

        Returns:
          `(x, y)` in SVG units.
        """
        return (self.left + (col + 0.5) * self.cell, self.top + (row + 0.5) * self.cell)

    def picture(self, header: str, board_fill: str = "#ffffff", extra_height: float = 0.0,
                column_labels: Sequence[str] | None = None,
                row_labels: Sequence[str] | None = None, lines: bool = True) -> Picture:
        """An empty board: the header, the board's background and lines, the labels
        (columns below, rows on the left); `extra_height` more room below for the game.
        A header wider than the board widens the picture (the board stays on the left).

        Args:
          header: the line above the board.
          board_fill: the board's background colour.
          extra_height: room below the labels, for the game's own drawing.
          column_labels: a label below each column, or None.
          row_labels: a label left of each row, or None.
          lines: whether to draw the grid lines.

        Returns:
          The `Picture`, without spots.
        """
        width = max(self.left + self.board_width + self.label,
                    self.left + HEADER_CHAR * len(header) + 8)
        height = self.top + self.board_height + self.label + 6 + extra_height
        out = Picture(width, height, spot_size=self.cell)
        out = out.add(rect(0, 0, width, height, "#ffffff"),
                      text(self.left, self.header - 7, header, 14, anchor="start"),
                      rect(self.left, self.top, self.board_width, self.board_height,
                           board_fill, stroke=INK, width=1.5))
        if lines:
            half = self.cell / 2 if self.points else 0.0
            rows = self.rows if self.points else self.rows + 1
            cols = self.cols if self.points else self.cols + 1
            x0, x1 = self.left + half, self.left + self.board_width - half
            y0, y1 = self.top + half, self.top + self.board_height - half
            out = out.add(*(line(x0, self.top + half + r * self.cell, x1,
                                 self.top + half + r * self.cell, "#555", 1)
                            for r in range(rows)),
                          *(line(self.left + half + c * self.cell, y0,
                                 self.left + half + c * self.cell, y1, "#555", 1)
                            for c in range(cols)))
        base = self.top + self.board_height + self.label - 4
        for c, s in enumerate(column_labels or ()):
            out = out.add(text(self.centre(0, c)[0], base, s, 11, "#555"))
        for r, s in enumerate(row_labels or ()):
            out = out.add(text(self.left - 8, self.centre(r, 0)[1] + 4, s, 11, "#555",
                               anchor="end"))
        return out


def default_picture(env: Any, state: Any, last_move: int | None = None) -> Picture:
    """The picture `Env.picture` draws for a game that has none of its own: a header,
    and for [H, W, C] observations a grid of H x W cells with the pieces of planes 0 (the
    player to move) and 1 (the other), dark for player 0 and light for player 1.

    Moves have spots when there is one per cell (action r * W + c) or one per column
    (the top cell of column c).

    Args:
      env: the game (`envs.Env`).
      state: one unbatched `State`.
      last_move: the action id to mark, or None.

    Returns:
      The `Picture`.
    """
    state = jax.device_get(state)
    player, ply = int(state.current_player), int(state.step_count)
    header = f"{env.name}: player {player} to move, ply {ply}"
    if bool(state.terminated):
        rewards = np.asarray(state.rewards)
        winner = ("a draw" if rewards[0] == rewards[1] else
                  f"player {int(np.argmax(rewards))} won")
        header = f"{env.name}: {winner} after {ply} plies"
    obs = np.asarray(state.observation) != 0
    if obs.ndim != 3 or obs.shape[0] * obs.shape[1] == 1:
        width = max(240.0, 8.0 * len(header) + 20)
        return Picture(width, 32.0).add(rect(0, 0, width, 32, "#ffffff"),
                                        text(10, 21, header, 14, anchor="start"))
    rows, cols = obs.shape[:2]
    grid = Grid(rows, cols, cell=min(40.0, 480.0 / max(rows, cols)))
    out = grid.picture(header, board_fill="#f3ead8",
                       column_labels=[str(c) for c in range(cols)],
                       row_labels=[str(r) for r in range(rows)])
    r = grid.cell * 0.38
    for row in range(rows):
        for col in range(cols):
            x, y = grid.centre(row, col)
            if obs[row, col, 0]:
                out = out.add(disc(x, y, r, PLAYER_COLOURS[player], cls=piece_class(player)))
            elif obs.shape[2] > 1 and obs[row, col, 1]:
                out = out.add(disc(x, y, r, PLAYER_COLOURS[1 - player],
                                   cls=piece_class(1 - player)))
    if env.num_actions == rows * cols:
        spots = {row * cols + col: grid.centre(row, col)
                 for row in range(rows) for col in range(cols)}
    elif env.num_actions == cols:
        spots = {col: grid.centre(0, col) for col in range(cols)}
    else:
        spots = {}
    return dataclasses.replace(out, spots=spots).mark_last_move(last_move)


WOOD = "#dcb35c"
STONES = ("#1a1a1a", "#f7f7f2")
"""Fill of Black's (player 0's) and White's stones on a board of intersections."""


def stone_board(header: str, board: np.ndarray, size: int, column_labels: Sequence[str],
                stars: Sequence[tuple[int, int]] = (), extra_height: float = 0.0
                ) -> tuple[Picture, Grid]:
    """A wooden board of size x size intersections (Go, Gomoku) and its geometry: the
    lines, the star points `stars` (row, col), the stones of `board` (int [size * size],
    row 0 the top line: -1 empty, 0 black, 1 white), row numbers 1..size from the bottom,
    and a spot on every point (action row * size + col).

    Args:
      header: the line above the board.
      board: (size * size,) integer: -1 empty, 0 black, 1 white.
      size: the board's side.
      column_labels: size labels, left to right.
      stars: the star points, as (row, col).
      extra_height: room below, for the game's own drawing.

    Returns:
      `(picture, grid)`: the `Picture` and its `Grid`.
    """
    grid = Grid(size, size, cell=min(40.0, 480.0 / size), points=True)
    out = grid.picture(header, board_fill=WOOD, extra_height=extra_height,
                       column_labels=column_labels,
                       row_labels=[str(size - r) for r in range(size)])
    out = out.add(*(disc(*grid.centre(r, c), max(2.0, grid.cell * 0.09), INK, stroke="none")
                    for r, c in stars))
    board = np.asarray(board).reshape(size, size)
    out = out.add(*(disc(*grid.centre(r, c), grid.cell * 0.46, STONES[board[r, c]],
                         cls=piece_class(board[r, c]))
                    for r in range(size) for c in range(size) if board[r, c] >= 0))
    spots = {r * size + c: grid.centre(r, c) for r in range(size) for c in range(size)}
    return dataclasses.replace(out, spots=spots), grid
