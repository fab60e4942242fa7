"""Connect Four rules of `envs.connect_four` against an independent plain-Python reference,
plus its left-right mirror symmetry and the move-string loaders.

The protocol every game keeps (types, rewards only at the end, frozen finished games,
forfeits, symmetries commuting with step...) is checked by `envs.check_env` in
tests/test_check_env.py."""

from __future__ import annotations

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from random_play import play_random_games, take

import envs
from envs.connect_four import (
    ConnectFour,
    board_array,
    boards_from_moves,
    format_move,
    parse_move,
    state_from_moves,
)

ROWS, COLS = 6, 7
DATA = pathlib.Path(__file__).resolve().parents[1] / "envs" / "data" / "connect4"

# --------------------------------------------------------------------------------------
# Plain-Python reference (grid of lists, row 0 = top, independent of envs/).
# --------------------------------------------------------------------------------------


class RefGame:
    """One game; `grid[r][c]` with r = 0 the top row: -1 empty, else the player id."""

    def __init__(self):
        self.grid = [[-1] * COLS for _ in range(ROWS)]
        self.player = 0
        self.step_count = 0
        self.rewards = [0.0, 0.0]
        self.terminated = False
        self.forfeited = False
        self.winner = None

    def drop_row(self, col):
        """The row a disc dropped in `col` lands on, or None if the column is full."""
        for r in range(ROWS - 1, -1, -1):
            if self.grid[r][col] == -1:
                return r
        return None

    def legal_moves(self):
        if self.terminated:
            return []
        return [c for c in range(COLS) if self.grid[0][c] == -1]

    def makes_four(self, r, c):
        p = self.grid[r][c]
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < ROWS and 0 <= cc < COLS and self.grid[rr][cc] == p:
                    run += 1
                    rr, cc = rr + sign * dr, cc + sign * dc
            if run >= 4:
                return True
        return False

    def step(self, action):
        self.rewards = [0.0, 0.0]
        if self.terminated:
            return
        mover = self.player
        if not (0 <= action < COLS) or self.grid[0][action] != -1:
            self.terminated = self.forfeited = True
            self.rewards[mover], self.rewards[1 - mover] = -1.0, 1.0
            return
        r = self.drop_row(action)
        self.grid[r][action] = mover
        self.step_count += 1
        self.player = 1 - mover
        if self.makes_four(r, action):
            self.terminated = True
            self.winner = mover
            self.rewards[mover], self.rewards[1 - mover] = 1.0, -1.0
        elif self.step_count == ROWS * COLS:
            self.terminated = True

    def snapshot(self):
        board = np.array(self.grid, np.int8)
        obs = np.stack(
            [
                board == self.player,
                board == 1 - self.player,
                np.full(board.shape, self.player == 0),
            ],
            axis=-1,
        )
        mask = np.zeros(COLS, bool)
        mask[self.legal_moves()] = True
        return {
            "board": board,
            "current_player": self.player,
            "legal_action_mask": mask,
            "terminated": self.terminated,
            "rewards": np.array(self.rewards, np.float32),
            "step_count": self.step_count,
            "observation": obs,
        }


def ref_play(moves):
    game = RefGame()
    for ch in moves:
        game.step(int(ch) - 1)
    return game


def host_fields(state):
    """The compared fields of a (host, batched or not) state, with the board decoded."""
    out = {
        f: np.asarray(getattr(state, f))
        for f in (
            "current_player",
            "legal_action_mask",
            "terminated",
            "rewards",
            "step_count",
            "observation",
        )
    }
    out["board"] = board_array(state)
    return out


def assert_matches(got, want, where=""):
    for field, value in want.items():
        g = got[field]
        if not np.array_equal(g, value):
            bad = np.flatnonzero(np.any((g != value).reshape(g.shape[0], -1), axis=1))
            raise AssertionError(
                f"{where}: field {field!r} differs for games {bad[:10].tolist()}: "
                f"got {g[bad[0]].tolist()} want {value[bad[0]].tolist()}"
            )


# --------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------

NUM_LEGAL_GAMES = 2048
NUM_NOISY_GAMES = 512
NUM_GAMES = NUM_LEGAL_GAMES + NUM_NOISY_GAMES
NUM_PLIES = 45  # 42 fill the board; the extra plies step finished games.


