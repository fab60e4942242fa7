"""The games' pictures (`Env.picture`, `envs.picture`), read back from their SVG: on
states of seeded random games of every shipped game, the pieces drawn equal the pieces
on the state's board (counted from the state's own fields), every legal move has a spot
of its own inside the picture where the game's notation puts it, the last move is marked
when it is given, and a finished game's header names the winner of its rewards. Also the
helpers (`draw`, `tile`) and the default picture of a game of your own, which passes
`envs.check_env` (whose `picture` property catches a broken picture)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import envs
from envs.coin_split import action_to_split
from envs.picture import Picture, draw, tile

SVG = "{http://www.w3.org/2000/svg}"
# (game, options, random games, draw every k-th state): finished states are always drawn.
CASES = {
    "tictactoe": ("tictactoe", {}, 6, 1),
    "connect_four": ("connect_four", {}, 4, 3),
    "gomoku": ("gomoku", {"size": 7, "k": 4}, 3, 4),
    "go5": ("go", {"size": 5}, 3, 5),
    "go9": ("go", {"size": 9}, 2, 20),
    "coin_split": ("coin_split", {"coins": 12}, 4, 1),
}
# The players' names in the header, by id.
NAMES = {
    "tictactoe": ("X", "O"),
    "connect_four": ("X (red)", "O (yellow)"),
    "gomoku": ("Black (X)", "White (O)"),
    "go": ("Black", "White"),
    "coin_split": ("player 0", "player 1"),
}


def random_states(env, games: int, every: int, seed: int = 0):
    """(state, last move) of seeded random games with numpy-chosen legal moves: every
    `every`-th state and each game's final one."""
    init, step = jax.jit(env.init), jax.jit(env.step)  # eagerly: a compile per operation
    rng = np.random.default_rng(seed)
    out = []
    for g in range(games):
        state, last, ply = init(jax.random.key(g)), None, 0
        while True:
            state = jax.device_get(state)
            done = bool(state.terminated)
            if done or ply % every == 0:
                out.append((state, last))
            if done:
                break
            last = int(rng.choice(np.flatnonzero(state.legal_action_mask)))
            state, ply = step(state, last), ply + 1
    return out


def piece_counts(game: str, state) -> tuple[int, int]:
    """The number of player 0's and player 1's pieces, from the state's own fields."""
    if game == "connect_four":
        mover = int(state.current_player)
        bits = [int(v).bit_count() for v in np.asarray(state.discs).reshape(-1)]
        by_slot = (sum(bits[:7]), sum(bits[7:]))  # the player to move's, the other's
        return by_slot if mover == 0 else by_slot[::-1]
    if game == "coin_split":
        return 0, 0
    board = np.asarray(state.board)
    return int((board == 0).sum()), int((board == 1).sum())


def parse(picture: Picture) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(picture.svg())
    return root, list(root.iter())


def classed(elements, cls: str) -> list[ET.Element]:
    return [e for e in elements if e.get("class") == cls]


def centre(e: ET.Element) -> tuple[float, float]:
    return float(e.get("cx")), float(e.get("cy"))


def texts(elements) -> list[tuple[str, float, float]]:
    return [(e.text or "", float(e.get("x")), float(e.get("y")))
            for e in elements if e.tag == f"{SVG}text"]


def check_labels(env, picture: Picture, labels, action: int) -> None:
    """The column letters and row number of the move's notation are drawn in line with
    its spot: the letters below it, the number to its left."""
    x, y = picture.spots[action]
    move = env.format_move(action)
    letters, number = move.rstrip("0123456789"), move[len(move.rstrip("0123456789")):]
    assert any(s == letters and abs(tx - x) < 0.5 and ty > y for s, tx, ty in labels), move
    if number:
        assert any(s == number and abs(ty - y) < picture.spot_size / 2 and tx < x
                   for s, tx, ty in labels), move


def check_connect_four_column(picture: Picture, elements, column: int, discs: int) -> None:
    """The column's holes and discs from the bottom: `discs` discs, then the spot."""
    x, y = picture.spots[column]
    cells = sorted((e for e in elements if e.tag == f"{SVG}circle"
                    and e.get("class") != "last-move" and abs(centre(e)[0] - x) < 0.5),
                   key=lambda e: -centre(e)[1])
    assert len(cells) == 6
    assert all((e.get("class") or "").startswith("piece") == (i < discs)
               for i, e in enumerate(cells))
    assert centre(cells[min(discs, 5)])[1] == pytest.approx(y, abs=0.06)


