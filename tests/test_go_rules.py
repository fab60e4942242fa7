"""Go rules of `envs.go` against an independent plain-Python reference, and symmetries.

The protocol every game keeps (types, rewards only at the end, frozen finished games,
forfeits, symmetries commuting with step...) is checked by `envs.check_env` in
tests/test_check_env.py."""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.go import Go
from envs.go_board import format_move, parse_move

# --------------------------------------------------------------------------------------
# Plain-Python reference (independent of envs/).
# --------------------------------------------------------------------------------------


class RefGo:
    """One game of Go: board list of N*N (-1 empty, 0 black, 1 white); black moves first.

    Repetition is checked literally, on whole boards: with ko="simple" a move may not
    recreate the board as it was before the previous move; with ko="positional" it may not
    recreate any board the game has had (the empty board and the board after every ply).
    """

    def __init__(self, size, komi=7.5, history=8, max_moves=None, ko="positional"):
        assert ko in ("positional", "simple")
        self.n = size
        self.komi = komi
        self.t = history
        self.ko_rule = ko
        self.max_moves = 2 * size * size if max_moves is None else max_moves
        self.board = [-1] * (size * size)
        self.boards = [list(self.board)]  # every board of the game, oldest first
        self.seen = {tuple(self.board)}  # the same boards, as a set
        self.by_count = {(0, 0): [tuple(self.board)]}  # and by (black, white) stone counts
        # Positions (of a live game) with a point that superko forbids and simple ko allows,
        # and moves played that recreated an earlier board (possible under simple ko only).
        self.superko_positions = 0
        self.repeats_played = 0
        self.superko_plies = []  # the plies of those positions
        self.player = 0
        self.passes = 0
        self.step_count = 0
        self.terminated = False
        self.forfeited = False
        self.rewards = [0.0, 0.0]
        self.events = set()  # kinds of positions seen, to check coverage
        self.nbrs = []
        for p in range(size * size):
            r, c = divmod(p, size)
            cand = [(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)]
            self.nbrs.append([a * size + b for a, b in cand if 0 <= a < size and 0 <= b < size])
        self._analyse()

    def group(self, board, p):
        """(stones, liberties) of the chain through p, by flood fill."""
        colour = board[p]
        stones, libs, todo = {p}, set(), [p]
        while todo:
            q = todo.pop()
            for r in self.nbrs[q]:
                if board[r] == -1:
                    libs.add(r)
                elif board[r] == colour and r not in stones:
                    stones.add(r)
                    todo.append(r)
        return stones, libs

    def play_on(self, board, p, colour):
        """(new board, captured stones) or (None, reason) for an illegal move."""
        if board[p] != -1:
            return None, "occupied"
        b = list(board)
        b[p] = colour
        captured = set()
        for q in self.nbrs[p]:
            if b[q] == 1 - colour and q not in captured:
                stones, libs = self.group(b, q)
                if not libs:
                    captured |= stones
        for q in captured:
            b[q] = -1
        if not self.group(b, p)[1]:
            return None, "suicide"
        if len(self.boards) >= 2 and b == self.boards[-2]:
            return None, "ko"
        if self.ko_rule == "positional" and tuple(b) in self.seen:
            return None, "superko"
        return b, captured

    def _analyse(self):
        """Legal mask, ko point and chains of the current position."""
        n2 = self.n * self.n
        self.mask = [False] * (n2 + 1)
        self.ko = -1
        self.labels = [-1] * n2
        libs_of = {}  # label -> liberties of the chain
        for p in range(n2):
            if self.board[p] != -1 and self.labels[p] == -1:
                stones, libs = self.group(self.board, p)
                label = min(stones)
                for q in stones:
                    self.labels[q] = label
                libs_of[label] = libs
        if self.terminated:
            return
        self.mask[n2] = True
        quiet = self.quiet_repeats()
        superko_here = False
        for p in range(n2):
            if self.board[p] != -1:
                continue
            nbr_libs = [
                (self.board[q], libs_of[self.labels[q]])
                for q in self.nbrs[p]
                if self.board[q] != -1
            ]
            if any(c != self.player and libs == {p} for c, libs in nbr_libs):
                # A capture: legal unless it recreates the previous position (ko), or under
                # superko any earlier one.
                board, why = self.play_on(self.board, p, self.player)
                self.mask[p] = board is not None
                if why == "ko":
                    self.ko = p
                    self.events.add("ko")
                elif why == "superko" or (board is not None and tuple(board) in self.seen):
                    superko_here = True
                    self.events.add("superko capture")
                continue
            if len(nbr_libs) < len(self.nbrs[p]):
                self.mask[p] = True  # an empty neighbour: a liberty whatever happens
            elif any(c == self.player and libs != {p} for c, libs in nbr_libs):
                self.mask[p] = True  # joins a chain that keeps another liberty
            else:
                self.events.add("suicide point")
            if self.mask[p] and p in quiet:
                # No capture: the board plus this stone is an earlier board (never the one
                # before the last move, which had a stone less of the mover or a pass).
                superko_here = True
                self.events.add("superko without capture")
                self.mask[p] = self.ko_rule == "simple"
        self.superko_positions += superko_here
        if superko_here:
            self.superko_plies.append(self.step_count)

    def quiet_repeats(self):
        """The empty points p where the board plus the mover's stone at p (no capture) is
        a board the game has had: earlier boards that differ from this one at one point
        only, where this board is empty and that one holds the mover's stone."""
        counts = [self.board.count(0), self.board.count(1)]
        counts[self.player] += 1
        points = set()
        for old in self.by_count.get(tuple(counts), ()):
            diff = [p for p in range(len(old)) if old[p] != self.board[p]]
            if len(diff) == 1 and self.board[diff[0]] == -1 and old[diff[0]] == self.player:
                points.add(diff[0])
        return points

    def step(self, action):
        n2 = self.n * self.n
        if self.terminated:
            self.rewards = [0.0, 0.0]
            return
        mover = self.player
        legal = 0 <= action <= n2 and self.mask[action]
        if not legal:
            self.terminated = self.forfeited = True
            self.rewards = [0.0, 0.0]
            self.rewards[mover], self.rewards[1 - mover] = -1.0, 1.0
            self.mask = [False] * (n2 + 1)
            return
        if action == n2:
            self.passes += 1
        else:
            board, captured = self.play_on(self.board, action, mover)
            if len(captured) > 1:
                self.events.add("multi-stone capture")
            groups = {self.labels[q] for q in captured}
            if len(groups) > 1:
                self.events.add("several groups captured")
            if captured and all(self.board[q] != -1 for q in self.nbrs[action]):
                self.events.add("capture without liberty before")
            if tuple(board) in self.seen:
                self.repeats_played += 1
            self.board = board
            self.passes = 0
        self.boards.append(list(self.board))
        key = tuple(self.board)
        if key not in self.seen:
            self.seen.add(key)
            counts = (self.board.count(0), self.board.count(1))
            self.by_count.setdefault(counts, []).append(key)
        self.step_count += 1
        self.player = 1 - mover
        self.rewards = [0.0, 0.0]
        if self.passes >= 2 or self.step_count >= self.max_moves:
            self.terminated = True
            self.events.add("two passes" if self.passes >= 2 else "move cap")
            black, white = self.scores()
            margin = black - white - self.komi
            if margin > 0:
                self.rewards = [1.0, -1.0]
            elif margin < 0:
                self.rewards = [-1.0, 1.0]
        self._analyse()

    def owners(self):
        """Each point's Tromp-Taylor owner: +1 Black, -1 White, 0 neither."""
        owner = [0] * len(self.board)
        seen = set()
        for p, v in enumerate(self.board):
            if v != -1:
                owner[p] = 1 if v == 0 else -1
            elif p not in seen:
                region, border, todo = {p}, set(), [p]
                while todo:
                    q = todo.pop()
                    for r in self.nbrs[q]:
                        if self.board[r] == -1:
                            if r not in region:
                                region.add(r)
                                todo.append(r)
                        else:
                            border.add(self.board[r])
                seen |= region
                if len(border) == 1:
                    colour = 1 if border.pop() == 0 else -1
                    for q in region:
                        owner[q] = colour
        return owner

    def scores(self):
        """Tromp-Taylor area (black, white)."""
        owners = self.owners()
        return [owners.count(1), owners.count(-1)]

    def history(self):
        """The last `t` boards, newest first, empty boards before the game began."""
        past = self.boards[::-1][: self.t]
        return past + [[-1] * (self.n * self.n)] * (self.t - len(past))


