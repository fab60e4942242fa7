"""Symmetries of tic-tac-toe: equivariance of `step`, consistency of the maps, group laws."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.tictactoe import state_from_board, states_from_boards

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def has_line(board):
    return any(board[a] != -1 and board[a] == board[b] == board[c] for a, b, c in LINES)


def random_reachable_boards(rng, n, live_only):
    """Boards reached by uniformly random legal play from the empty board."""
    boards = []
    while len(boards) < n:
        board = [-1] * 9
        length = rng.integers(0, 10)
        for ply in range(length):
            if has_line(board):
                break
            empty = [i for i in range(9) if board[i] == -1]
            board[rng.choice(empty)] = ply % 2
        terminal = has_line(board) or all(v != -1 for v in board)
        if live_only and terminal:
            continue
        boards.append(board)
    return np.array(boards, dtype=np.int8)


def d4_grid_maps():
    """The 8 symmetries of a 3x3 grid as functions on [3, 3, ...] arrays (numpy only)."""
    maps = []
    for k in range(4):
        maps.append(lambda a, k=k: np.rot90(a, k, axes=(0, 1)))
        maps.append(lambda a, k=k: np.flip(np.rot90(a, k, axes=(0, 1)), axis=1))
    return maps


def onehot(a, n=9):
    return jax.nn.one_hot(a, n, dtype=jnp.float32)


@pytest.fixture(scope="module")
def env():
    return envs.make("tictactoe")


@pytest.fixture(scope="module")
def sym(env):
    return env.symmetries


@pytest.fixture(scope="module")
def live_batch(env):
    """Random live states tiled over all 8 symmetries, with a random legal action each."""
    rng = np.random.default_rng(5)
    boards = random_reachable_boards(rng, 400, live_only=True)
    actions = np.array([rng.choice(np.flatnonzero(b == -1)) for b in boards], np.int32)
    n = len(boards)
    g = np.repeat(np.arange(8, dtype=np.int32), n)
    boards = np.tile(boards, (8, 1))
    actions = np.tile(actions, 8)
    return boards, actions, g


def test_step_is_equivariant(env, sym, live_batch):
    boards, actions, g = live_batch

    def both_sides(board, a, g):
        s = state_from_board(board)
        lhs = env.transform_state(env.step(s, a), g)
        rhs = env.step(env.transform_state(s, g), sym.action(a, g))
        return lhs, rhs

    lhs, rhs = jax.device_get(jax.jit(jax.vmap(both_sides))(boards, actions, g))
    for field in ("board", "observation", "legal_action_mask", "rewards", "terminated",
                  "current_player", "step_count"):
        np.testing.assert_array_equal(getattr(lhs, field), getattr(rhs, field), err_msg=field)
    # Non-vacuous: both wins and non-terminal results were exercised, and the
    # transformed action was legal (no forfeit) in every case.
    assert lhs.terminated.any() and (~lhs.terminated).any()
    assert (np.abs(lhs.rewards).sum(axis=1) == 2).any()
    assert np.all(lhs.step_count == np.sum(boards != -1, axis=1) + 1)


def test_transform_state_matches_geometry(env, sym, live_batch):
    """The transformed board is a true rotation/reflection of the grid, and the
    transformed observation/mask are the ones that board implies."""
    boards, _, g = live_batch
    out = jax.device_get(
        jax.jit(jax.vmap(lambda b, g: env.transform_state(state_from_board(b), g)))(boards, g)
    )
    from_board = jax.device_get(states_from_boards(out.board))
    np.testing.assert_array_equal(out.observation, from_board.observation)
    np.testing.assert_array_equal(out.legal_action_mask, from_board.legal_action_mask)
    np.testing.assert_array_equal(out.current_player, from_board.current_player)
    # Every (board, g) image is one of the 8 numpy D4 images of the board, and board
    # index 0 (identity) is unchanged.
    maps = d4_grid_maps()
    for i in range(0, len(boards), 37):
        grid = boards[i].reshape(3, 3)
        images = [m(grid).reshape(-1) for m in maps]
        assert any(np.array_equal(out.board[i], im) for im in images), i
        if g[i] == 0:
            np.testing.assert_array_equal(out.board[i], boards[i])


def test_observation_and_policy_maps(env, sym, live_batch):
    boards, actions, g = live_batch

    def check(board, a, g):
        s = state_from_board(board)
        t = env.transform_state(s, g)
        return (
            sym.observation(s.observation, g),
            t.observation,
            sym.policy(onehot(a), g),
            onehot(sym.action(a, g)),
            sym.policy(s.legal_action_mask, g),
            t.legal_action_mask,
        )

    obs_a, obs_b, pol_a, pol_b, mask_a, mask_b = jax.device_get(
        jax.jit(jax.vmap(check))(boards, actions, g)
    )
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(pol_a, pol_b)
    np.testing.assert_array_equal(mask_a, mask_b)
    # The transformed action is legal in the transformed position.
    assert np.all((pol_b * mask_b).sum(axis=1) == 1.0)


def test_policy_map_on_general_vectors(sym):
    """For any vector pi: policy(pi, g)[action(a, g)] == pi[a] (the policy follows the
    actions), and the observation map moves cell contents the same way."""
    rng = np.random.default_rng(0)
    pi = rng.random(9).astype(np.float32)
    obs = rng.random((3, 3, 3)) < 0.5
    for g in range(8):
        moved = np.asarray(sym.policy(jnp.asarray(pi), g))
        moved_obs = np.asarray(sym.observation(jnp.asarray(obs), g))
        for a in range(9):
            b = int(sym.action(a, g))
            assert moved[b] == pi[a]
            np.testing.assert_array_equal(moved_obs[b // 3, b % 3], obs[a // 3, a % 3])


def test_group_structure(sym):
    cell = np.asarray(sym.cell_perm)
    act = np.asarray(sym.action_perm)
    inv = np.asarray(sym.inverse_action_perm)
    assert sym.size == 8
    assert cell.shape == (8, 9) and act.shape == (8, 9)
    # Each row is a permutation; rows distinct; index 0 is the identity.
    for p in cell:
        assert sorted(p.tolist()) == list(range(9))
    assert len({tuple(p) for p in cell}) == 8
    np.testing.assert_array_equal(cell[0], np.arange(9))
    np.testing.assert_array_equal(act, cell)  # no extra (pass) actions in tic-tac-toe
    # inverse_action_perm inverts action_perm.
    for g in range(8):
        np.testing.assert_array_equal(act[g][inv[g]], np.arange(9))
        np.testing.assert_array_equal(inv[g][act[g]], np.arange(9))
    # Closed under composition (gathering by p then by q is gathering by p[q]).
    perms = {tuple(p) for p in cell}
    for p, q in itertools.product(cell, cell):
        assert tuple(p[q]) in perms
    # And they are exactly the 8 rotations/reflections of the 3x3 grid.
    grid = np.arange(9).reshape(3, 3)
    d4 = {tuple(m(grid).reshape(-1)) for m in d4_grid_maps()}
    assert perms == d4


def test_winning_is_invariant(env, sym):
    """For terminal and live boards, the outcome computed from the transformed board
    equals the original one (rewards and terminated unchanged)."""
    rng = np.random.default_rng(11)
    boards = random_reachable_boards(rng, 300, live_only=False)
    cell = np.asarray(sym.cell_perm)
    images = np.concatenate([boards[:, cell[g]] for g in range(8)])
    originals = np.tile(boards, (8, 1))
    a, b = jax.device_get((states_from_boards(originals), states_from_boards(images)))
    np.testing.assert_array_equal(a.rewards, b.rewards)
    np.testing.assert_array_equal(a.terminated, b.terminated)
    assert (np.abs(a.rewards).sum(axis=1) == 2).sum() > 20  # some wins in the sample
    # transform_state keeps rewards/terminated of the (terminal) state itself.
    t = jax.device_get(
        jax.jit(jax.vmap(lambda b, g: env.transform_state(state_from_board(b), g)))(
            originals, np.repeat(np.arange(8), len(boards))
        )
    )
    np.testing.assert_array_equal(t.rewards, a.rewards)
    np.testing.assert_array_equal(t.terminated, a.terminated)
