"""Self-play and training options seen through the jitted training iteration
(`azjax.core.iteration`): temperature moves, Dirichlet root noise, the value-target mix and the
symmetry augmentation modes, on tic-tac-toe.

Three programs serve every test (each costs a compilation): one ply of self-play per
iteration in 64 games with PUCT (whose action weights are the root visit shares and whose
greedy move is one of the largest share) and one gradient step, with augment 'none',
'write' and 'sample'. The network is usually replaced by one with a fixed prior and value 0.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax import TrainConfig
from azjax.core import replay as replay_lib
from azjax.core.iteration import init_train_state, make_iteration_fn
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig, make_network
from azjax.core.search import SearchConfig
from azjax.core.selfplay import Games, SelfPlayConfig
from envs.tictactoe import state_from_board

GAMES = 64
PLAIN = TrainConfig().replace(
    network=NetworkConfig(channels=8, policy_filters=2, value_hidden=8),
    search=SearchConfig(policy="puct", num_simulations=8),
    selfplay=SelfPlayConfig(num_games=GAMES, steps_per_iteration=1, temperature_moves=3),
    learner=LearnerConfig(batch_size=64),
    replay_capacity=16 * GAMES,
    gradient_steps=1,
    augment="none",
    value_target_mix=0.25,
).program
WRITE = dataclasses.replace(PLAIN, augment="write", value_target_mix=1.0)
SAMPLE = dataclasses.replace(PLAIN, augment="sample")


@pytest.fixture(scope="module")
def env():
    return envs.make("tictactoe")


@pytest.fixture(scope="module")
def iterate(env):
    """`iterate(program, state) -> (state, metrics)` on the host: one jitted iteration,
    compiled once per program (traced settings travel in the state)."""
    cache = {}

    def run(program, state):
        key = program.compile_key()
        if key not in cache:
            cache[key] = jax.jit(make_iteration_fn(env, program))
        return jax.device_get(cache[key](state))

    return run


def fixed_prior(params, logits=(0.0,) * 9):
    """Parameters of a network whose policy logits are `logits` everywhere and whose
    value is 0 (all weights zero but the policy head's bias)."""
    params = jax.tree.map(jnp.zeros_like, params)
    params["params"]["Dense_0"]["bias"] = jnp.asarray(logits, jnp.float32)
    return params


def boards(observation):
    """Absolute boards [N, 9] (-1 empty, 0 X, 1 O) from mover-relative observations."""
    mover = np.where(observation[:, 0, 0, 2], 0, 1)[:, None]
    own = observation[..., 0].reshape(-1, 9)
    opp = observation[..., 1].reshape(-1, 9)
    return np.where(own, mover, np.where(opp, 1 - mover, -1))


def written_rows(before, after):
    """The replay rows an iteration wrote (from `before`'s insert index to `after`'s)."""
    start, capacity = int(before.replay.insert_index), after.replay.capacity
    index = (start + np.arange((int(after.replay.insert_index) - start) % capacity)) % capacity
    return jax.tree.map(lambda x: np.asarray(x)[index], after.replay.data)


# ------------------------------------------------------------------- temperature_moves


def test_temperature_moves_sample_early_plies_and_play_greedy_after(env, iterate):
    """Plies < temperature_moves are sampled from the visit shares; later plies play a
    move of the largest share, where several are tied not always the first of them. Six
    plies of 64 games with a uniform prior and value 0 (visits spread)."""
    state = init_train_state(env, PLAIN, jax.random.key(0))
    state = state.replace(params=fixed_prior(state.params))
    early, late = [], []
    for _ in range(6):
        new_state, _ = iterate(PLAIN, state)
        rows = written_rows(state, new_state)
        before = boards(rows.observation)
        after = np.asarray(new_state.selfplay.state.board)
        for b in range(GAMES):
            new = np.flatnonzero(before[b] != after[b])
            if len(new) != 1 or before[b, new[0]] != -1:
                continue  # the move ended the game: its slot holds a fresh one
            ply = np.sum(before[b] != -1)
            (early if ply < PLAIN.selfplay.temperature_moves else late).append(
                (int(new[0]), rows.policy[b]))
        state = new_state
    assert len(late) > 50
    assert all(pi[move] == pi.max() for move, pi in late)
    tied = [(move, pi) for move, pi in late if np.sum(pi == pi.max()) > 1]
    # Ties go to the higher root prior, which the Dirichlet noise makes favour no move
    # number: many play another move than the first tied one (an argmax over the counts
    # never would).
    assert len(tied) >= 60
    assert sum(move != np.argmax(pi) for move, pi in tied) > len(tied) / 4
    assert all(pi[move] > 0 for move, pi in early)
    # A sample misses the argmax with probability 1 - max(pi), independently given pi:
    # with mu the sum of those, P(misses <= mu / 2) <= exp(-mu / 8) < 6e-4 for mu >= 60.
    mu = sum(1 - pi.max() for _, pi in early)
    misses = sum(move != np.argmax(pi) for move, pi in early)
    assert mu >= 60
    assert misses > mu / 2


# --------------------------------------------------------------------- Dirichlet noise

# A prior of distinct probabilities (0.072 up to 0.160 for the favourite, the last move)
# and value 0 everywhere: with all values equal, PUCT spreads the visits by the prior
# alone, so the root visit shares are a function of the prior the search sees, and its
# favourite gets the most visits (2 of 8 here, the others 1 or 0).
PRIOR_LOGITS = 0.1 * np.arange(9)


def root_visits(env, iterate, fraction, seed):
    """The visit shares of 64 games' first moves, `search.dirichlet_fraction` set in the
    config only."""
    program = dataclasses.replace(
        PLAIN, search=dataclasses.replace(PLAIN.search, dirichlet_fraction=fraction))
    state = init_train_state(env, program, jax.random.key(seed))
    state = state.replace(params=fixed_prior(state.params, PRIOR_LOGITS))
    new_state, _ = iterate(program, state)
    rows = written_rows(state, new_state)
    assert np.all(rows.observation == np.asarray(env.init(jax.random.key(0)).observation))
    return rows.policy


def test_root_prior_is_the_networks_without_dirichlet_noise(env, iterate):
    visits = root_visits(env, iterate, 0.0, seed=0)
    np.testing.assert_array_equal(visits, np.broadcast_to(visits[0], visits.shape))
    assert visits[0, 8] == visits[0].max() > visits[0, 0]


def test_dirichlet_noise_from_the_config_reaches_self_play_roots(env, iterate):
    visits = root_visits(env, iterate, 0.25, seed=0)
    other = root_visits(env, iterate, 0.25, seed=1)
    # A quarter of the prior is Dir(0.3) noise over 9 moves, whose largest share (0.49 on
    # average) alone outweighs the favourite's margin (at most 0.75 * 0.088) in most
    # games: the favourite loses its lead (in 69.5% of 1,984 games over 31 keys; below
    # 40% of 64 with probability < 1e-4 for a rate >= 65%), and the shares differ
    # between games and between keys.
    assert np.mean(visits[:, 8] < visits.max(axis=1)) > 0.4
    assert len(np.unique(visits, axis=0)) > GAMES / 2
    assert np.mean(np.any(visits != other, axis=1)) > 0.5


# ------------------------------------------------------------- learner side: a fixed replay

# The replay is prefilled with copies of one position (outcome known); the iteration's
# one ply of self-play from fresh games ends none, so every position of the gradient step
# is one of those copies: the step's losses are those of that position alone (or of its
# symmetric copies, with augment='sample').
BOARD = np.array([0, 0, -1, -1, 1, -1, -1, -1, -1])  # X X . / . O . / . . . : O to move
POLICY = np.array([0, 0, 0.6, 0.3, 0, 0.1, 0, 0, 0], np.float32)
Z, SEARCH_VALUE = 1.0, -0.5


# Compiled once per batch size: eagerly, each of its operations would compile alone.
states_from_boards = jax.jit(jax.vmap(state_from_board))


def board_state(board):
    """The (unbatched, host) state of one absolute board."""
    return jax.tree.map(lambda x: np.asarray(x)[0], states_from_boards(jnp.asarray(board)[None]))


def prefilled_state(env, program):
    state = init_train_state(env, program, jax.random.key(0))
    position = board_state(BOARD)
    one = replay_lib.Positions(
        observation=position.observation[None], policy=POLICY[None],
        player=position.current_player[None], search_value=np.float32([SEARCH_VALUE]),
        z=np.float32([Z]), has_z=np.ones(1, bool), slot=np.int32([-1]),
    )
    capacity = program.replay_capacity
    # built in NumPy (nothing to compile), then as the replay's arrays
    data = jax.tree.map(lambda x: jnp.asarray(np.repeat(x, capacity, axis=0)), one)
    return state.replace(replay=replay_lib.ReplayState(
        data=data, insert_index=jnp.int32(0), size=jnp.int32(capacity)))


def d4(grid):
    """The 8 rotations and reflections of [3, 3, ...] arrays (NumPy's, not the game's)."""
    return [np.flip(np.rot90(grid, k), axis=1) if flip else np.rot90(grid, k)
            for k in range(4) for flip in (False, True)]


@functools.cache
def network_apply(env, network):
    """The network's log-policy and value, compiled once per network config."""
    net = make_network(env, network)

    def apply(params, observations):
        logits, value = net.apply(params, observations)
        return jax.nn.log_softmax(logits), value

    return jax.jit(apply)


def network_on(env, program, params, observations):
    log_p, value = network_apply(env, program.network)(params, jnp.asarray(observations))
    return np.asarray(log_p), np.asarray(value)


@pytest.mark.parametrize("program", [PLAIN, WRITE], ids=lambda p: f"mix={p.value_target_mix}")
def test_value_target_is_the_stated_mix_of_z_and_search_value(env, iterate, program):
    """value_target_mix m: the value target is (1 - m) * z + m * search root value."""
    state = prefilled_state(env, program)
    _, value = network_on(env, program, state.params, board_state(BOARD).observation[None])
    _, metrics = iterate(program, state)
    mix = program.value_target_mix
    target = (1 - mix) * Z + mix * SEARCH_VALUE
    assert float(metrics["value_loss"]) == pytest.approx((target - value[0]) ** 2, rel=1e-5)


def policy_losses_under_symmetries(env, program, params):
    """The policy loss of the prefilled position under each of the 8 symmetries."""
    observations = np.stack(d4(board_state(BOARD).observation))
    policies = np.stack([p.reshape(9) for p in d4(POLICY.reshape(3, 3))])
    log_p, _ = network_on(env, program, params, observations)
    return -np.sum(policies * log_p, axis=1)  # the identity first


def test_augment_none_trains_on_the_positions_as_written(env, iterate):
    state = prefilled_state(env, PLAIN)
    losses = policy_losses_under_symmetries(env, PLAIN, state.params)
    _, metrics = iterate(PLAIN, state)
    assert float(metrics["policy_loss"]) == pytest.approx(losses[0], rel=1e-5)


def test_augment_sample_trains_on_random_symmetric_copies(env, iterate):
    """With log p(a) = a + const everywhere, a copy's policy loss is const minus the mean
    cell index under its policy: 2.6 for the position as written, 4.0 on average over
    the 8 symmetries, from 1.8 to 6.2."""
    state = prefilled_state(env, SAMPLE)
    state = state.replace(params=fixed_prior(state.params, np.arange(9.0)))
    losses = policy_losses_under_symmetries(env, SAMPLE, state.params)
    _, metrics = iterate(SAMPLE, state)
    # Each of the batch's 64 copies gets a uniform symmetry: the loss is the mean of 64
    # draws from the 8 losses. Hoeffding: P(|mean - E| >= 0.28 * range)
    # <= 2 exp(-2 * 64 * 0.28**2) < 1e-4; the loss as written is 0.32 * range from E.
    assert abs(float(metrics["policy_loss"]) - losses.mean()) < 0.28 * np.ptp(losses)
    assert abs(losses[0] - losses.mean()) > 0.3 * np.ptp(losses)


# ----------------------------------------------------------------- augment: replay contents


@pytest.fixture(scope="module")
def midgame(env):
    """A fresh run whose 64 games stand at plies 0-4 of random play."""
    rng = np.random.default_rng(0)
    start = []
    for b in range(GAMES):
        board = np.full(9, -1)
        for ply in range(b % 5):
            board[rng.choice(np.flatnonzero(board == -1))] = ply % 2
        start.append(board)
    states = states_from_boards(jnp.asarray(np.stack(start)))
    state = init_train_state(env, PLAIN, jax.random.key(0))
    # Value 0 keeps the search's numbers exact whichever program computes them.
    return state.replace(params=fixed_prior(state.params, PRIOR_LOGITS),
                         selfplay=Games(state=states, opening_length=jnp.zeros(GAMES, jnp.int32)))


def rows_as_set(data):
    """The replay's rows as a sorted list of tuples (an order-free comparison)."""
    return sorted(
        (o.tobytes(), p.tobytes(), int(pl), float(v), float(z), bool(h), int(s))
        for o, p, pl, v, z, h, s in zip(data.observation, data.policy, data.player,
                                        data.search_value, data.z, data.has_z, data.slot)
    )


def test_augment_none_writes_exactly_the_played_positions(iterate, midgame):
    new_state, _ = iterate(PLAIN, midgame)
    rows = written_rows(midgame, new_state)
    games = jax.device_get(midgame.selfplay.state)
    np.testing.assert_array_equal(rows.observation, games.observation)
    np.testing.assert_array_equal(rows.player, games.current_player)
    np.testing.assert_array_equal(rows.slot, np.arange(GAMES))
    np.testing.assert_allclose(rows.policy.sum(axis=1), 1.0, rtol=1e-6)


def test_augment_write_writes_the_8_symmetric_copies_of_each_position(iterate, midgame):
    """'write' stores, for each position 'none' stores, its 8 board transforms with the
    policy transformed alike (the same search: same state, same key)."""
    played = written_rows(midgame, iterate(PLAIN, midgame)[0])
    written = written_rows(midgame, iterate(WRITE, midgame)[0])
    expected = [
        (obs, pi.reshape(9), *(getattr(played, k)[i] for k in
                               ("player", "search_value", "z", "has_z", "slot")))
        for i in range(GAMES)
        for obs, pi in zip(d4(played.observation[i]), d4(played.policy[i].reshape(3, 3)))
    ]
    expected = replay_lib.Positions(*(np.stack(column) for column in zip(*expected)))
    assert len(written.player) == 8 * GAMES
    assert rows_as_set(written) == rows_as_set(expected)


def test_the_replay_counts_positions_not_their_symmetric_copies(iterate, midgame):
    """`replay_sampleable`, which `learn_after` is compared with, counts positions with a
    known outcome: the same under 'write', which stores 8 copies of each, as under
    'none' (the same search: same state, same key)."""
    played, played_metrics = iterate(PLAIN, midgame)
    written, written_metrics = iterate(WRITE, midgame)
    resolved = int(np.sum(played.replay.data.has_z))
    assert resolved > 0  # some games end at this ply
    assert int(np.sum(written.replay.data.has_z)) == 8 * resolved
    assert played_metrics["replay_sampleable"] == written_metrics["replay_sampleable"] == resolved