@pytest.fixture(scope="module")
def env():
    return envs.make("connect_four")


@pytest.fixture(scope="module")
def single_step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def random_play(env):
    """Random games (see `random_play.play_random_games`): the states [NUM_PLIES + 1,
    NUM_GAMES] (host) and the actions [NUM_PLIES, NUM_GAMES]."""
    return play_random_games(env, NUM_LEGAL_GAMES, NUM_NOISY_GAMES, NUM_PLIES, 42, noise=0.05)


@pytest.fixture(scope="module")
def replayed(random_play):
    """The same action sequences replayed in the reference, compared at every ply."""
    states, actions = random_play
    games = [RefGame() for _ in range(NUM_GAMES)]
    boards = board_array(states)
    for ply in range(NUM_PLIES + 1):
        if ply > 0:
            for i, game in enumerate(games):
                game.step(int(actions[ply - 1, i]))
        snaps = [g.snapshot() for g in games]
        want = {k: np.stack([np.asarray(s[k]) for s in snaps]) for k in snaps[0]}
        got = host_fields(take(states, ply))
        got["board"] = boards[ply]
        assert_matches(got, want, f"ply {ply}")
    return games


# --------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------


def test_random_games_match_reference(random_play, replayed):
    states, _ = random_play
    games = replayed
    legal = games[:NUM_LEGAL_GAMES]
    assert np.all(states.terminated[-1])
    wins0 = sum(g.winner == 0 for g in legal)
    wins1 = sum(g.winner == 1 for g in legal)
    assert wins0 > 500 and wins1 > 500, (wins0, wins1)
    assert sum(g.forfeited for g in games[NUM_LEGAL_GAMES:]) > 100
    # Long games (many full columns) were exercised as well.
    assert np.sum(states.step_count[-1] >= 30) > 50
    # The game's own field keeps its type (the protocol's are checked by check_env).
    assert states.discs.dtype == np.int32 and states.discs.shape[2:] == (2, COLS)


def _play(single_step, env, moves):
    state = env.init(jax.random.key(0))
    for ch in moves:
        state = single_step(state, int(ch) - 1)
    return state


@pytest.mark.parametrize(
    "moves, winner",
    [
        ("1122334", 0),  # horizontal, bottom row, left edge
        ("7766554", 0),  # horizontal, right edge
        ("1212121", 0),  # vertical
        ("31212121", 1),  # vertical, second player
        ("12234334544", 0),  # rising diagonal
        ("76654554344", 0),  # falling diagonal
        ("712234334544", 1),  # rising diagonal, second player
        ("1122445", None),  # X has 1, 2, _, 4, 5 on the bottom row: no win yet
        ("112244553", 0),  # X fills the gap: five in a row wins
    ],
)
def test_handpicked_lines(env, single_step, moves, winner):
    ref = ref_play(moves)
    assert ref.winner == winner and ref.step_count == len(moves)
    state = _play(single_step, env, moves)
    assert bool(state.terminated) == (winner is not None)
    np.testing.assert_array_equal(np.asarray(state.rewards), np.array(ref.rewards, np.float32))
    np.testing.assert_array_equal(board_array(state), np.array(ref.grid, np.int8))
    if winner is not None:
        want = [1.0, -1.0] if winner == 0 else [-1.0, 1.0]
        np.testing.assert_array_equal(np.asarray(state.rewards), want)
        assert not np.any(np.asarray(state.legal_action_mask))
        assert not bool(_play(single_step, env, moves[:-1]).terminated)


DRAW_MOVES = "757341132773575647262416323134652254654611"


def test_full_board_draw(env, single_step):
    ref = ref_play(DRAW_MOVES)
    assert ref.step_count == 42 and ref.winner is None and ref.terminated
    state = _play(single_step, env, DRAW_MOVES[:-1])
    assert not bool(state.terminated)
    assert np.asarray(state.legal_action_mask).tolist() == [c == 0 for c in range(7)]
    state = single_step(state, int(DRAW_MOVES[-1]) - 1)
    assert bool(state.terminated)
    assert int(state.step_count) == 42
    np.testing.assert_array_equal(np.asarray(state.rewards), [0.0, 0.0])
    assert not np.any(np.asarray(state.legal_action_mask))
    assert np.all(board_array(state) != -1)
    loaded = state_from_moves(DRAW_MOVES)
    assert bool(loaded.terminated) and np.all(np.asarray(loaded.rewards) == 0.0)


