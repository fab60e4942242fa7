"""The sample-efficiency levers by their behaviour: search-control restarts
(`selfplay.restart_prob`), KataGo's cheap moves (`selfplay.cheap_moves='katago'`) and
reanalysis (`reanalyse_positions`), on tic-tac-toe.

Restarts and cheap moves run the jitted self-play of training (`make_play_fn`); the cheap
moves with a stand-in search whose policy tells whether the root noise was on. Reanalysis
runs whole training iterations (no gradient steps, so the network stays the one the test
searches with) and compares each reanalysed row with a fresh search of its state.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ttt_reference import winner

import envs
from azjax.core import replay as replay_lib
from azjax.core.device_split import misfits
from azjax.core.iteration import init_train_state, make_iteration_fn
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig, init_params, make_network
from azjax.core.program import ProgramConfig
from azjax.core.reanalyse import pick_rows, refreshed
from azjax.core.search import SearchConfig, deterministic, make_search_fn
from azjax.core.selfplay import SelfPlayConfig, init_games, katago_rows, make_play_fn

ENV = envs.make("tictactoe")
NET = make_network(ENV, NetworkConfig(channels=8, num_blocks=0, mlp_layers=1,
                                      value_hidden=8))
SEARCH = SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=4)


def boards(observation):
    """Absolute boards (-1 empty, 0 X, 1 O) [..., 9] of tic-tac-toe observations."""
    x_to_move = observation[..., 0, 0, 2]
    own = observation[..., 0].reshape(*observation.shape[:-3], 9)
    opp = observation[..., 1].reshape(*observation.shape[:-3], 9)
    mover = np.where(x_to_move, 0, 1)[..., None]
    return np.where(own, mover, np.where(opp, 1 - mover, -1)).astype(np.int8)


# ------------------------------------------------------------------------------ restarts


@pytest.fixture(scope="module")
def restarting_selfplay():
    """40 moves of 16 games, every played state archived (8 entries), every new game a
    restart once the archive holds a state."""
    config = SelfPlayConfig(num_games=16, steps_per_iteration=40, temperature_moves=2,
                            random_opening_moves=1, restart_prob=1.0, archive_size=8,
                            archive_prob=1.0)
    search_fn = make_search_fn(ENV, NET.apply, SEARCH)
    play = jax.jit(make_play_fn(ENV, search_fn, SEARCH, config))
    games = init_games(ENV, jax.random.key(0), config)
    params = init_params(ENV, NetworkConfig(channels=8, num_blocks=0, mlp_layers=1,
                                            value_hidden=8), jax.random.key(1))
    final, trajectory = play(params, SEARCH.as_arrays(), jax.random.key(2), games)
    return jax.device_get((games, final, trajectory))


def test_a_restart_game_starts_from_a_state_played_before(restarting_selfplay):
    _, _, trajectory = restarting_selfplay
    played = boards(trajectory.positions.observation)  # [S, B, 9]
    steps, slots = trajectory.ended.shape
    # The archive holds a state from the first move on: every game that ends restarts.
    np.testing.assert_array_equal(trajectory.restarted, trajectory.ended)
    assert trajectory.ended[:-1].sum() >= slots  # many restarts to check
    for t, b in zip(*np.nonzero(trajectory.ended[:-1])):
        start = played[t + 1, b]
        earlier = played[:t + 1].reshape(-1, 9)
        assert (earlier == start).all(axis=1).any(), (t, b)  # an archived, played state
        assert winner(list(start)) is None  # live
        ply = int(trajectory.positions.z[t + 1, b])  # the ply, until the game ends
        assert ply == np.sum(start != -1)


def test_restart_games_are_legal_games(restarting_selfplay):
    """Within each game, every ply adds one stone of the player to move on an empty
    cell, and the recorded end is a legal last move."""
    _, final, trajectory = restarting_selfplay
    played = boards(trajectory.positions.observation)
    steps, slots = trajectory.ended.shape
    for b in range(slots):
        for t in range(steps - 1):
            if trajectory.ended[t, b]:
                continue
            diff = np.flatnonzero(played[t, b] != played[t + 1, b])
            assert len(diff) == 1, (t, b)
            assert played[t, b, diff[0]] == -1
            assert played[t + 1, b, diff[0]] == trajectory.positions.player[t, b]
    assert not np.asarray(final.state.terminated).any()
    assert np.asarray(final.archived).all()  # every entry filled


def test_restarted_games_count_their_plies_from_the_restart(restarting_selfplay):
    """`start_ply` is the restart state's ply, so the opening and sampled plies count
    from there."""
    _, final, _ = restarting_selfplay
    restarted = np.asarray(final.start_ply) > 0
    assert restarted.any()
    assert np.all(np.asarray(final.start_ply) <= np.asarray(final.state.step_count))


def test_restarts_follow_restart_prob():
    """With an archive that holds states, a new game restarts with `restart_prob`."""
    from binomial import FALSE_FAILURE, interval

    from azjax.core.selfplay import new_games, restart_from_archive

    config = SelfPlayConfig(num_games=4000, restart_prob=0.3, archive_size=4)
    games = init_games(ENV, jax.random.key(3), config)
    archived = jnp.array([False, True, False, False])
    fresh = new_games(ENV, jax.random.key(4), config)
    step = jax.vmap(ENV.step)
    archive = step(games.archive, jnp.array([0, 4, 8, 2]))
    restarted_games, restart = jax.device_get(
        restart_from_archive(fresh, archive, archived, jax.random.key(5), config))
    low, high = interval(len(restart), 0.3, FALSE_FAILURE)
    assert low <= int(restart.sum()) <= high
    # Only the held entry (X on the centre) is ever drawn.
    board = np.asarray(restarted_games.state.board)
    np.testing.assert_array_equal(board[restart], np.tile(np.asarray(archive.board[1]),
                                                          (int(restart.sum()), 1)))
    assert (board[~restart] == -1).all()


# ------------------------------------------------------------------- KataGo's cheap moves

WEIGHTS = np.arange(1, 10, dtype=np.float32) ** 2  # the noiseless policy: cell a gets (a+1)^2


def noise_telling_search(params, search, key, states):
    """A stand-in search: with root noise on (gumbel_scale > 0) its policy favours the
    lowest empty cell, without it the highest; its move is its policy's argmax."""
    del params, key
    weights = jnp.where(search.gumbel_scale > 0, jnp.asarray(WEIGHTS[::-1]),
                        jnp.asarray(WEIGHTS))
    w = jnp.where(states.legal_action_mask, weights, 0.0)
    pi = w / w.sum(-1, keepdims=True)
    value = jnp.zeros(pi.shape[0], jnp.float32)
    tree = SimpleNamespace(summary=lambda: SimpleNamespace(value=value))
    return SimpleNamespace(action_weights=pi, action=jnp.argmax(pi, axis=-1),
                           search_tree=tree)


