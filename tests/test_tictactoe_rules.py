"""Tic-tac-toe rules of `envs.tictactoe` against an independent plain-Python reference.

The protocol every game keeps (types, rewards only at the end, frozen finished games,
forfeits, symmetries commuting with step...) is checked by `envs.check_env` in
tests/test_check_env.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.tictactoe import TicTacToe, state_from_board

# --------------------------------------------------------------------------------------
# Plain-Python reference (independent of envs/ and azjax/solvers/).
# --------------------------------------------------------------------------------------

REF_LINES = [
    (0, 1, 2), (3, 4, 5), (6, 7, 8),  # rows
    (0, 3, 6), (1, 4, 7), (2, 5, 8),  # columns
    (0, 4, 8), (2, 4, 6),  # diagonals
]


class RefGame:
    """One game: board of 9 (-1 empty, 0 X, 1 O); X (player 0) moves first."""

    def __init__(self, board=None):
        self.board = [-1] * 9 if board is None else list(board)
        self.player = sum(v != -1 for v in self.board) % 2
        self.step_count = sum(v != -1 for v in self.board)
        self.rewards = [0.0, 0.0]
        self.terminated = False
        self.forfeited = False
        w = self.winner()
        if w is not None:
            self.terminated = True
            self.rewards = [1.0, -1.0] if w == 0 else [-1.0, 1.0]
        elif all(v != -1 for v in self.board):
            self.terminated = True

    def winner(self):
        for a, b, c in REF_LINES:
            if self.board[a] != -1 and self.board[a] == self.board[b] == self.board[c]:
                return self.board[a]
        return None

    def legal_moves(self):
        if self.terminated:
            return []
        return [i for i in range(9) if self.board[i] == -1]

    def legal_mask(self):
        mask = [False] * 9
        for i in self.legal_moves():
            mask[i] = True
        return mask

    def observation(self):
        obs = np.zeros((3, 3, 3), dtype=bool)
        for i, v in enumerate(self.board):
            obs[i // 3, i % 3, 0] = v == self.player
            obs[i // 3, i % 3, 1] = v == 1 - self.player
        obs[:, :, 2] = self.player == 0
        return obs

    def step(self, action):
        if self.terminated:
            self.rewards = [0.0, 0.0]
            return
        mover = self.player
        if not (0 <= action < 9) or self.board[action] != -1:
            # Illegal move: the mover loses, the board is left as it was.
            self.terminated = True
            self.forfeited = True
            self.rewards = [0.0, 0.0]
            self.rewards[mover] = -1.0
            self.rewards[1 - mover] = 1.0
            return
        self.board[action] = mover
        self.step_count += 1
        self.player = 1 - mover
        self.rewards = [0.0, 0.0]
        if self.winner() == mover:
            self.terminated = True
            self.rewards[mover] = 1.0
            self.rewards[1 - mover] = -1.0
        elif all(v != -1 for v in self.board):
            self.terminated = True

    def snapshot(self):
        return dict(
            board=np.array(self.board, dtype=np.int8),
            current_player=self.player,
            legal_action_mask=np.array(self.legal_mask() if not self.forfeited else [False] * 9),
            terminated=self.terminated,
            rewards=np.array(self.rewards, dtype=np.float32),
            step_count=self.step_count,
            observation=self.observation(),
        )


def stack_snapshots(games):
    snaps = [g.snapshot() for g in games]
    return {k: np.stack([np.asarray(s[k]) for s in snaps]) for k in snaps[0]}


def assert_state_matches(state, ref, where=""):
    """Compares a batched (host) state against stacked reference snapshots."""
    for field in ref:
        got = np.asarray(getattr(state, field))
        want = ref[field]
        if not np.array_equal(got, want):
            bad = np.flatnonzero(
                np.any((got != want).reshape(got.shape[0], -1), axis=1)
            )
            raise AssertionError(
                f"{where}: field {field!r} differs for games {bad[:10].tolist()}: "
                f"got {got[bad[0]].tolist()} want {want[bad[0]].tolist()}"
            )


# --------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------

NUM_LEGAL_GAMES = 2048
NUM_NOISY_GAMES = 512
NUM_PLIES = 12  # 9 plies fill the board; the extra ones step finished games.


@pytest.fixture(scope="module")
def env():
    return envs.make("tictactoe")


@pytest.fixture(scope="module")
def batched_step(env):
    return jax.jit(jax.vmap(env.step))


@pytest.fixture(scope="module")
def single_step(env):
    return jax.jit(env.step)


@pytest.fixture(scope="module")
def random_play(env, batched_step):
    """Plays 2048 legal-only games plus 512 noisy games (sometimes illegal actions)
    in lockstep, comparing with the reference at every ply.

    Returns the per-ply host states and the actions used.
    """
    rng = np.random.default_rng(1234)
    n = NUM_LEGAL_GAMES + NUM_NOISY_GAMES
    keys = jax.random.split(jax.random.key(0), n)
    state = jax.jit(jax.vmap(env.init))(keys)
    games = [RefGame() for _ in range(n)]
    host_states = [jax.device_get(state)]
    assert_state_matches(host_states[0], stack_snapshots(games), "init")
    actions_per_ply = []
    for ply in range(NUM_PLIES):
        actions = np.empty(n, dtype=np.int32)
        for i, game in enumerate(games):
            moves = game.legal_moves()
            noisy = i >= NUM_LEGAL_GAMES and rng.random() < 0.15
            if moves and not noisy:
                actions[i] = rng.choice(moves)
            else:
                # Finished games (and the noisy ones) get any action, legal or not.
                actions[i] = rng.integers(-3, 12)
            game.step(int(actions[i]))
        state = batched_step(state, jnp.asarray(actions))
        host = jax.device_get(state)
        assert_state_matches(host, stack_snapshots(games), f"ply {ply}")
        host_states.append(host)
        actions_per_ply.append(actions)
    return host_states, np.stack(actions_per_ply), games


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def test_random_games_match_reference(random_play):
    host_states, actions, games = random_play
    # Every ply was compared inside the fixture; check here that the games covered all
    # kinds of endings, so the comparison was not vacuous.
    final = host_states[-1]
    legal = slice(0, NUM_LEGAL_GAMES)
    assert np.all(final.terminated)
    x_wins = sum(g.winner() == 0 for g in games[legal])
    o_wins = sum(g.winner() == 1 for g in games[legal])
    draws = sum(g.winner() is None for g in games[legal])
    assert x_wins > 100 and o_wins > 100 and draws > 50, (x_wins, o_wins, draws)
    # Each legal game's final board shows how the env paid it: the winner owns a line
    # and the loser none; a draw fills the board without a line.
    paid = sum(np.asarray(s.rewards) for s in host_states)[legal]
    for board, reward in zip(final.board[legal], paid):
        owners = {int(board[a]) for a, b, c in REF_LINES
                  if board[a] != -1 and board[a] == board[b] == board[c]}
        assert reward.tolist() in ([1.0, -1.0], [-1.0, 1.0], [0.0, 0.0])
        assert owners == {p for p in (0, 1) if reward[p] == 1.0}, (board.tolist(), reward)
        assert owners or (board != -1).all(), board.tolist()
    # Some noisy games ended by forfeit.
    assert sum(g.forfeited for g in games[NUM_LEGAL_GAMES:]) > 50
    # The game's own fields keep their types (the protocol's are checked by check_env).
    assert final.board.dtype == np.int8 and final.observation.dtype == np.bool_


def test_state_from_board_agrees_with_stepping(random_play):
    host_states, _, _ = random_play
    legal = slice(0, NUM_LEGAL_GAMES)
    boards, expected = [], []
    for ply, host in enumerate(host_states):
        # States just reached by a legal move (rewards are zeroed on later steps).
        fresh = (
            np.ones(NUM_LEGAL_GAMES, bool)
            if ply == 0
            else ~host_states[ply - 1].terminated[legal]
        )
        boards.append(host.board[legal][fresh])
        expected.append(jax.tree.map(lambda x: x[legal][fresh], host))
    boards = np.concatenate(boards)
    expected = jax.tree.map(lambda *xs: np.concatenate(xs), *expected)
    got = jax.device_get(jax.jit(jax.vmap(state_from_board))(jnp.asarray(boards)))
    assert boards.shape[0] > 10000
    for field in ("board", "current_player", "legal_action_mask", "terminated",
                  "rewards", "step_count", "observation"):
        np.testing.assert_array_equal(
            np.asarray(getattr(got, field)), np.asarray(getattr(expected, field)), err_msg=field
        )


def _play_prefix(single_step, env, moves):
    state = env.init(jax.random.key(0))
    ref = RefGame()
    for m in moves:
        state = single_step(state, m)
        ref.step(m)
    return state, ref


def test_handpicked_win_and_draw(env, single_step):
    # X: 0, 4, 8 (main diagonal); O: 1, 2. X wins on ply 5 -> rewards [+1, -1].
    state, _ = _play_prefix(single_step, env, [0, 1, 4, 2])
    assert not bool(state.terminated)
    state = single_step(state, 8)
    assert bool(state.terminated)
    np.testing.assert_array_equal(np.asarray(state.rewards), [1.0, -1.0])
    assert int(state.step_count) == 5
    # O wins the middle column: X 0, 2, 6; O 1, 4, 7 -> rewards [-1, +1] on ply 6.
    state, _ = _play_prefix(single_step, env, [0, 1, 2, 4, 6])
    assert not bool(state.terminated)  # X 0,2,6 is not a line
    state = single_step(state, 7)
    np.testing.assert_array_equal(np.asarray(state.rewards), [-1.0, 1.0])
    assert bool(state.terminated)
    # Draw: X O X / X O O / O X X  via moves 0,1,2,4,3,5,7,6,8 -> full board, no line.
    state, ref = _play_prefix(single_step, env, [0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert ref.winner() is None
    assert bool(state.terminated)
    np.testing.assert_array_equal(np.asarray(state.rewards), [0.0, 0.0])
    assert int(state.step_count) == 9


def test_make_unknown_game():
    with pytest.raises(ValueError) as err:
        envs.make("chess_but_not_really")
    assert "tictactoe" in str(err.value)
    assert "tictactoe" in envs.registered_games()


def test_make_bad_kwargs():
    with pytest.raises(ValueError):
        envs.make("tictactoe", size=4)
    assert isinstance(envs.make("tictactoe"), TicTacToe)