def snapshots(games: list[RefGo]) -> dict[str, np.ndarray]:
    """The games' states as the env's fields, stacked over the games ([G, ...] each). The
    observation's planes, at each point: the mover's stones on each board of the history
    (newest first), the opponent's, and one plane on where Black is to move."""
    n, t = games[0].n, games[0].t
    hist = np.array([game.history() for game in games], np.int8)  # [G, t, n*n]
    player = np.array([game.player for game in games])
    mover = player[:, None, None]
    planes = np.concatenate([hist == mover, hist == 1 - mover,
                             np.broadcast_to(mover == 0, (len(games), 1, n * n))], axis=1)
    return {
        "board": np.array([game.board for game in games], np.int8),
        "history": hist,
        "current_player": player,
        "legal_action_mask": np.array([game.mask for game in games]),
        "rewards": np.array([game.rewards for game in games], np.float32),
        "terminated": np.array([game.terminated for game in games]),
        "step_count": np.array([game.step_count for game in games]),
        "observation": planes.transpose(0, 2, 1).reshape(len(games), n, n, 2 * t + 1),
        "ko": np.array([game.ko for game in games]),
        "passes": np.array([game.passes for game in games]),
        "labels": np.array([game.labels for game in games], np.int32),
    }


# --------------------------------------------------------------------------------------
# Random games: JAX env batched in one jit, replayed by the reference.
# --------------------------------------------------------------------------------------

FIELDS = (
    "board",
    "history",
    "current_player",
    "legal_action_mask",
    "rewards",
    "terminated",
    "step_count",
    "observation",
    "passes",
)


def make_rollout(env: Go, num_games: int, num_plies: int, pass_logits=(-6.0, 0.0)):
    """A jitted function (key) -> (actions [P, G], states [P+1, G, ...]) of random games.

    Moves are uniform over legal actions except that each game draws how likely a pass is
    (a logit added to the pass's, uniform in `pass_logits`); the last quarter of the games
    sometimes plays a random (often illegal) action.
    """
    a = env.num_actions

    def one_ply(state, key, pass_logit, noisy):
        k1, k2, k3 = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -1e9).at[a - 1].add(pass_logit)
        action = jax.random.categorical(k1, logits)
        wild = jax.random.randint(k2, (), -2, a + 2)
        action = jnp.where(noisy & (jax.random.uniform(k3) < 0.02), wild, action)
        action = jnp.where(state.terminated, wild, action)
        return env.step(state, action), action

    def rollout(key):
        init_key, pass_key, play_key = jax.random.split(key, 3)
        state = jax.vmap(env.init)(jax.random.split(init_key, num_games))
        pass_logit = jax.random.uniform(pass_key, (num_games,), minval=pass_logits[0],
                                        maxval=pass_logits[1])
        noisy = jnp.arange(num_games) >= num_games * 3 // 4

        def body(state, key):
            keys = jax.random.split(key, num_games)
            new, action = jax.vmap(one_ply)(state, keys, pass_logit, noisy)
            return new, (new, action)

        _, (states, actions) = jax.lax.scan(body, state, jax.random.split(play_key, num_plies))
        states = jax.tree.map(lambda s0, s: jnp.concatenate([s0[None], s]), state, states)
        return actions, states

    return jax.jit(rollout)