@pytest.mark.parametrize("cheap_moves", ["katago", "value_rows"])
def test_katago_cheap_moves_play_greedily_without_noise(cheap_moves):
    """KataGo's cheap moves are the noiseless search's greedy move whatever the
    temperature and random-move settings; azjax's first form keeps both."""
    config = SelfPlayConfig(num_games=64, steps_per_iteration=4, temperature_moves=9,
                            random_move_prob=0.5, full_search_prob=0.25,
                            cheap_simulations=2, cheap_moves=cheap_moves)
    play = jax.jit(make_play_fn(ENV, noise_telling_search, SEARCH, config,
                                cheap_search_fn=noise_telling_search))
    games = init_games(ENV, jax.random.key(6), config)
    final, trajectory = jax.device_get(play(None, SEARCH.as_arrays(), jax.random.key(7),
                                            games))
    assert not trajectory.ended.any()
    played = boards(trajectory.positions.observation)
    after = np.concatenate([played[1:], np.asarray(final.state.board)[None]])
    moves = np.argmax((after != -1) & (played == -1), axis=-1)  # [S, B]
    empty = played == -1
    highest = 8 - np.argmax(empty[..., ::-1], axis=-1)
    full = trajectory.positions.full_search
    assert (full.sum(axis=1) == 16).all()
    cheap = ~full
    if cheap_moves == "katago":
        np.testing.assert_array_equal(moves[cheap], highest[cheap])
    else:  # sampled and random moves: many cheap moves are not the greedy one
        assert (moves[cheap] != highest[cheap]).mean() > 0.3
    # Full searches keep their noise: their policy favours the lowest empty cell.
    lowest = np.argmax(empty, axis=-1)
    top = np.argmax(trajectory.positions.policy, axis=-1)
    np.testing.assert_array_equal(top[full], lowest[full])
    if cheap_moves == "katago":
        np.testing.assert_array_equal(top[cheap], highest[cheap])