def check_coin_spot(elements, action: int, spot: tuple[float, float]) -> None:
    """The spot of split s=a+b is in a row of s touching coins, with a coins left of it."""
    s, a = action_to_split(action)
    x, y = spot
    row = sorted(centre(e)[0] for e in classed(elements, "piece coin")
                 if abs(centre(e)[1] - y) < 0.06)
    pitch = min(np.diff(row)) if len(row) > 1 else 1.0
    pile = [row[0]]
    for cx in row[1:]:  # the run of touching coins around the spot
        if cx - pile[-1] > 1.5 * pitch:
            if pile[0] < x < pile[-1]:
                break
            pile = []
        pile.append(cx)
    assert (sum(cx < x for cx in pile), sum(cx > x for cx in pile)) == (a, s - a)


@pytest.mark.parametrize("case", sorted(CASES))
def test_pictures_of_random_games(case):
    game, options, games, every = CASES[case]
    env = envs.make(game, **options)
    names = NAMES[game]
    finished = 0
    for state, last in random_states(env, games, every):
        picture = env.picture(state, last_move=last)
        root, elements = parse(picture)
        assert float(root.get("width")) == pytest.approx(picture.width, abs=0.06)
        # Pieces: the board's, with the player's class (coins: every coin, no player).
        p0, p1 = (len(classed(elements, f"piece p{i}")) for i in (0, 1))
        assert (p0, p1) == piece_counts(game, state)
        if game == "coin_split":
            coins = int(np.asarray(state.counts) @ np.arange(len(state.counts)))
            assert len(classed(elements, "piece coin")) == coins
        # Spots: every legal move, inside the picture, all distinct.
        legal = np.flatnonzero(state.legal_action_mask)
        assert set(legal.tolist()) <= set(picture.spots)
        points = list(picture.spots.values())
        assert len(set(points)) == len(points)
        assert all(0 <= x <= picture.width and 0 <= y <= picture.height for x, y in points)
        labels = texts(elements)
        if game in ("tictactoe", "gomoku", "go"):
            assert len(picture.spots) == env.num_actions  # every point (Go: and pass)
            for action in range(min(env.num_actions, state.board.shape[0])):
                check_labels(env, picture, labels, action)
        if game == "go":
            pass_button = classed(elements, "button")
            assert len(pass_button) == 1 and any(s == "pass" for s, _, _ in labels)
            bx, by = float(pass_button[0].get("x")), float(pass_button[0].get("y"))
            px, py = picture.spots[env.num_actions - 1]
            assert bx < px and by < py and py > max(y for x, y in points if (x, y) != (px, py))
        if game == "connect_four":
            heights = [(int(a) | int(b)).bit_count() for a, b in np.asarray(state.discs).T]
            for column in range(7):
                check_connect_four_column(picture, elements, column, heights[column])
                assert any(s == str(column + 1) and abs(x - picture.spots[column][0]) < 0.5
                           for s, x, _ in labels)
        if game == "coin_split":
            for action in legal:
                check_coin_spot(elements, int(action), picture.spots[action])
        # The last move: marked on its spot (Connect Four: on its disc), never a piece.
        marks = classed(elements, "last-move")
        if game == "coin_split":  # its pile is split: named in the header instead
            assert not marks
            named = "last move" if last is None else f"last move {env.format_move(last)}"
            assert (named in labels[0][0]) == (last is not None)
        else:
            assert len(marks) == (last is not None and last in picture.spots)
        if marks and game == "connect_four":
            tops = [centre(e) for e in elements if (e.get("class") or "").startswith("piece")
                    and abs(centre(e)[0] - picture.spots[last][0]) < 0.5]
            assert centre(marks[0]) == min(tops, key=lambda p: p[1])
        elif marks:
            assert centre(marks[0]) == pytest.approx(picture.spots[last], abs=0.06)
        # The header: whose move it is, or who won by the rewards.
        header = labels[0][0]
        if bool(state.terminated):
            finished += 1
            r = np.asarray(state.rewards)
            expected = "draw" if r[0] == r[1] else f"{names[int(np.argmax(r))]} won"
            assert header.startswith(expected), header
            if game == "go":
                assert any(s.startswith("Area: Black") for s, _, _ in labels)
        else:
            assert header.startswith(f"{names[int(state.current_player)]} to move"), header
    assert finished == games