def compare_with_reference(env: Go, actions: np.ndarray, states) -> list[RefGo]:
    """Replays every game in the reference and compares all fields after every ply."""
    num_plies, num_games = actions.shape
    games = [RefGo(env.size, env.komi, env.history, env.max_moves, env.ko)
             for _ in range(num_games)]
    for ply in range(num_plies + 1):
        if ply > 0:
            for g, game in enumerate(games):
                game.step(int(actions[ply - 1, g]))
        snaps = snapshots(games)
        for field in FIELDS + ("ko", "labels"):
            want = snaps[field]
            if field == "labels":
                chain = np.asarray(states.chain[ply]).astype(np.int64)
                # Same partition as the reference's chains: the id is a stone of the chain.
                safe = np.maximum(chain, 0)
                got = np.where(chain >= 0, np.take_along_axis(want, safe, axis=1), -1)
                # (and every stone of a chain carries the same id)
                rep = np.take_along_axis(chain, np.maximum(want, 0), axis=1)
                got = np.where((rep == chain) | (want < 0), got, -2)
            elif field == "ko":
                got = np.asarray(states.ko[ply])
                # The ko point matters (and the reference knows it) only while the game runs.
                live = ~np.array([game.terminated for game in games])
                got, want = got[live], want[live]
            else:
                got = np.asarray(getattr(states, field)[ply])
            if not np.array_equal(got, want):
                bad = np.flatnonzero(np.any((got != want).reshape(len(got), -1), axis=1))
                g = int(bad[0])
                raise AssertionError(
                    f"{env.size}x{env.size} ply {ply} field {field!r} differs in games "
                    f"{bad[:10].tolist()}; game {g} actions "
                    f"{[format_move(x, env.size) if 0 <= x <= env.size**2 else int(x) for x in actions[:ply, g]]}"
                    f"\ngot  {got[g].tolist()}\nwant {want[g].tolist()}"
                )
    return games


SMALL_LONG = {"size": 4, "history": 2, "max_moves": 64}
RANDOM_CONFIGS = {
    # name: (env kwargs (default ko="positional"), games, plies, pass logits)
    "5x5": ({"size": 5, "history": 3}, 1536, 56, (-6.0, 0.0)),
    "7x7": ({"size": 7, "komi": 0.0, "history": 8}, 512, 100, (-6.0, 0.0)),
    "9x9": ({"size": 9}, 128, 170, (-6.0, 0.0)),
    # Long games on a small board with few passes: positions where superko forbids a move
    # that simple ko allows come in about one game in eight. The same games (same key)
    # under both rules, until a game meets such a move.
    "4x4 superko": (SMALL_LONG, 512, 65, (-9.0, -5.0)),
    "4x4 simple ko": ({**SMALL_LONG, "ko": "simple"}, 512, 65, (-9.0, -5.0)),
}
SUPERKO_CONFIGS = ("4x4 superko", "4x4 simple ko")


# The larger boards' thousands of reference plies run with the slow tests.
@pytest.fixture(scope="module", params=[
    # Slow: 5x5 and up compile and play long; the 4x4 boards (simple ko, superko) stay.
    pytest.param(name, marks=pytest.mark.slow) if name in ("5x5", "7x7", "9x9") else name
    for name in RANDOM_CONFIGS])
def random_games(request):
    kwargs, num_games, num_plies, pass_logits = RANDOM_CONFIGS[request.param]
    env = envs.make("go", **kwargs)
    rollout = make_rollout(env, num_games, num_plies, pass_logits)
    actions, states = jax.device_get(rollout(jax.random.key(env.size)))
    games = compare_with_reference(env, actions, states)
    return env, actions, states, games, request.param