def test_katago_rows_keep_the_full_searches_in_order():
    config = SelfPlayConfig(num_games=8, steps_per_iteration=3, full_search_prob=0.25,
                            cheap_simulations=2, cheap_moves="katago")
    rng = np.random.default_rng(0)
    full = np.zeros((3, 8), bool)
    for t in range(3):
        full[t, rng.choice(8, 2, replace=False)] = True
    positions = replay_lib.Positions(
        observation=jnp.zeros((24, 3, 3, 3), jnp.bool_), policy=jnp.zeros((24, 9)),
        player=jnp.arange(24, dtype=jnp.int32), search_value=jnp.zeros(24),
        z=jnp.zeros(24), has_z=jnp.zeros(24, jnp.bool_),
        slot=jnp.tile(jnp.arange(8, dtype=jnp.int32), 3),
        full_search=jnp.asarray(full.reshape(-1)))
    kept = katago_rows(positions, config)
    assert kept.full_search is None
    np.testing.assert_array_equal(kept.player, np.flatnonzero(full.reshape(-1)))


def small_program(**changes) -> ProgramConfig:
    program = ProgramConfig(
        game="tictactoe", network=NetworkConfig(channels=8, num_blocks=0, mlp_layers=1,
                                                value_hidden=8),
        search=SearchConfig(policy="puct", num_simulations=4),
        selfplay=SelfPlayConfig(num_games=16, steps_per_iteration=6),
        learner=LearnerConfig(batch_size=16), replay_capacity=512, gradient_steps=0)
    return dataclasses.replace(program, **changes)


def test_katago_cheap_moves_write_no_rows():
    """An iteration writes exactly the full searches' rows: S x F of them."""
    program = small_program(selfplay=SelfPlayConfig(
        num_games=16, steps_per_iteration=6, full_search_prob=0.25, cheap_simulations=2,
        cheap_moves="katago"))
    state = init_train_state(ENV, program, jax.random.key(8))
    assert state.replay.data.full_search is None
    state, _ = jax.jit(make_iteration_fn(ENV, program))(state)
    assert int(state.replay.size) == 6 * 4 == program.rows_per_iteration


# -------------------------------------------------------------------------- reanalysis


@pytest.fixture(scope="module")
def reanalysed_iterations():
    """Three iterations of the same run with and without reanalysis (same keys, no
    gradient steps), the last one's replays before and after, and the run's network."""
    plain = small_program()
    program = small_program(reanalyse_positions=32)
    runs = []
    for config in (plain, program):
        state = init_train_state(ENV, config, jax.random.key(9))
        iteration = jax.jit(make_iteration_fn(ENV, config))
        for _ in range(3):
            state, _ = iteration(state)
        runs.append(jax.device_get(state))
    return program, runs


