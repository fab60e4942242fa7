"""Gomoku rules of `envs.gomoku` against an independent plain-Python reference, on several
board sizes and line lengths, plus its D4 symmetries and the human move notation.

The protocol every game keeps (types, rewards only at the end, frozen finished games,
forfeits, symmetries commuting with step...) is checked by `envs.check_env` in
tests/test_check_env.py."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from random_play import play_random_games, take

import envs
from envs.gomoku import Gomoku, format_move, parse_move

# --------------------------------------------------------------------------------------
# Plain-Python reference (independent of envs/).
# --------------------------------------------------------------------------------------


class RefGomoku:
    """One freestyle game: `grid[r][c]`, r = 0 the top row; -1 empty, else the player id."""

    def __init__(self, size, k):
        self.size, self.k = size, k
        self.grid = [[-1] * size for _ in range(size)]
        self.player = 0
        self.step_count = 0
        self.rewards = [0.0, 0.0]
        self.terminated = False
        self.forfeited = False
        self.winner = None

    def longest_through(self, r, c):
        """Longest run of the stone at (r, c) through it, over the four directions."""
        p = self.grid[r][c]
        best = 0
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            run = 1
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < self.size and 0 <= cc < self.size and self.grid[rr][cc] == p:
                    run += 1
                    rr, cc = rr + sign * dr, cc + sign * dc
            best = max(best, run)
        return best

    def step(self, action):
        self.rewards = [0.0, 0.0]
        if self.terminated:
            return
        mover = self.player
        n = self.size * self.size
        if not (0 <= action < n) or self.grid[action // self.size][action % self.size] != -1:
            self.terminated = self.forfeited = True
            self.rewards[mover], self.rewards[1 - mover] = -1.0, 1.0
            return
        r, c = divmod(action, self.size)
        self.grid[r][c] = mover
        self.step_count += 1
        self.player = 1 - mover
        if self.longest_through(r, c) >= self.k:
            self.terminated = True
            self.winner = mover
            self.rewards[mover], self.rewards[1 - mover] = 1.0, -1.0
        elif self.step_count == n:
            self.terminated = True

    def legal_mask(self):
        flat = np.array(self.grid, np.int8).reshape(-1)
        return (flat == -1) & (not self.terminated)


def has_line(grid, player, k):
    """Full-board scan: does `player` own k consecutive cells in some direction?"""
    size = len(grid)
    for r, c in itertools.product(range(size), range(size)):
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            cells = [(r + i * dr, c + i * dc) for i in range(k)]
            if all(
                0 <= rr < size and 0 <= cc < size and grid[rr][cc] == player for rr, cc in cells
            ):
                return True
    return False


def expected_fields(games):
    """Stacked fields of reference games, with the observation built from the board."""
    board = np.array([np.array(g.grid, np.int8).reshape(-1) for g in games])
    player = np.array([g.player for g in games], np.int32)
    size = games[0].size
    p = player[:, None]
    obs = np.stack([board == p, board == 1 - p, np.broadcast_to(p == 0, board.shape)], axis=-1)
    return {
        "board": board,
        "current_player": player,
        "legal_action_mask": np.array([g.legal_mask() for g in games]),
        "terminated": np.array([g.terminated for g in games]),
        "rewards": np.array([g.rewards for g in games], np.float32),
        "step_count": np.array([g.step_count for g in games], np.int32),
        "observation": obs.reshape(len(games), size, size, 3),
    }


def assert_matches(state, want, where=""):
    for field, value in want.items():
        got = np.asarray(getattr(state, field))
        if not np.array_equal(got, value):
            bad = np.flatnonzero(np.any((got != value).reshape(got.shape[0], -1), axis=1))
            raise AssertionError(
                f"{where}: field {field!r} differs for games {bad[:10].tolist()}: "
                f"got {got[bad[0]].tolist()} want {value[bad[0]].tolist()}"
            )


# --------------------------------------------------------------------------------------
# Random games, one jitted scan per configuration
# --------------------------------------------------------------------------------------

# (size, k, legal games, noisy games, plies). Plies cover the whole game for the small
# boards; on 15x15 most random games end well before 150 plies.
CONFIGS = [(7, 4, 1024, 256, 52), (9, 5, 512, 128, 84), (15, 5, 256, 64, 150)]


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"size{c[0]}-k{c[1]}")
def played(request):
    size, k, num_legal, num_noisy, plies = request.param
    env = envs.make("gomoku", size=size, k=k)
    states, actions = play_random_games(
        env, num_legal, num_noisy, plies, seed=size * 10 + k, noise=0.02
    )
    games = [RefGomoku(size, k) for _ in range(num_legal + num_noisy)]
    assert_matches(take(states, 0), expected_fields(games), "init")
    for ply in range(plies):
        for i, game in enumerate(games):
            game.step(int(actions[ply, i]))
        assert_matches(take(states, ply + 1), expected_fields(games), f"ply {ply}")
    return env, states, actions, games, num_legal


def test_random_games_match_reference(played):
    env, states, actions, games, num_legal = played
    legal = games[:num_legal]
    wins = [sum(g.winner == p for g in legal) for p in (0, 1)]
    assert min(wins) > num_legal // 5, wins
    assert sum(g.forfeited for g in games[num_legal:]) > 10
    # The winner really has k in a row (full-board scan), the loser does not, and the
    # position before the winning move (the game's last) had no line.
    won = [(i, g) for i, g in enumerate(legal[:100]) if g.winner is not None]
    assert len(won) > 20
    for i, g in won:
        assert has_line(g.grid, g.winner, g.k)
        assert not has_line(g.grid, 1 - g.winner, g.k)
        last = int(actions[g.step_count - 1, i])
        before = [row[:] for row in g.grid]
        assert before[last // g.size][last % g.size] == g.winner
        before[last // g.size][last % g.size] = -1
        assert not has_line(before, g.winner, g.k)
    # The sizes follow the board, and the game's own field keeps its type.
    size = env.size
    assert env.num_actions == size * size and env.observation_shape == (size, size, 3)
    assert states.board.shape[2:] == (size * size,) and states.board.dtype == np.int8


def test_transform_state_rotates_the_grid(played):
    """transform_state is a true rotation/reflection, consistent in every field (that step
    commutes with it is checked by check_env)."""
    env, states, actions, _games, num_legal = played
    sym = env.symmetries
    rng = np.random.default_rng(3)
    ply = rng.integers(0, actions.shape[0], 200)
    game = rng.integers(0, num_legal, 200)
    live = ~states.terminated[ply, game]
    batch = take(states, ply[live], game[live])
    n = int(live.sum())
    g = np.repeat(np.arange(8, dtype=np.int32), n)
    batch = jax.tree.map(lambda x: np.concatenate([x] * 8), batch)
    moved = jax.device_get(jax.jit(jax.vmap(env.transform_state))(batch, g))
    size = env.size
    grids = batch.board.reshape(-1, size, size)
    images = moved.board.reshape(-1, size, size)
    maps = []
    for r in range(4):
        maps.append(lambda a, r=r: np.rot90(a, r))
        maps.append(lambda a, r=r: np.fliplr(np.rot90(a, r)))
    for i in range(0, len(grids), 13):
        assert any(np.array_equal(images[i], m(grids[i])) for m in maps), i
        mo = moved.observation[i]
        np.testing.assert_array_equal(mo[..., 0], images[i] == batch.current_player[i])
        np.testing.assert_array_equal(
            moved.legal_action_mask[i], (moved.board[i] == -1) & ~batch.terminated[i]
        )
    np.testing.assert_array_equal(moved.board[g == 0], batch.board[g == 0])
    assert sym.size == 8 and n > 50


def test_symmetry_group():
    """The 8 symmetries of the square, with actions following cells (the group laws:
    check_env)."""
    sym = envs.make("gomoku", size=9, k=5).symmetries
    cell, act = (np.asarray(x) for x in (sym.cell_perm, sym.action_perm))
    assert cell.shape == (8, 81) and len({tuple(p) for p in cell}) == 8
    np.testing.assert_array_equal(act, cell)
    grid = np.arange(81).reshape(9, 9)
    images = {tuple(np.rot90(m, r).reshape(-1)) for r in range(4) for m in (grid, grid.T)}
    assert {tuple(p) for p in cell} == images


# --------------------------------------------------------------------------------------
# Hand-picked lines, edges, corners, overlines, wrap-around, draws
# --------------------------------------------------------------------------------------


def _line(size, r, c, dr, dc, length):
    return [(r + i * dr) * size + (c + i * dc) for i in range(length)]


def _line_cases():
    """(size, k, black stones, white stones, black wins?) games: Black plays the listed
    stones in order (the last one completes the shape), White plays its list between."""
    cases = []
    for size, k in ((7, 4), (15, 5), (9, 5), (5, 3)):
        far = size - 1
        starts = {
            "horizontal": [((0, 0), (0, 1)), ((far, far - k + 1), (0, 1)), ((3, 1), (0, 1))],
            "vertical": [((0, 0), (1, 0)), ((far - k + 1, far), (1, 0)), ((1, 2), (1, 0))],
            "diagonal": [
                ((0, 0), (1, 1)),
                ((far - k + 1, far - k + 1), (1, 1)),
                ((0, far - k + 1), (1, 1)),
            ],
            "antidiagonal": [
                ((0, far), (1, -1)),
                ((far - k + 1, k - 1), (1, -1)),
                ((0, k - 1), (1, -1)),
            ],
        }
        for name, lines in starts.items():
            for (r, c), (dr, dc) in lines:
                cells = _line(size, r, c, dr, dc, k)
                for last in (0, k - 1, k // 2):  # complete the line at an end or the middle
                    order = [x for i, x in enumerate(cells) if i != last] + [cells[last]]
                    cases.append((size, k, order, name, True))
                cases.append((size, k, cells[:-1], name + " k-1", False))
    return cases


def _white_moves(size, black, count, avoid_lines_with=None):
    """Harmless White stones: far from Black's stones, never k in a row themselves."""
    taken = set(black)
    white = []
    for cell in range(size * size - 1, -1, -1):
        if len(white) == count:
            break
        if cell in taken:
            continue
        trial = white + [cell]
        grid = [[-1] * size for _ in range(size)]
        for x in trial:
            grid[x // size][x % size] = 1
        if avoid_lines_with is not None and has_line(grid, 1, avoid_lines_with):
            continue
        white.append(cell)
    assert len(white) == count
    return white


def _interleave(black, white):
    moves = []
    for i, b in enumerate(black):
        moves.append(b)
        if i < len(white):
            moves.append(white[i])
    return moves


def _run_games(games):
    """Plays several (size, k, moves) games; returns the final and previous states and refs."""
    out = []
    by_cfg = {}
    for idx, (size, k, moves) in enumerate(games):
        by_cfg.setdefault((size, k), []).append((idx, moves))
    for (size, k), items in by_cfg.items():
        env = envs.make("gomoku", size=size, k=k)
        length = max(len(m) for _, m in items)
        acts = np.full((len(items), length), -1, np.int32)
        counts = np.array([len(m) for _, m in items])
        for j, (_, m) in enumerate(items):
            acts[j, : len(m)] = m

        def run(actions, count, env=env):
            def body(state, x):
                ply, a = x
                nxt = env.step(state, a)
                return jax.tree.map(lambda n, o: jnp.where(ply < count, n, o), nxt, state), state

            state = env.init(jax.random.key(0))
            final, trace = jax.lax.scan(body, state, (jnp.arange(actions.shape[0]), actions))
            prev = jax.tree.map(lambda t: t[count - 1], trace)
            return final, prev

        final, prev = jax.device_get(jax.jit(jax.vmap(run))(acts, counts))
        for j, (idx, m) in enumerate(items):
            ref = RefGomoku(size, k)
            for a in m:
                ref.step(a)
            out.append((idx, take(final, j), take(prev, j), ref))
    return [x[1:] for x in sorted(out, key=lambda x: x[0])]


def test_lines_in_every_direction_edges_and_corners():
    cases = _line_cases()
    games = []
    for size, k, black, _, _ in cases:
        white = _white_moves(size, black, len(black) - 1, avoid_lines_with=k)
        games.append((size, k, _interleave(black, white)))
    results = _run_games(games)
    for (size, k, black, name, wins), (final, prev, ref) in zip(cases, results):
        where = f"size {size} k {k} {name} {black}"
        assert ref.winner == (0 if wins else None), where
        assert bool(final.terminated) == wins, where
        assert not bool(prev.terminated), where
        np.testing.assert_array_equal(final.rewards, ref.rewards, err_msg=where)
        np.testing.assert_array_equal(
            final.board, np.array(ref.grid, np.int8).reshape(-1), err_msg=where
        )


def test_overlines_and_broken_lines():
    """Joining two segments into k or more wins (freestyle); a line broken by an opponent
    stone, or one that only continues on the next row (index-adjacent), does not."""
    games, expect = [], []
    for size, k in ((7, 4), (15, 5), (9, 5)):
        row = 3
        for left in range(1, k):
            for right in range(1, k):  # segments of `left` and `right` stones, gap between
                if left + right + 1 < k:
                    continue
                cells = [row * size + c for c in range(left)]
                cells += [row * size + left + 1 + c for c in range(right)]
                if left + 1 + right > size:
                    continue
                black = cells + [row * size + left]
                white = _white_moves(size, black, len(black) - 1, avoid_lines_with=k)
                # Only the last stone may complete a line.
                if max(left, right) >= k:
                    continue
                games.append((size, k, _interleave(black, white)))
                expect.append(True)
        # Broken by White: k-1 Black stones, White in the gap, then the k-th on the far side.
        cells = [row * size + c for c in range(k - 1)]
        black = cells + [row * size + k]
        white = [row * size + k - 1] + _white_moves(
            size, black + [row * size + k - 1], k - 1, avoid_lines_with=k
        )
        games.append((size, k, _interleave(black, white[: len(black) - 1])))
        expect.append(False)
        # Wrap-around: the end of one row plus the start of the next is no line.
        for dr, dc in ((0, 1), (1, 1), (1, -1)):
            black = []
            r, c = 2, (1 if dc < 0 else size - 2)
            for _ in range(k):
                black.append(r * size + c)
                r, c = r + dr, c + dc
                if c >= size:
                    r, c = r + 1, c - size
                if c < 0:
                    r, c = r - 1, c + size
            if len(set(black)) < k or max(black) >= size * size:
                continue
            white = _white_moves(size, black, k - 1, avoid_lines_with=k)
            games.append((size, k, _interleave(black, white)))
            expect.append(False)
    results = _run_games(games)
    for (size, k, moves), wins, (final, _, ref) in zip(games, expect, results):
        where = f"size {size} k {k} {moves}"
        assert (ref.winner == 0) == wins, where
        assert bool(final.terminated) == wins, where
        np.testing.assert_array_equal(final.rewards, ref.rewards, err_msg=where)
        np.testing.assert_array_equal(final.legal_action_mask, ref.legal_mask(), err_msg=where)


def _greedy_draw(size, k, seed):
    """A full-board game in which no move makes k in a row (random non-completing moves)."""
    rng = np.random.default_rng(seed)
    for _ in range(200):
        ref, moves = RefGomoku(size, k), []
        while not ref.terminated:
            options = [
                a for a in rng.permutation(size * size) if ref.grid[a // size][a % size] == -1
            ]
            for a in options:
                r, c = divmod(int(a), size)
                ref.grid[r][c] = ref.player
                completes = ref.longest_through(r, c) >= k
                ref.grid[r][c] = -1
                if not completes:
                    break
            else:
                break
            moves.append(int(a))
            ref.step(int(a))
        if ref.terminated and ref.winner is None and ref.step_count == size * size:
            return moves
    raise AssertionError("no draw found")


@pytest.mark.parametrize("size, k", [(3, 3), (5, 4), (7, 5)])
def test_full_board_draw(size, k):
    moves = _greedy_draw(size, k, seed=size)
    ((final, prev, ref),) = _run_games([(size, k, moves)])
    assert len(moves) == size * size
    assert not bool(prev.terminated) and int(prev.legal_action_mask.sum()) == 1
    assert bool(final.terminated) and int(final.step_count) == size * size
    np.testing.assert_array_equal(final.rewards, [0.0, 0.0])
    assert not final.legal_action_mask.any() and np.all(final.board != -1)
    assert not has_line(ref.grid, 0, k) and not has_line(ref.grid, 1, k)


def test_k2_and_k_equals_size():
    # k = 2: any two adjacent stones win, diagonally too.
    ((final, _, _),) = _run_games([(3, 2, [0, 2, 4])])
    np.testing.assert_array_equal(final.rewards, [1.0, -1.0])
    # k = size: only a full row, column or long diagonal wins.
    ((final, _, ref),) = _run_games([(4, 4, [3, 0, 6, 1, 9, 2, 12])])
    assert ref.winner == 0 and bool(final.terminated)


# --------------------------------------------------------------------------------------
# Construction, notation, render
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": 2, "k": 2},
        {"size": 15, "k": 1},
        {"size": 7, "k": 8},
        {"size": 7.0, "k": 4},
        {"size": 9, "k": True},
        {"size": -3, "k": 2},
    ],
)
def test_bad_options(kwargs):
    with pytest.raises(ValueError):
        Gomoku(**kwargs)
    with pytest.raises(ValueError):
        envs.make("gomoku", **kwargs)