def test_random_games_match_reference(random_games):
    """Every field of every state of the random games is the reference's. The games are a
    fixed function of their key (the board size), so what they cover below is a
    deterministic fact of it, checked so that the comparison is known to have covered it;
    lower bounds rather than the counts, which any change to JAX's random streams
    would redraw with the games."""
    env, _actions, states, games, _name = random_games
    seen = set().union(*(g.events for g in games))
    required = {
        "multi-stone capture",
        "ko",
        "suicide point",
        "two passes",
        "capture without liberty before",
        "several groups captured",
        "move cap",
    }
    # The plies cover the move cap on every size: every game ended, the legal ones by two
    # passes or at the cap.
    assert states.terminated[-1].all()
    assert all(g.events & {"two passes", "move cap"} for g in games[: len(games) * 3 // 4])
    assert required <= seen, required - seen
    forfeits = sum(g.forfeited for g in games)
    assert forfeits > 0  # deterministic: some of the noisy games' wild moves are illegal
    final = states.rewards[1:].sum(axis=0)  # each game is rewarded at most once
    assert (final[:, 0] == 1.0).any() and (final[:, 0] == -1.0).any()  # both colours win
    # The game's own fields keep their types (the protocol's are checked by check_env).
    n, t, g = env.size, env.history, states.board.shape[1]
    assert states.board.dtype == np.int8 and states.board.shape[1:] == (g, n * n)
    assert states.history.dtype == np.int8 and states.history.shape[1:] == (g, t, n * n)
    assert env.observation_shape == (n, n, 2 * t + 1) and env.num_actions == n * n + 1
    rows = env.max_moves + 1 if env.ko == "positional" else 1
    assert states.hashes.dtype == np.uint32 and states.hashes.shape[1:] == (g, rows, 2)
    assert states.frame.dtype == np.int32 and not states.frame.any()


def test_random_games_exercise_superko(random_games):
    """The random games meet positions where superko forbids a move that simple ko allows
    (and where the two rules' masks were compared with the reference's); under simple ko
    such moves are played, under superko never. Deterministic, as the games are: the
    counts are facts of their key, the bounds what the comparison needs to mean much."""
    env, _, _, games, name = random_games
    positions = sum(g.superko_positions for g in games)
    in_games = sum(g.superko_positions > 0 for g in games)
    repeats = sum(g.repeats_played for g in games)
    print(f"{name}: {positions} superko positions in {in_games} of {len(games)} games, "
          f"{repeats} earlier boards recreated")
    if env.ko == "positional":
        assert repeats == 0
    if name in SUPERKO_CONFIGS:
        seen = set().union(*(g.events for g in games))
        assert {"superko capture", "superko without capture"} <= seen
        # deterministic: about one game in eight of the 4x4 configs meets such a position
        assert in_games >= len(games) // 20, in_games
        if env.ko == "simple":
            assert repeats > 0


def test_position_hashes_tell_boards_apart(random_games):
    """Rows 0..step_count of `hashes` are equal exactly where the game's boards are (the
    empty board hashes to 0); later rows are zero. Under simple ko they are all zero."""
    env, _, states, games, _ = random_games
    hashes = states.hashes[-1]
    if env.ko == "simple":
        assert not hashes.any()
        return
    repeated = 0
    for g, game in enumerate(games):
        count = int(states.step_count[-1, g]) + 1
        assert len(game.boards) == count
        rows = hashes[g, :count]
        assert not rows[0].any() and not hashes[g, count:].any()
        hash_ids = np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)
        board_ids = np.unique(np.array(game.boards), axis=0, return_inverse=True)[1].reshape(-1)
        same_hash = hash_ids[:, None] == hash_ids[None]
        same_board = board_ids[:, None] == board_ids[None]
        np.testing.assert_array_equal(same_hash, same_board)
        repeated += same_board.sum() - count
    # deterministic, as the games are: boards repeat after passes and, under simple ko,
    # cycles
    assert repeated > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("size", "komi", "games", "plies"),
    [
        (2, 0.0, 512, 12),
        (3, 1.0, 512, 27),
        (4, 2.5, 512, 48),
        (9, 7.5, 512, 170),
        (19, 7.5, 8, 300),
    ],
)
def test_more_sizes_match_reference(size, komi, games, plies):
    env = envs.make("go", size=size, komi=komi, history=2)
    actions, states = jax.device_get(make_rollout(env, games, plies)(jax.random.key(size)))
    compare_with_reference(env, actions, states)


def test_area_scores_match_reference(random_games):
    env, _, states, games, _ = random_games
    boards = states.board[-1]
    got = jax.device_get(
        jax.jit(jax.vmap(lambda b: env.area_scores(env.init(None).replace(board=b))))(boards)
    )
    want = np.array([g.scores() for g in games], np.float32)
    np.testing.assert_array_equal(got, want)


def test_ownership_matches_reference(random_games):
    """`Env.ownership` (the auxiliary training target) is the reference's owner of every
    point, and its sum less komi is the score margin, on each random game's last board."""
    env, _, states, games, _ = random_games
    boards = states.board[-1]
    owners, margins = jax.device_get(jax.jit(jax.vmap(lambda b: (
        env.ownership()(env.init(None).replace(board=b)),
        env.score_margin()(env.init(None).replace(board=b)))))(boards))
    assert owners.dtype == np.int8 and owners.shape == (len(games), env.size ** 2)
    np.testing.assert_array_equal(owners, np.array([g.owners() for g in games]))
    np.testing.assert_allclose(owners.sum(1) - env.komi, margins)
    assert {-1, 0, 1} <= set(np.unique(owners).tolist())


# --------------------------------------------------------------------------------------
# Symmetries
# --------------------------------------------------------------------------------------

ALL_FIELDS = FIELDS + ("chain", "ko", "frame", "hashes")