def test_a_reanalysed_row_holds_a_fresh_search_of_its_state(reanalysed_iterations):
    program, (plain, reanalysing) = reanalysed_iterations
    before, after = plain.replay.data, reanalysing.replay.data
    # Self-play is untouched: the same positions, outcomes and states.
    np.testing.assert_array_equal(before.observation, after.observation)
    np.testing.assert_array_equal(before.z, after.z)
    changed = np.flatnonzero(np.any(np.abs(before.policy - after.policy) > 1e-6, axis=1))
    assert 0 < len(changed) <= 3 * program.reanalyse_positions
    assert after.has_z[changed].all()
    # Each changed row now holds a noiseless search of its stored state by the network.
    search_fn = make_search_fn(ENV, make_network(ENV, program.network,
                                                 gradients=False).apply, program.search)
    states = jax.tree.map(lambda x: x[changed], after.state)
    np.testing.assert_array_equal(np.asarray(states.observation),
                                  after.observation[changed])
    fresh = jax.jit(search_fn)(reanalysing.params, deterministic(program.search.as_arrays()),
                               jax.random.key(10), states)
    # PUCT without noise is deterministic: the key only breaks exact ties.
    np.testing.assert_allclose(after.policy[changed], np.asarray(fresh.action_weights),
                               atol=1e-6)
    np.testing.assert_allclose(after.search_value[changed],
                               np.asarray(fresh.search_tree.summary().value), atol=1e-5)


def test_refreshed_rewrites_only_rows_with_an_outcome(reanalysed_iterations):
    """Drawn rows are distinct, those with an outcome first; asked for more rows than
    have one, the rows without keep their targets."""
    program, (_, reanalysing) = reanalysed_iterations
    replay = jax.tree.map(jnp.asarray, reanalysing.replay)
    known = int(replay_lib.num_sampleable(replay))
    count = known + 64
    assert count <= replay.capacity
    rows = pick_rows(replay, jax.random.key(12), count)
    assert len(np.unique(np.asarray(rows))) == count
    has_z = np.asarray(replay.data.has_z)[np.asarray(rows)]
    assert has_z[:known].all() and not has_z[known:].any()
    search_fn = make_search_fn(ENV, make_network(ENV, program.network,
                                                 gradients=False).apply, program.search)
    other = init_params(ENV, program.network, jax.random.key(13))
    new = jax.jit(lambda replay, rows, params, key: refreshed(
        replay, rows, search_fn, params, program.search.as_arrays(), key))(
        replay, rows, other, jax.random.key(14))
    untouched = np.setdiff1d(np.arange(replay.capacity), np.asarray(rows)[has_z])
    np.testing.assert_array_equal(np.asarray(new.data.policy)[untouched],
                                  np.asarray(replay.data.policy)[untouched])
    assert not np.array_equal(np.asarray(new.data.policy), np.asarray(replay.data.policy))


# ------------------------------------------------------------------------------- checks


def test_the_levers_refuse_what_cannot_work():
    with pytest.raises(ValueError, match="augment 'sample' or 'none'"):
        small_program(reanalyse_positions=8, augment="write")
    with pytest.raises(ValueError, match="at most replay_capacity"):
        small_program(reanalyse_positions=1024)
    with pytest.raises(ValueError, match="restart_prob"):
        SelfPlayConfig(restart_prob=1.5)
    with pytest.raises(ValueError, match="cheap_moves"):
        SelfPlayConfig(cheap_moves="fast")
    program = small_program(reanalyse_positions=6, selfplay=SelfPlayConfig(
        num_games=16, steps_per_iteration=6, restart_prob=0.5, archive_size=7))
    wrong = " ".join(misfits(program, 2))
    assert "selfplay.archive_size 7" in wrong and "reanalyse_positions" not in wrong
    odd = dataclasses.replace(program, reanalyse_positions=3)
    assert "reanalyse_positions 3" in " ".join(misfits(odd, 2))
