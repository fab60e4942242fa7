"""Batched self-play (`azjax/selfplay.py`): outcome labelling and recorded games."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from azjax.core import replay as replay_lib
from azjax.core.networks import PolicyValueNet
from azjax.core.outcomes import assign_outcomes
from azjax.core.search import SearchConfig, make_search_fn
from azjax.core.selfplay import (
    SelfPlayConfig,
    Trajectory,
    init_games,
    make_play_fn,
)

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def winner(b):
    for x, y, z in LINES:
        if b[x] != -1 and b[x] == b[y] == b[z]:
            return b[x]
    return None


# --------------------------------------------------------------------------------------
# assign_outcomes against a plain-Python reference
# --------------------------------------------------------------------------------------

S, B = 12, 5


def synthetic_trajectory(rng, end_prob):
    positions = replay_lib.Positions(
        observation=jnp.asarray(rng.random((S, B, 3, 3, 3)) < 0.5),
        policy=jnp.asarray(rng.random((S, B, 9)).astype(np.float32)),
        player=jnp.asarray(rng.integers(0, 2, (S, B)).astype(np.int32)),
        search_value=jnp.asarray(rng.uniform(-1, 1, (S, B)).astype(np.float32)),
        z=jnp.asarray(rng.integers(0, 5, (S, B)).astype(np.float32)),  # plies
        has_z=jnp.zeros((S, B), bool),
        slot=jnp.asarray(np.broadcast_to(np.arange(B, dtype=np.int32), (S, B))),
    )
    ended = rng.random((S, B)) < end_prob
    outcome = rng.choice(np.array([-1.0, 0.0, 1.0], np.float32), (S, B))
    return Trajectory(
        positions=positions,
        ended=jnp.asarray(ended),
        outcome=jnp.asarray(outcome),
        game_length=jnp.asarray(rng.integers(5, 10, (S, B)).astype(np.int32)),
    )


def reference_outcomes(ended, outcome, length, player, ply, discount=1.0):
    z = ply.copy()  # pending positions keep their ply
    has_z = np.zeros((S, B), bool)
    first_end = np.zeros(B, bool)
    first_outcome = np.zeros(B, np.float32)
    first_length = np.zeros(B, np.int32)
    for b in range(B):
        for t in range(S):
            for u in range(t, S):
                if ended[u, b]:
                    has_z[t, b] = True
                    plies_left = max(int(length[u, b]) - 1 - int(ply[t, b]), 0)
                    z[t, b] = (outcome[u, b] * (1.0 if player[t, b] == 0 else -1.0)
                               * discount ** plies_left)
                    break
        ends = [u for u in range(S) if ended[u, b]]
        if ends:
            first_end[b] = True
            first_outcome[b] = outcome[ends[0], b]
            first_length[b] = length[ends[0], b]
    return z, has_z, first_end, first_outcome, first_length


@pytest.fixture(scope="module")
def jit_assign():
    return jax.jit(assign_outcomes, static_argnums=1)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), end_prob=st.sampled_from([0.0, 0.1, 0.3, 0.7, 1.0]),
       discount=st.sampled_from([1.0, 0.9]))
def test_assign_outcomes_matches_reference(jit_assign, seed, end_prob, discount):
    rng = np.random.default_rng(seed)
    traj = synthetic_trajectory(rng, end_prob)
    flat, first_end, first_outcome, first_length = jax.device_get(jit_assign(traj, discount))
    host = jax.device_get(traj)
    z, has_z, ref_first_end, ref_first_outcome, ref_first_length = reference_outcomes(
        host.ended, host.outcome, host.game_length, host.positions.player, host.positions.z,
        discount)
    # Flattened time-major: row t*B + b is (t, b).
    np.testing.assert_array_equal(flat.has_z, has_z.reshape(-1))
    np.testing.assert_allclose(flat.z, z.reshape(-1), rtol=1e-6)
    np.testing.assert_array_equal(first_end, ref_first_end)
    np.testing.assert_array_equal(first_outcome[first_end], ref_first_outcome[ref_first_end])
    np.testing.assert_array_equal(first_length[first_end], ref_first_length[ref_first_end])
    for k in ("observation", "policy", "player", "search_value", "slot"):
        src = getattr(host.positions, k)
        np.testing.assert_array_equal(
            getattr(flat, k), src.reshape(S * B, *src.shape[2:]), err_msg=k
        )


def test_assign_outcomes_hand_example(jit_assign):
    # Slot 0: ends at t=3 (X won, +1) and at t=7 (O won, -1).
    # Position (t=2, player 1) -> first end at/after t=2 is t=3: z = +1 * -1 = -1.
    # Position (t=3, player 0) -> the ending move itself belongs to that game: z = +1.
    # Position (t=5, player 0) -> t=7: z = -1.  Position (t=9) -> no end: has_z False.
    rng = np.random.default_rng(0)
    traj = synthetic_trajectory(rng, 0.0)
    ended = np.zeros((S, B), bool)
    outcome = np.zeros((S, B), np.float32)
    player = np.zeros((S, B), np.int32)
    ended[3, 0], outcome[3, 0] = True, 1.0
    ended[7, 0], outcome[7, 0] = True, -1.0
    player[2, 0] = 1
    traj = traj.replace(
        ended=jnp.asarray(ended),
        outcome=jnp.asarray(outcome),
        positions=traj.positions.replace(player=jnp.asarray(player)),
    )
    flat, first_end, first_outcome, _ = jax.device_get(jit_assign(traj, 1.0))
    row = lambda t, b: t * B + b  # noqa: E731
    assert flat.has_z[row(2, 0)] and flat.z[row(2, 0)] == -1.0
    assert flat.has_z[row(3, 0)] and flat.z[row(3, 0)] == 1.0
    assert flat.has_z[row(5, 0)] and flat.z[row(5, 0)] == -1.0
    assert not flat.has_z[row(9, 0)]
    assert not flat.has_z[row(0, 1)]  # slot 1 never ended
    np.testing.assert_array_equal(first_end, [True, False, False, False, False])
    assert first_outcome[0] == 1.0


# --------------------------------------------------------------------------------------
# make_play_fn on tic-tac-toe
# --------------------------------------------------------------------------------------

NUM_GAMES = 8
STEPS = 20


@pytest.fixture(scope="module")
def selfplay_run():
    env = envs.make("tictactoe")
    net = PolicyValueNet(env.num_actions)
    search_config = SearchConfig(policy="gumbel", num_simulations=8)
    search_fn = make_search_fn(env, lambda p, o: net.apply(p, o), search_config)
    config = SelfPlayConfig(
        num_games=NUM_GAMES, steps_per_iteration=STEPS, random_move_prob=0.1,
        random_opening_moves=3,
    )
    play = jax.jit(make_play_fn(env, search_fn, search_config, config))
    games = init_games(env, jax.random.key(0), config)
    params = net.init(jax.random.key(1), games.state.observation)
    new_games, traj = play(params, search_config.as_arrays(), jax.random.key(2), games)
    return jax.device_get((new_games.state, traj))


def board_from_observation(obs):
    """Absolute board (-1 empty, 0 X, 1 O) and mover from a [3, 3, 3] observation."""
    mover = 0 if obs[0, 0, 2] else 1
    assert np.all(obs[:, :, 2] == obs[0, 0, 2])
    own = obs[:, :, 0].reshape(-1)
    opp = obs[:, :, 1].reshape(-1)
    assert not np.any(own & opp)
    board = np.full(9, -1, np.int8)
    board[own] = mover
    board[opp] = 1 - mover
    return board, mover


def test_returned_states_are_live(selfplay_run):
    states, _ = selfplay_run
    assert not np.any(states.terminated)
    assert np.all(states.legal_action_mask.any(axis=1))


def test_policies_only_on_legal_moves(selfplay_run):
    _, traj = selfplay_run
    obs = traj.positions.observation  # [S, B, 3, 3, 3]
    empty = ~(obs[..., 0] | obs[..., 1]).reshape(STEPS, NUM_GAMES, 9)
    pi = traj.positions.policy
    assert np.all(pi >= 0)
    np.testing.assert_allclose(pi.sum(-1), 1.0, rtol=1e-5)
    assert np.all(pi[~empty] == 0.0)
    np.testing.assert_array_equal(
        traj.positions.slot, np.broadcast_to(np.arange(NUM_GAMES), (STEPS, NUM_GAMES))
    )
    assert not np.any(traj.positions.has_z)
    assert np.all(np.abs(traj.positions.search_value) <= 1.0 + 1e-6)


def test_finished_games_are_legal(selfplay_run):
    _, traj = selfplay_run
    obs = traj.positions.observation
    assert np.all(traj.game_length[traj.ended] >= 5)
    assert np.all(traj.game_length[traj.ended] <= 9)
    assert traj.ended.sum() >= NUM_GAMES  # 20 plies per slot: every slot finished a game
    finished = 0
    for b in range(NUM_GAMES):
        start = 0  # all slots begin with a fresh game at t = 0
        for t in range(STEPS):
            board, mover = board_from_observation(obs[t, b])
            assert traj.positions.player[t, b] == mover
            ply = t - start
            # Position ply k of a game has k stones and X to move iff k is even.
            assert np.sum(board != -1) == ply
            assert mover == ply % 2
            assert winner(list(board)) is None  # recorded positions are live
            if ply > 0:
                prev, prev_mover = board_from_observation(obs[t - 1, b])
                diff = np.flatnonzero(prev != board)
                # Exactly one new stone, on an empty cell, of the previous mover.
                assert len(diff) == 1
                assert prev[diff[0]] == -1 and board[diff[0]] == prev_mover
            if traj.ended[t, b]:
                # The last move (not recorded) must be a legal move ending the game with
                # the recorded outcome after game_length plies.
                length = int(traj.game_length[t, b])
                assert length == ply + 1
                outcome = float(traj.outcome[t, b])
                endings = []
                for m in np.flatnonzero(board == -1):
                    nb = board.copy()
                    nb[m] = mover
                    w = winner(list(nb))
                    if w is not None:
                        endings.append(1.0 if w == 0 else -1.0)
                    elif np.all(nb != -1):
                        endings.append(0.0)
                assert outcome in endings, (b, t, board, outcome)
                finished += 1
                start = t + 1
    assert finished == traj.ended.sum()


@pytest.mark.parametrize("discount", [1.0, 0.9])
def test_assign_outcomes_on_selfplay(selfplay_run, discount):
    """z labels of real self-play: within a finished game, the winner's positions get
    +1 and the loser's -1 (0 for draws), times discount^(plies to the end); has_z
    exactly for games ended in the window; a pending position holds its ply."""
    _, traj = selfplay_run
    flat, first_end, _, first_length = jax.device_get(assign_outcomes(traj, discount))
    z = flat.z.reshape(STEPS, NUM_GAMES)
    has_z = flat.has_z.reshape(STEPS, NUM_GAMES)
    for b in range(NUM_GAMES):
        ends = np.flatnonzero(traj.ended[:, b])
        assert first_end[b] == (len(ends) > 0)
        if len(ends):
            assert first_length[b] == ends[0] + 1  # every game starts in this window
        last = ends[-1] if len(ends) else -1
        np.testing.assert_array_equal(has_z[:, b], np.arange(STEPS) <= last)
        np.testing.assert_array_equal(z[last + 1:, b], np.arange(STEPS - last - 1))
        start = 0
        for e in ends:
            outcome = traj.outcome[e, b]
            for t in range(start, e + 1):
                player = traj.positions.player[t, b]
                want = (outcome if player == 0 else -outcome) * discount ** (e - t)
                assert z[t, b] == pytest.approx(want, rel=1e-6)
            start = e + 1