def test_step_is_equivariant_on_ko_and_superko_positions(random_games):
    """Symmetries commute with step on every field (`chain`, `ko`, `frame` and `hashes`
    included) where check_env's random positions rarely go: positions with a ko point
    (a random legal move), and moves into positions where superko forbids a point that
    simple ko allows (the move played). The state is transformed by two symmetries in
    turn, so the frame composes, and the hashes of the boards as played stay valid for
    the transformed board."""
    env, actions, states, games, name = random_games
    sym = env.symmetries
    rng = np.random.default_rng(env.size)
    ko_rows = np.argwhere((states.ko >= 0) & ~states.terminated)
    ko_rows = ko_rows[rng.choice(len(ko_rows), 32)]
    ko_acts = [rng.choice(np.flatnonzero(states.legal_action_mask[t, g])) for t, g in ko_rows]
    into = np.array([(ply - 1, g) for g, game in enumerate(games) for ply in game.superko_plies],
                    np.int64).reshape(-1, 2)
    # The 5x5..9x9 games meet few of those (see test_random_games_exercise_superko); the
    # 4x4 games dozens (deterministic, as the games are).
    assert len(into) > 0 or name not in SUPERKO_CONFIGS
    into = into[:64]
    rows = np.concatenate([ko_rows, into])
    acts = np.concatenate([ko_acts, actions[into[:, 0], into[:, 1]]]).astype(np.int32)
    batch = jax.tree.map(lambda x: x[rows[:, 0], rows[:, 1]], states)
    num = len(rows)
    g1 = np.repeat(np.arange(sym.size, dtype=np.int32), num)
    g2 = np.where(np.arange(len(g1)) % 2 == 0, 0, rng.integers(0, sym.size, g1.shape))
    g2 = g2.astype(np.int32)
    tiled = jax.tree.map(lambda x: np.concatenate([x] * sym.size), batch)
    acts = np.tile(acts, sym.size)

    def both_sides(s, a, g1, g2):
        after = env.step(s, a)
        lhs = env.transform_state(env.transform_state(after, g1), g2)
        moved = env.transform_state(env.transform_state(s, g1), g2)
        rhs = env.step(moved, sym.action(sym.action(a, g1), g2))
        return lhs, rhs, moved, after

    lhs, rhs, moved, after = jax.device_get(
        jax.jit(jax.vmap(both_sides))(tiled, acts, g1, g2))
    for field in ALL_FIELDS:
        np.testing.assert_array_equal(getattr(lhs, field), getattr(rhs, field), err_msg=field)
    # No forfeits (the transformed action was legal), and the ko point moved with the board.
    assert np.all(lhs.step_count == tiled.step_count + 1)
    ko = np.arange(len(g1)) % num < len(ko_rows)
    assert np.all(moved.ko[ko] >= 0) and (moved.ko[ko] != tiled.ko[ko]).any()
    # The hashes are those of the boards as played; the frame is the composed symmetry:
    # cell_perm[frame] == cell_perm[g1][cell_perm[g2]].
    np.testing.assert_array_equal(rhs.hashes, after.hashes)
    perms = np.asarray(sym.cell_perm)
    np.testing.assert_array_equal(perms[rhs.frame], np.take_along_axis(perms[g1], perms[g2], 1))
    assert (rhs.frame != 0).any() and not after.frame.any()