def test_full_column_is_illegal_and_forfeits(env, single_step):
    state = _play(single_step, env, "444444")
    mask = np.asarray(state.legal_action_mask)
    assert mask.tolist() == [True, True, True, False, True, True, True]
    assert not bool(state.terminated) and int(state.current_player) == 0
    after = single_step(state, 3)
    assert bool(after.terminated)
    np.testing.assert_array_equal(np.asarray(after.rewards), [-1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(after.discs), np.asarray(state.discs))


def test_observation_orientation(env, single_step):
    state = _play(single_step, env, "4453")
    obs = np.asarray(state.observation)
    # Player 0 (X) is to move; X has d1 and e1 (bottom row = observation row 5).
    assert int(state.current_player) == 0
    assert np.argwhere(obs[..., 0]).tolist() == [[5, 3], [5, 4]]
    assert np.argwhere(obs[..., 1]).tolist() == [[4, 3], [5, 2]]
    assert obs[..., 2].all()
    state = single_step(state, 0)
    obs = np.asarray(state.observation)
    assert np.argwhere(obs[..., 0]).tolist() == [[4, 3], [5, 2]]
    assert not obs[..., 2].any()


# --------------------------------------------------------------------------------------
# Move strings, benchmark files, human input
# --------------------------------------------------------------------------------------


def _benchmark_lines(limit_per_file=None):
    lines = []
    for path in sorted(DATA.glob("Test_L*")):
        rows = path.read_text().split("\n")
        rows = [r.split()[0] for r in rows if r.strip()]
        lines.extend(rows[:limit_per_file])
    return lines


def test_boards_from_moves_on_benchmark_files():
    lines = _benchmark_lines(limit_per_file=400)
    assert len(lines) == 2400
    states = jax.device_get(boards_from_moves(lines))
    lengths = np.array([len(m) for m in lines])
    np.testing.assert_array_equal(states.step_count, lengths)
    np.testing.assert_array_equal(states.current_player, lengths % 2)
    assert not states.terminated.any() and np.all(states.rewards == 0.0)
    counts = np.array([[m.count(str(c + 1)) for c in range(COLS)] for m in lines])
    np.testing.assert_array_equal(states.legal_action_mask, counts < ROWS)
    boards = board_array(states)
    np.testing.assert_array_equal((boards != -1).sum(axis=1), counts)
    np.testing.assert_array_equal((boards == 0).sum(axis=(1, 2)), (lengths + 1) // 2)
    # Every field agrees with the reference on a sample.
    for i in range(0, len(lines), 7):
        want = ref_play(lines[i]).snapshot()
        got = host_fields(take(states, i))
        for field, value in want.items():
            np.testing.assert_array_equal(got[field], value, err_msg=f"{lines[i]} {field}")


def test_dev_set_loads():
    import json

    rows = [json.loads(r) for r in (DATA / "dev_set.jsonl").read_text().splitlines() if r]
    states = jax.device_get(boards_from_moves([r["moves"] for r in rows]))
    for i, row in enumerate(rows):
        legal = [s is not None for s in row["scores"]]
        assert states.legal_action_mask[i].tolist() == legal, row["moves"]


def test_state_from_moves_matches_stepping(env, single_step, random_play):
    states, actions = random_play
    moves, want = [], []
    for game in range(200):
        for ply in (3, 11, 20):
            if states.terminated[ply, game]:
                break
            moves.append("".join(str(a + 1) for a in actions[:ply, game]))
            want.append(take(states, ply, game))
    want = jax.tree.map(lambda *xs: np.stack(xs), *want)
    got = jax.device_get(boards_from_moves(moves))
    for field in (
        "discs",
        "current_player",
        "legal_action_mask",
        "terminated",
        "rewards",
        "step_count",
        "observation",
    ):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    single = state_from_moves(moves[5])
    np.testing.assert_array_equal(np.asarray(single.discs), want.discs[5])
    empty = state_from_moves("")
    np.testing.assert_array_equal(np.asarray(empty.discs), np.asarray(env.init(None).discs))
    # A string that ends with the winning move gives the terminal state.
    won = state_from_moves("1212121")
    assert bool(won.terminated)
    np.testing.assert_array_equal(np.asarray(won.rewards), [1.0, -1.0])


@pytest.mark.parametrize(
    "moves, message",
    [("12a4", "digits"), ("1280", "digits"), ("4444444", "full"), ("12121213", "over")],
)
def test_bad_move_strings(moves, message):
    with pytest.raises(ValueError, match=message):
        boards_from_moves(["44", moves])
    with pytest.raises(ValueError):
        state_from_moves(moves)


def test_parse_and_format_moves():
    assert [parse_move(str(c)) for c in range(1, 8)] == list(range(7))
    assert parse_move(" 4\n") == 3
    for bad in ("0", "8", "", "x", "44", "-1", "4.0"):
        with pytest.raises(ValueError, match="column"):
            parse_move(bad)
    assert [format_move(a) for a in range(7)] == list("1234567")
    with pytest.raises(ValueError):
        format_move(7)
    env = envs.make("connect_four")
    assert env.parse_move("7") == 6 and env.format_move(0) == "1"


def test_render(env):
    text = env.render(state_from_moves("4453"))
    assert text.splitlines() == [
        ". . . . . . .",
        ". . . . . . .",
        ". . . . . . .",
        ". . . . . . .",
        ". . . O . . .",
        ". . O X X . .",
        "1 2 3 4 5 6 7",
    ]


def test_make():
    env = envs.make("connect_four")
    assert isinstance(env, ConnectFour)
    assert env.num_actions == 7 and env.observation_shape == (6, 7, 3) and env.max_plies == 42
    with pytest.raises(ValueError):
        envs.make("connect_four", size=8)


# --------------------------------------------------------------------------------------
# Symmetries
# --------------------------------------------------------------------------------------


def test_symmetry_group(env):
    """The identity and the left-right mirror (the group laws: check_env)."""
    sym = env.symmetries
    assert sym.size == 2
    cell = np.asarray(sym.cell_perm)
    np.testing.assert_array_equal(cell[0], np.arange(42))
    np.testing.assert_array_equal(cell[1], np.arange(42).reshape(6, 7)[:, ::-1].reshape(-1))
    np.testing.assert_array_equal(
        np.asarray(sym.action_perm), [list(range(7)), list(range(6, -1, -1))]
    )
    rng = np.random.default_rng(0)
    obs = rng.random((6, 7, 3)) < 0.5
    pi = rng.random(7).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(sym.observation(jnp.asarray(obs), 1)), obs[:, ::-1])
    for a in range(7):
        b = int(sym.action(a, 1))
        assert b == 6 - a and np.asarray(sym.policy(jnp.asarray(pi), 1))[b] == pi[a]


def test_transform_state_mirrors_the_board(env, random_play):
    """transform_state is a true mirror, consistent in every field (that step commutes with
    it is checked by check_env)."""
    states, _ = random_play
    rng = np.random.default_rng(1)
    ply = rng.integers(0, 40, 500)
    game = rng.integers(0, NUM_LEGAL_GAMES, 500)
    batch = take(states, ply, game)
    n = len(ply)
    g = np.repeat(np.arange(2, dtype=np.int32), n)
    batch = jax.tree.map(lambda x: np.concatenate([x, x]), batch)
    moved = jax.device_get(jax.jit(jax.vmap(env.transform_state))(batch, g))
    np.testing.assert_array_equal(board_array(moved)[n:], board_array(batch)[n:, :, ::-1])
    np.testing.assert_array_equal(board_array(moved)[:n], board_array(batch)[:n])
    np.testing.assert_array_equal(moved.legal_action_mask[n:], batch.legal_action_mask[n:, ::-1])
    np.testing.assert_array_equal(moved.observation[n:], batch.observation[n:, :, ::-1])
    assert (board_array(batch) != board_array(batch)[:, :, ::-1]).any()  # not all symmetric