def test_a_click_on_a_coin_gap_splits_that_pile_there():
    """Piles 6, 6 and 4: one spot (and one tick) per legal split, on the first pile of
    its size, with the split's smaller part left of it."""
    env = envs.make("coin_split", coins=16)
    state = jax.jit(env.init)(jax.random.key(0))
    step = jax.jit(env.step)  # eagerly, each of its operations would compile alone
    for move in ("16=6+10", "10=4+6"):
        state = step(state, env.parse_move(move))
    picture = env.picture(jax.device_get(state))
    _, elements = parse(picture)
    assert sorted(env.format_move(a) for a in picture.spots) == ["4=1+3", "6=1+5", "6=2+4"]
    first_six = min(x for x, y in picture.spots.values())
    assert all(x < first_six + 3 * picture.spot_size for x, y in picture.spots.values()
               if y == picture.spots[env.parse_move("6=1+5")][1])
    for action, spot in picture.spots.items():
        check_coin_spot(elements, action, spot)
    ticks = [e for e in elements if e.tag == f"{SVG}line"]
    assert len(ticks) == len(picture.spots)


def test_draw_tiles_a_batch_and_tile_checks_its_captions():
    env = envs.make("tictactoe")
    states = jax.jit(lambda keys, moves: jax.vmap(env.step)(jax.vmap(env.init)(keys), moves))(
        jax.random.split(jax.random.key(0), 3), jnp.array([0, 4, 8]))
    picture = draw(env, states, last_moves=[0, 4, 8], columns=2, captions=["a", "b", "c"])
    root = ET.fromstring(picture.svg())
    groups = [child for child in root if child.tag == f"{SVG}g"]
    assert len(groups) == 3 and not picture.spots
    for group in groups:  # each state: its one X and its last move
        inside = list(group.iter())
        assert len(classed(inside, "piece p0")) == 1 and len(classed(inside, "last-move")) == 1
    assert [t.text for t in root if t.tag == f"{SVG}text"] == ["a", "b", "c"]
    one = draw(env, jax.tree.map(lambda x: x[0], states))
    assert one.spots and isinstance(one, Picture)
    with pytest.raises(ValueError, match="2 captions for 3 pictures"):
        tile([one, one, one], captions=["a", "b"])
    with pytest.raises(ValueError, match="at least one"):
        tile([])
    with pytest.raises(ValueError, match="last moves"):
        draw(env, states, last_moves=[0])


# A game of your own with no picture of its own: players fill a 2 x 3 board, a full
# board draws.
ROWS, COLS = 2, 3


@struct.dataclass
class FillState(envs.State):
    board: chex.Array = None


class Fill(envs.Env):
    name = "fill"
    num_actions = ROWS * COLS
    observation_shape = (ROWS, COLS, 2)
    max_plies = ROWS * COLS

    def _state(self, board, player, count):
        observation = jnp.stack([board == player, board == 1 - player], -1)
        return FillState(current_player=player,
                         observation=observation.reshape(self.observation_shape),
                         legal_action_mask=(board < 0) & (count < self.max_plies),
                         rewards=jnp.zeros(2, jnp.float32), terminated=count == self.max_plies,
                         step_count=count, board=board)

    def _init(self, key):
        del key
        return self._state(jnp.full(self.num_actions, -1, jnp.int32), jnp.int32(0), jnp.int32(0))

    def _step(self, state, action):
        board = jnp.where(jnp.arange(self.num_actions) == action, state.current_player,
                          state.board)
        return self._state(board, 1 - state.current_player, state.step_count + 1)


class BadSpots(Fill):
    def picture(self, state, last_move=None):
        return Picture(50, 50, spots={0: (60.0, 10.0)})


def test_a_game_of_your_own_gets_the_default_picture_and_passes_the_checker():
    env = Fill()
    report = envs.check_env(env, num_games=4)
    assert "picture" in report.properties
    for state, last in random_states(env, 1, 1):
        picture = env.picture(state, last_move=last)
        _, elements = parse(picture)
        assert sorted(picture.spots) == list(range(ROWS * COLS))
        assert len(set(picture.spots.values())) == ROWS * COLS
        assert (len(classed(elements, "piece p0")), len(classed(elements, "piece p1"))) == (
            piece_counts("fill", state))
        assert len(classed(elements, "last-move")) == (last is not None)
    assert env.render_svg(state).startswith("<svg")
    with pytest.raises(envs.EnvCheckError) as info:
        envs.check_env(BadSpots(), num_games=4)
    assert info.value.property == "picture"
    first = str(info.value).splitlines()[0]
    assert first.startswith("picture: fill: ") and "outside the picture" in first