def test_transform_state_is_geometric(random_games):
    env, _, states, _, _ = random_games
    n = env.size
    sym = env.symmetries
    s = jax.tree.map(lambda x: x[len(x) // 2, :8], states)
    transform = jax.jit(jax.vmap(env.transform_state, in_axes=(0, None)))
    for g in range(sym.size):
        t = jax.device_get(transform(s, g))
        k, flip = divmod(g, 2)
        for i in range(8):

            def geo(a, k=k, flip=flip):
                a = np.rot90(np.asarray(a).reshape(n, n, -1), k)
                return np.fliplr(a) if flip else a

            np.testing.assert_array_equal(t.board[i].reshape(n, n, 1), geo(s.board[i]))
            np.testing.assert_array_equal(t.observation[i], geo(s.observation[i]))
            for h in range(env.history):
                np.testing.assert_array_equal(
                    t.history[i, h].reshape(n, n, 1), geo(s.history[i, h])
                )
            assert t.legal_action_mask[i, -1] == s.legal_action_mask[i, -1]


# --------------------------------------------------------------------------------------
# Hand-made positions
# --------------------------------------------------------------------------------------


@functools.cache
def jitted(size, komi=7.5, max_moves=None, ko="positional"):
    env = Go(size=size, komi=komi, history=2, max_moves=max_moves, ko=ko)
    return env, jax.jit(env.step), jax.jit(env.init)


@functools.cache
def turned_steps(size):
    """A jitted (state, action, symmetries [K]) -> the K states after the action, each
    played on the state and with the action turned by one of the symmetries."""
    env, _, _ = jitted(size)
    sym = env.symmetries

    def turned(state, action, g):
        return env.step(env.transform_state(state, g), sym.action(action, g))

    return jax.jit(jax.vmap(turned, in_axes=(None, None, 0)))


def play(moves, size=5, komi=7.5, max_moves=None, ko="positional"):
    """The state after a space-separated list of moves ("C3 D3 pass ..."), each legal."""
    env, step, init = jitted(size, komi, max_moves, ko)
    state = init(jax.random.key(0))
    for m in moves.split():
        a = parse_move(m, size)
        assert bool(state.legal_action_mask[a]), f"{m} illegal in\n{env.render(state)}"
        state = step(state, a)
    return state


def board_of(state, size=5):
    marks = {-1: ".", 0: "X", 1: "O"}
    b = np.asarray(state.board).reshape(size, size)
    return ["".join(marks[int(v)] for v in row) for row in b]


def legal(state, move, size=5):
    return bool(state.legal_action_mask[parse_move(move, size)])


def test_capture_multi_stone_group():
    # White B4 B3 surrounded by black A4 A3 B5 B2 C4 C3.
    s = play("A4 B4 A3 B3 B5 pass B2 pass C4 pass")
    assert board_of(s) == [".X...", "XOX..", "XO...", ".X...", "....."]
    assert not bool(s.terminated)
    s2 = play("A4 B4 A3 B3 B5 pass B2 pass C4 pass C3")
    assert board_of(s2)[1:3] == ["X.X..", "X.X.."]
    assert int(s2.step_count) == 11


def test_several_groups_captured_at_once():
    s = play("C5 C4 B4 pass D4 pass B2 C2 D2 pass C1 pass")
    # White C4 (libs: C3) and C2 (libs: C3) are separate groups; black C3 takes both.
    assert legal(s, "C3")
    s = play("C5 C4 B4 pass D4 pass B2 C2 D2 pass C1 pass C3")
    rows = board_of(s)
    assert rows[1][2] == "." and rows[3][2] == "." and rows[2][2] == "X"
    assert np.sum(np.asarray(s.board) == 1) == 0


def test_suicide_is_illegal():
    # Single stone: A5 surrounded by black A4 B5; white may not play A5.
    s = play("A4 pass B5")
    assert int(s.current_player) == 1
    assert not legal(s, "A5")
    # Group: black B5 B4 A3, white A4; white A5 would leave A4+A5 without a liberty.
    s = play("B5 A4 B4 pass A3")
    assert not legal(s, "A5")
    # For black, A5 has no empty neighbour either, but it captures A4.
    s2 = play("B5 A4 B4 pass A3 pass")
    assert legal(s2, "A5")


def test_capture_that_looks_like_suicide_is_legal():
    # Black A5 has no empty neighbour, but captures white B5 and A4 (two groups).
    s = play("C5 B5 B4 A4 A3 pass")  # black C5 B4 A3; white B5 A4 (both in atari at A5)
    assert int(s.current_player) == 0
    assert legal(s, "A5")
    s = play("C5 B5 B4 A4 A3 pass A5")
    assert board_of(s)[0] == "X.X.." and board_of(s)[1] == ".X..."


@pytest.mark.parametrize("ko", ["positional", "simple"])
def test_simple_ko(ko):
    #   4 . X O . .
    #   3 X O . O .    black C3 captures B3 and is left in atari at B3: a ko.
    #   2 . X O . .
    setup = "B4 C4 A3 D3 B2 C2 pass B3"
    s = play(setup, ko=ko)
    # White B3 is in atari (liberty C3); black C3 captures it and is itself in atari.
    assert legal(s, "C3")
    s = play(setup + " C3", ko=ko)
    assert board_of(s)[2] == "X.XO."
    assert int(s.ko) == parse_move("B3", 5)
    assert not legal(s, "B3")  # immediate recapture: ko (and superko: the board of ply 8)
    # After a move elsewhere (and the answer), the recapture is legal again.
    s = play(setup + " C3 E5 E1", ko=ko)
    assert int(s.ko) == -1 and legal(s, "B3")
    s = play(setup + " C3 E5 E1 B3", ko=ko)
    assert board_of(s)[2] == "XO.O."
    assert int(s.ko) == parse_move("C3", 5)  # and now black may not retake at once
    # A pass clears the ko point too.
    s = play(setup + " C3 pass", ko=ko)
    assert int(s.ko) == -1
    # White's threat at E5 and Black's pass changed the board: the retake recreates no
    # earlier board, and both rules allow it.
    s = play(setup + " C3 E5 pass", ko=ko)
    assert int(s.ko) == -1 and legal(s, "B3")


def masks_by_rule(moves, size):
    """Legal masks (bool [plies + 1, A]) of both rules along a move list."""
    out = {}
    for ko in ("positional", "simple"):
        _env, step, init = jitted(size, ko=ko)
        state = init(jax.random.key(0))
        masks = [np.asarray(state.legal_action_mask)]
        for m in moves.split():
            assert masks[-1][parse_move(m, size)], f"{m} illegal under {ko}"
            state = step(state, parse_move(m, size))
            masks.append(np.asarray(state.legal_action_mask))
        out[ko] = np.stack(masks)
    return out


# Send two, return one, on 3x3. After 1 B1 2 B3 3 C2 4 B2, black sends C3 into atari with
# C2 (5), white takes the two stones with C1 (6), and black C2 takes the one stone C1
# back (7), recreating the board after ply 4:
#
#   after ply 4     after ply 5     after ply 6     black C2 would make
#   3 . O .         3 . O X         3 . O .         3 . O .
#   2 . O X         2 . O X         2 . O .         2 . O X    = the board after ply 4
#   1 . X .         1 . X .         1 . X O         1 . X .
#
# C2 is no simple-ko recapture (it takes one stone and keeps two liberties, and ply 5's
# board had C3 black): simple ko allows it, positional superko forbids it.
SEND_TWO = "B1 B3 C2 B2 C3 C1"

# A cycle closed by a move that captures nothing, on 3x3: black A2 (7) takes A3, white
# A3 (8) takes the two stones A2 A1, and black A1 (no capture: A2 is empty) would
# recreate the board after ply 6:
#
#   after ply 6     after ply 7     after ply 8     black A1 would make
#   3 O X .         3 . X .         3 O X .         3 O X .
#   2 . O .         2 X O .         2 . O .         2 . O .    = the board after ply 6
#   1 X O X         1 X O X         1 . O X         1 X O X
QUIET = "A1 A3 C1 B1 B3 B2 A2 A3"


def walled(black, white, moves):
    """`moves` (a 3x3 sequence) in the corner A1-C3 of 19x19, after Black and White played
    `black` and `white` in turn: walls that stand for the edges of the 3x3 board (next to
    the corner's stones of the other colour, or joined to stones never captured there),
    and moves far away. Returns (the moves, how many the walls took)."""
    black, white = black.split(), white.split()
    setup = [m for pair in zip(black, white, strict=True) for m in pair]
    return " ".join(setup + moves.split()), len(setup)


# SEND_TWO on 19x19: White B4 C4 D4 D3 D2 and Black D1 wall the corner in; QUIET: Black
# A4 B4 C4 D4 D3 D2 D1.
SEND_TWO_19 = walled("D1 T19 T17 T15 T13", "B4 C4 D4 D3 D2", SEND_TWO)
QUIET_19 = walled("A4 B4 C4 D4 D3 D2 D1", "T19 T17 T15 T13 T11 T9 T7", QUIET)


@pytest.mark.parametrize(("size", "moves", "point", "earlier"), [
    (3, SEND_TWO, "C2", 4),
    (3, QUIET, "A1", 6),
    (19, SEND_TWO_19[0], "C2", SEND_TWO_19[1] + 4),
    (19, QUIET_19[0], "A1", QUIET_19[1] + 6),
])
def test_superko_forbids_recreating_an_earlier_board(size, moves, point, earlier):
    masks = masks_by_rule(moves, size)
    a = parse_move(point, size)
    # The rules agree everywhere but at the last position's `point`.
    np.testing.assert_array_equal(masks["positional"][:-1], masks["simple"][:-1])
    assert masks["simple"][-1, a] and not masks["positional"][-1, a]
    differ = np.flatnonzero(masks["positional"][-1] != masks["simple"][-1])
    assert differ.tolist() == [a]
    s = play(moves, size=size, ko="positional")
    assert int(s.ko) == -1  # no simple ko here
    # Under simple ko the move is played and recreates the board.
    again = play(f"{moves} {point}", size=size, ko="simple")
    before = play(" ".join(moves.split()[:earlier]), size)
    np.testing.assert_array_equal(np.asarray(again.board), np.asarray(before.board))
    # Under superko it is an illegal move: a forfeit.
    env, step, _ = jitted(size)
    out = step(s, a)
    assert bool(out.terminated) and int(out.step_count) == len(moves.split())
    np.testing.assert_array_equal(np.asarray(out.rewards), [-1.0, 1.0])  # black forfeits
    # The last move played on the board turned by every symmetry forbids the turned point.
    sym = env.symmetries
    prev = play(" ".join(moves.split()[:-1]), size)
    last = parse_move(moves.split()[-1], size)
    got = jax.device_get(turned_steps(size)(prev, jnp.int32(last), jnp.arange(sym.size)))
    for g in range(sym.size):
        np.testing.assert_array_equal(got.legal_action_mask[g],
                                      np.asarray(sym.policy(s.legal_action_mask, g)))
        assert not got.legal_action_mask[g, int(sym.action(a, g))] and got.frame[g] == g


def test_superko_counts_boards_before_and_after_passes():
    """Passes add no position (the board after a pass is the board before it) and forbid
    nothing, but the boards they repeat stay forbidden: here the board of ply 4 in
    SEND_TWO is reached at ply 5 and repeated by White's pass at ply 6."""
    moves = "B1 B3 pass B2 C2 pass C3 C1"
    masks = masks_by_rule(moves, 3)
    np.testing.assert_array_equal(masks["positional"][:-1], masks["simple"][:-1])
    a = parse_move("C2", 3)
    assert masks["simple"][-1, a] and not masks["positional"][-1, a]
    assert (masks["positional"][-1] != masks["simple"][-1]).sum() == 1
    # A pass repeats the board, but a stone always changes it: after one, every empty
    # point is legal.
    s = play("C3 pass", size=5)
    np.testing.assert_array_equal(np.asarray(s.legal_action_mask),
                                  np.asarray(play("C3 pass", size=5, ko="simple").legal_action_mask))
    assert np.asarray(s.legal_action_mask).sum() == 25  # 24 empty points and pass


def test_pass_pass_ends_and_scores():
    s = play("C3 pass pass", komi=0.5)
    assert bool(s.terminated)
    np.testing.assert_array_equal(np.asarray(s.rewards), [1.0, -1.0])  # 25 - 0 - 0.5
    assert not np.any(np.asarray(s.legal_action_mask))
    s = play("pass pass", komi=0.5)  # empty board: 0 - 0 - 0.5
    np.testing.assert_array_equal(np.asarray(s.rewards), [-1.0, 1.0])
    s = play("pass pass", komi=0.0)  # integer komi, tie: draw
    assert bool(s.terminated)
    np.testing.assert_array_equal(np.asarray(s.rewards), [0.0, 0.0])
    s = play("pass C3 pass", komi=0.5)  # passes not consecutive
    assert not bool(s.terminated)


def test_move_cap_ends_game():
    s = play("C3 D3 B2", max_moves=4, komi=0.5)
    assert not bool(s.terminated)
    s = play("C3 D3 B2 pass", max_moves=4, komi=0.5)
    assert bool(s.terminated) and int(s.step_count) == 4
    # Black C3 B2, white D3: black area 2 + nothing, white 1 (shared empty regions)
    np.testing.assert_array_equal(np.asarray(s.rewards), [1.0, -1.0])


def test_tromp_taylor_scores():
    env, _, _ = jitted(5)
    scores = jax.jit(env.area_scores)
    # Black wall on column C, white wall on column D: A-B black, E white.
    s = play("C1 D1 C2 D2 C3 D3 C4 D4 C5 D5")
    np.testing.assert_array_equal(np.asarray(scores(s)), [15.0, 10.0])
    # A white stone inside black's area makes that region neutral.
    s = play("C1 D1 C2 D2 C3 D3 C4 D4 C5 D5 pass A1")
    np.testing.assert_array_equal(np.asarray(scores(s)), [5.0, 11.0])
    # Corners: A1 is black's (only black around it), A3 and the open side touch both.
    s = play("A2 A4 B2 B4 B1 B5 pass A5")
    np.testing.assert_array_equal(np.asarray(scores(s)), [4.0, 4.0])
    # Shared liberties (column C between two walls) are neutral: 10 - 10.
    s = play("B1 D1 B2 D2 B3 D3 B4 D4 B5 D5")
    np.testing.assert_array_equal(np.asarray(scores(s)), [10.0, 10.0])
    s = play("B1 D1 B2 D2 B3 D3 B4 D4 B5 D5 pass pass", komi=0.0)
    np.testing.assert_array_equal(np.asarray(s.rewards), [0.0, 0.0])
    # Komi decides: black 15 vs white 10.
    for komi, want in ((4.5, [1, -1]), (5.5, [-1, 1]), (5.0, [0, 0])):
        s = play("C1 D1 C2 D2 C3 D3 C4 D4 C5 D5 pass pass", komi=komi)
        np.testing.assert_array_equal(np.asarray(s.rewards), want, err_msg=str(komi))


@pytest.mark.parametrize("bad", ["occupied", "suicide", "ko"])
def test_illegal_moves(bad):
    """Occupied points, suicide and simple ko are illegal (and so forfeit); superko
    forfeits in test_superko_forbids_recreating_an_earlier_board."""
    _env, step, _ = jitted(5)
    setup = "B4 C4 A3 D3 B2 C2 pass B3 C3"  # white to move, ko at B3
    s = play(setup)
    if bad == "occupied":
        action = parse_move("C3", 5)
    elif bad == "ko":
        action = parse_move("B3", 5)
    else:
        s = play("A4 pass B5")  # white to move, A5 is suicide
        action = parse_move("A5", 5)
    assert not bool(s.legal_action_mask[action])
    mover = int(s.current_player)
    after = step(s, action)
    assert bool(after.terminated)
    want = np.zeros(2, np.float32)
    want[mover], want[1 - mover] = -1.0, 1.0
    np.testing.assert_array_equal(np.asarray(after.rewards), want)
    np.testing.assert_array_equal(np.asarray(after.board), np.asarray(s.board))


def test_observation_planes():
    env = Go(size=5, history=2)
    s = play("C3 D3 B2")
    obs = np.asarray(s.observation)  # white to move; history=2 in `jitted`
    assert obs.shape == (5, 5, 5)
    r, c = divmod(parse_move("D3", 5), 5)
    assert obs[r, c, 0] and obs[r, c, 1]  # white D3 now and one move ago
    r, c = divmod(parse_move("B2", 5), 5)
    assert obs[r, c, 2] and not obs[r, c, 3]  # black B2 now, not one move ago
    assert not obs[..., 4].any()  # white to move
    assert obs.sum() == 1 + 1 + 2 + 1
    s0 = env.init(jax.random.key(0))
    assert np.asarray(s0.observation)[..., 4].all() and np.asarray(s0.observation).sum() == 25
    assert np.asarray(s0.legal_action_mask).all()


def test_moves_notation_and_render():
    assert parse_move("A9", 9) == 0 and parse_move("J1", 9) == 80
    assert parse_move("d4", 9) == 5 * 9 + 3 and parse_move(" pass ", 9) == 81
    assert parse_move("T19", 19) == 18 and parse_move("A1", 19) == 18 * 19
    for size in (2, 5, 9, 19):
        for a in range(size * size + 1):
            assert parse_move(format_move(a, size), size) == a
    for bad in ("I5", "A10", "Z1", "A0", "", "pas", "5A"):
        with pytest.raises(ValueError):
            parse_move(bad, 9)
    env = Go(size=9)
    text = env.render(jax.jit(env.step)(env.init(jax.random.key(0)), parse_move("E5", 9)))
    lines = text.splitlines()
    assert lines[0].split() == list("ABCDEFGHJ")
    assert lines[5].split() == ["5", ".", ".", ".", ".", "X", ".", ".", ".", ".", "5"]
    assert "White" in lines[-1] and "to move" in lines[-1]


def test_bad_options():
    for kwargs in ({"size": 0}, {"size": 1}, {"size": 20}, {"history": 0}, {"max_moves": 0}):
        with pytest.raises(ValueError):
            envs.make("go", **kwargs)
    for ko in ("situational", "Simple", "", None, 1):
        with pytest.raises(ValueError) as err:
            envs.make("go", ko=ko)
        assert str(err.value) == ("Go ko must be one of 'positional', 'simple' (positional "
                                  f"superko or simple ko), got {ko!r}")
    env = envs.make("go")
    assert isinstance(env, Go) and env.size == 9 and env.komi == 7.5 and env.ko == "positional"
    assert envs.make("go", ko="simple").ko == "simple"
    assert env.max_moves == 162 and env.num_actions == 82 and env.observation_shape == (9, 9, 17)
    assert envs.make("go", size=19).num_actions == 362


def test_ko_option_from_configs_and_the_command_line():
    from azjax.commands.arena import _arena_env
    from azjax.run.config import TrainConfig

    config = TrainConfig().replace(game="go", game_options={"size": 5, "ko": "simple"})
    config.program.validate()
    assert config.program.make_env().ko == "simple"
    args = types.SimpleNamespace(game="go", game_option=["size=5", "komi=0.5", "ko=simple"])
    env = _arena_env(args)
    assert (env.size, env.komi, env.ko) == (5, 0.5, "simple")
    with pytest.raises(ValueError, match="Go ko must be one of 'positional', 'simple'"):
        _arena_env(types.SimpleNamespace(game="go", game_option=["ko=super"]))


def test_state_size_estimate_covers_the_hashes():
    from azjax.core import memory
    from envs.go_board import state_bytes

    for kwargs in ({"size": 9}, {"size": 19, "history": 2}, {"size": 5, "ko": "simple"}):
        env = Go(**kwargs)
        real = memory.state_bytes(env)
        estimate = state_bytes(env.size, env.history, env.max_moves, env.ko)
        assert real <= estimate <= 1.25 * real, (kwargs, real, estimate)
    superko, simple = Go(size=19), Go(size=19, ko="simple")
    assert memory.state_bytes(superko) - memory.state_bytes(simple) == 8 * (2 * 361 + 1 - 1)