def test_make_defaults():
    env = envs.make("gomoku")
    assert isinstance(env, Gomoku) and env.size == 15 and env.k == 5
    assert env.num_actions == 225 and env.observation_shape == (15, 15, 3)
    with pytest.raises(ValueError):
        envs.make("gomoku", rows=9)


def test_move_notation():
    assert parse_move("h8", 15) == 7 * 15 + 7
    assert parse_move("a1", 15) == 14 * 15 and parse_move("A15", 15) == 0
    assert parse_move(" o1 ", 15) == 224 and format_move(224, 15) == "o1"
    for size in (3, 15, 19, 30):
        for a in range(size * size):
            assert parse_move(format_move(a, size), size) == a
    assert format_move(26, 30) == "aa30" and parse_move("ad1", 30) == 29 * 30 + 29
    for bad in ("", "h", "8", "8h", "h0", "h16", "p1", "h8x", "h-1", "é8", "h 8"):
        with pytest.raises(ValueError):
            parse_move(bad, 15)
    for bad in (-1, 225):
        with pytest.raises(ValueError):
            format_move(bad, 15)
    env = envs.make("gomoku", size=9, k=5)
    assert env.parse_move("e5") == 40 and env.format_move(40) == "e5"


def test_render():
    env = envs.make("gomoku", size=9, k=5)
    state = env.init(jax.random.key(0))
    state = env.step(state, env.parse_move("a1"))
    state = env.step(state, env.parse_move("i9"))
    state = env.step(state, env.parse_move("e5"))
    lines = env.render(state).splitlines()
    assert lines[0] == "9 . . . . . . . . O"
    assert lines[4] == "5 . . . . X . . . ."
    assert lines[8] == "1 X . . . . . . . ."
    assert lines[9] == "  a b c d e f g h i"
    big = envs.make("gomoku", size=15, k=5).render(envs.make("gomoku").init(None)).splitlines()
    assert big[0].startswith("15 .") and big[14].startswith(" 1 .")
    assert big[-1].split() == list("abcdefghijklmno")
