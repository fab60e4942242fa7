"""KataGo's auxiliary targets and playout cap randomisation: the network's heads, their
losses, how the final ownership and score reach the replay ring, and training on 5x5 Go."""

from __future__ import annotations

import dataclasses
import functools
import types

import go_tiny
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from azjax.core import replay as replay_lib
from azjax.core.learner import alphazero_loss, auxiliary_losses
from azjax.core.networks import NetworkConfig, abstract_params, make_network
from azjax.core.outcomes import assign_outcomes, first_finals
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import (
    SelfPlayConfig,
    Trajectory,
    cheap_search_config,
    init_games,
    make_play_fn,
)
from azjax.core.stacked import stack

S, B, CELLS = 10, 4, 6


# --------------------------------------------------------------------------------------
# The network's heads
# --------------------------------------------------------------------------------------

def test_heads_leave_the_policy_value_network_as_it_was():
    """A network with heads has the plain network's parameters plus 'ownership' and
    'score' (so checkpoints of either layout name the same layers), computes the same
    policy and value from the same weights of those, and its heads have the board's
    shape. (Weights drawn with NumPy: nothing to compile for them.)"""
    env = envs.make("go", size=5, history=2)
    plain = NetworkConfig(channels=8, num_blocks=1)
    heads = dataclasses.replace(plain, ownership_head=True, score_head=True)
    shapes_plain, shapes_heads = abstract_params(env, plain), abstract_params(env, heads)
    inner = dict(shapes_heads["params"])
    assert set(inner) - set(shapes_plain["params"]) == {"ownership", "score"}
    del inner["ownership"], inner["score"]
    assert jax.tree.map(jnp.shape, inner) == jax.tree.map(jnp.shape,
                                                          dict(shapes_plain["params"]))
    rng = np.random.default_rng(3)
    params_heads = jax.tree.map(lambda leaf: rng.normal(0, 0.3, leaf.shape).astype(leaf.dtype),
                                shapes_heads)
    params_plain = {"params": {name: layer for name, layer in params_heads["params"].items()
                               if name not in ("ownership", "score")}}
    obs = jax.random.bernoulli(jax.random.key(4), 0.3, (3, *env.observation_shape))
    logits, value = make_network(env, plain).apply(params_plain, obs)
    logits2, value2, out = make_network(env, heads).apply(params_heads, obs, aux=True)
    np.testing.assert_allclose(logits, logits2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value, value2, rtol=1e-5, atol=1e-6)
    assert out["ownership"].shape == (3, 25) and out["score"].shape == (3,)
    assert float(jnp.max(jnp.abs(out["ownership"]))) <= 1.0
    plain_aux = functools.partial(make_network(env, plain).apply, aux=True)
    assert jax.eval_shape(plain_aux, params_plain, obs)[2] == {}  # no heads, nothing to run


def test_a_head_without_its_target_is_one_clear_error():
    program = ProgramConfig(game="tictactoe",
                            network=NetworkConfig(ownership_head=True))
    with pytest.raises(ValueError, match=r"network.ownership_head needs .*tictactoe has no "
                       r"Env.ownership .*--network.no-ownership-head"):
        program.check(program.make_env())


# --------------------------------------------------------------------------------------
# Losses
# --------------------------------------------------------------------------------------

def test_auxiliary_losses_match_a_numpy_reference():
    rng = np.random.default_rng(0)
    n, cells = 7, 9
    own_pred = rng.uniform(-1, 1, (n, cells)).astype(np.float32)
    score_pred = rng.normal(size=n).astype(np.float32)
    owners = rng.integers(-1, 2, (n, cells)).astype(np.int8)
    margin = rng.normal(0, 5, n).astype(np.float32)
    player = rng.integers(0, 2, n).astype(np.int32)
    weights = (rng.random(n) < 0.7).astype(np.float32)
    got = auxiliary_losses({"ownership": jnp.asarray(own_pred), "score": jnp.asarray(score_pred)},
                           jnp.asarray(owners), jnp.asarray(margin), jnp.asarray(player),
                           jnp.asarray(weights), cells)
    own_loss = score_loss = 0.0
    for i in range(n):
        sign = 1.0 if player[i] == 0 else -1.0
        own_loss += weights[i] * np.mean((own_pred[i] - sign * owners[i]) ** 2)
        score_loss += weights[i] * (score_pred[i] - sign * margin[i] / cells) ** 2
    denom = max(weights.sum(), 1.0)
    np.testing.assert_allclose(float(got["ownership"]), own_loss / denom, rtol=1e-5)
    np.testing.assert_allclose(float(got["score"]), score_loss / denom, rtol=1e-5)
    assert auxiliary_losses({}, None, None, jnp.asarray(player), jnp.asarray(weights),
                            cells) == {}


def test_policy_weights_mask_the_policy_term_alone():
    """Playout cap randomisation: a cheap search's policy is no target, its value is."""
    rng = np.random.default_rng(1)
    n, a = 6, 5
    logits = jnp.asarray(rng.normal(size=(n, a)).astype(np.float32))
    value = jnp.asarray(rng.uniform(-1, 1, n).astype(np.float32))
    pi = jnp.asarray(rng.dirichlet(np.ones(a), n).astype(np.float32))
    z = jnp.asarray(rng.choice([-1.0, 1.0], n).astype(np.float32))
    full = jnp.asarray([1, 0, 1, 0, 0, 1], jnp.float32)
    ones = jnp.ones(n)
    base = alphazero_loss(logits, value, pi, z, {}, 0.0, ones, full)
    other_pi = jnp.where(full[:, None] > 0, pi, jnp.roll(pi, 1, axis=1))
    other_z = jnp.where(full > 0, z, -z)
    changed_pi = alphazero_loss(logits, value, other_pi, z, {}, 0.0, ones, full)
    changed_z = alphazero_loss(logits, value, pi, other_z, {}, 0.0, ones, full)
    assert float(changed_pi.policy_loss) == float(base.policy_loss)
    assert float(changed_z.value_loss) != float(base.value_loss)
    log_p = jax.nn.log_softmax(logits)
    want = -np.sum(np.asarray(full) * np.sum(np.asarray(pi * log_p), -1)) / 3
    np.testing.assert_allclose(float(base.policy_loss), want, rtol=1e-5)


# --------------------------------------------------------------------------------------
# From the end of a game to the replay ring
# --------------------------------------------------------------------------------------

def synthetic(rng, end_prob):
    positions = replay_lib.Positions(
        observation=jnp.zeros((S, B, 2, 3, 1), bool),
        policy=jnp.zeros((S, B, 3), jnp.float32),
        player=jnp.asarray(rng.integers(0, 2, (S, B)).astype(np.int32)),
        search_value=jnp.zeros((S, B), jnp.float32),
        z=jnp.zeros((S, B), jnp.float32),
        has_z=jnp.zeros((S, B), bool),
        slot=jnp.asarray(np.broadcast_to(np.arange(B, dtype=np.int32), (S, B))),
        ownership=jnp.zeros((S, B, CELLS), jnp.int8),
        score=jnp.zeros((S, B), jnp.float32),
    )
    final = {"ownership": jnp.asarray(rng.integers(-1, 2, (S, B, CELLS)).astype(np.int8)),
             "score": jnp.asarray(rng.normal(0, 4, (S, B)).astype(np.float32))}
    return Trajectory(positions=positions, ended=jnp.asarray(rng.random((S, B)) < end_prob),
                      outcome=jnp.ones((S, B)), game_length=jnp.ones((S, B), jnp.int32),
                      final=final)


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), end_prob=st.sampled_from([0.0, 0.15, 0.5, 1.0]))
def test_each_position_gets_its_own_games_final_targets(seed, end_prob):
    """Against a plain-Python walk: a position's targets are those of the first game end
    at or after it in its slot; a position whose game goes on keeps zeros; each slot's
    first end is what its positions pending from earlier windows get."""
    traj = synthetic(np.random.default_rng(seed), end_prob)
    flat, first_end, _, _ = jax.device_get(jax.jit(assign_outcomes)(traj))
    firsts = jax.device_get(jax.jit(first_finals)(traj))
    host = jax.device_get(traj)
    for b in range(B):
        ends = [u for u in range(S) if host.ended[u, b]]
        assert first_end[b] == bool(ends)
        if ends:
            np.testing.assert_array_equal(firsts["ownership"][b],
                                          host.final["ownership"][ends[0], b])
            assert firsts["score"][b] == host.final["score"][ends[0], b]
        for t in range(S):
            row = t * B + b
            later = [u for u in ends if u >= t]
            if later:
                want_own = host.final["ownership"][later[0], b]
                want_score = host.final["score"][later[0], b]
            else:
                want_own, want_score = np.zeros(CELLS, np.int8), 0.0
            np.testing.assert_array_equal(flat.ownership[row], want_own)
            assert flat.score[row] == want_score


def test_resolve_writes_final_targets_to_pending_positions_of_ended_slots():
    ring = replay_lib.init(6, (2, 3, 1), 3, ownership_cells=CELLS, score=True)
    pending = jax.tree.map(lambda x: x[:6], replay_lib.init(
        6, (2, 3, 1), 3, ownership_cells=CELLS, score=True).data).replace(
        slot=jnp.asarray([0, 1, 2, 0, 1, 2], jnp.int32),
        has_z=jnp.asarray([False, False, False, True, False, False]))
    ring = replay_lib.add(ring, pending)
    owners = jnp.asarray(np.arange(3 * CELLS).reshape(3, CELLS) % 3 - 1, jnp.int8)
    score = jnp.asarray([2.5, -1.5, 7.0])
    out = jax.device_get(replay_lib.resolve(
        ring, jnp.asarray([True, False, True]), jnp.zeros(3), None, 1.0,
        {"ownership": owners, "score": score}))
    want_rows = {0: 0, 2: 2, 5: 2}  # ring row -> slot whose final it gets
    for row in range(6):
        if row in want_rows:
            np.testing.assert_array_equal(out.data.ownership[row], owners[want_rows[row]])
            assert out.data.score[row] == score[want_rows[row]]
        else:  # its slot's game goes on, or it was resolved before
            assert not out.data.ownership[row].any() and out.data.score[row] == 0


def test_sampled_ownership_turns_with_the_board():
    """A symmetry applied to a sampled position moves its ownership map as it moves the
    observation's cells: the map equal to an observation plane stays equal to it."""
    env = envs.make("go", size=5, history=1)
    rng = np.random.default_rng(2)
    n = 64
    obs = rng.random((n, *env.observation_shape)) < 0.4
    ring = replay_lib.init(n, env.observation_shape, env.num_actions,
                           ownership_cells=25, score=True)
    data = ring.data.replace(
        observation=jnp.asarray(obs),
        ownership=jnp.asarray(obs[..., 0].reshape(n, 25).astype(np.int8)),
        has_z=jnp.ones(n, bool), slot=jnp.zeros(n, jnp.int32))
    ring = replay_lib.add(ring, data)
    sample = jax.jit(lambda ring, key: replay_lib.sample(ring, key, 256, env.symmetries))
    batch = jax.device_get(sample(ring, jax.random.key(0)))
    np.testing.assert_array_equal(batch.ownership,
                                  batch.observation[..., 0].reshape(256, 25).astype(np.int8))
    copies = jax.device_get(jax.jit(lambda d: replay_lib.augment_all(d, env.symmetries))(
        jax.tree.map(lambda x: x[:4], data)))
    np.testing.assert_array_equal(copies.ownership,
                                  copies.observation[..., 0].reshape(32, 25).astype(np.int8))


# --------------------------------------------------------------------------------------
# Training on 5x5 Go with every lever on: the shared Go program of tests/go_tiny.py
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def go_training(tmp_path_factory):
    """The game, the program, the replay ring and the records of the shared 5x5 Go run
    (tests/go_tiny.py: both heads, playout cap randomisation, a ring that keeps every
    position)."""
    run = go_tiny.trained(tmp_path_factory)
    return (run.env, go_tiny.CONFIG.program, run.result.train_state.replay.data,
            run.result.records)


def test_training_records_each_games_final_ownership_and_score(go_training):
    """Every labelled position's ownership map and score are those of one finished game:
    the map sums to the score plus komi and agrees with the outcome's sign; positions
    still pending have no targets yet."""
    env, _, data, records = go_training
    labelled = data.has_z
    # Deterministic: the run is a fixed function of its seed, whose games end often
    # enough to label hundreds of positions; the check needs many, not a number.
    assert labelled.sum() > 100
    owners, score = data.ownership[labelled].astype(np.float32), data.score[labelled]
    np.testing.assert_allclose(owners.sum(1) - env.komi, score)
    mover_sign = np.where(data.player[labelled] == 0, 1.0, -1.0)
    np.testing.assert_array_equal(np.sign(score) * mover_sign, data.z[labelled])
    pending = (~labelled) & (data.slot >= 0)
    assert pending.any()  # (deterministic, as above: games are still running at the end)
    assert not data.ownership[pending].any() and not data.score[pending].any()
    assert len(records) == go_tiny.ITERATIONS
    assert all(np.isfinite(r["ownership_loss"]) and np.isfinite(r["score_loss"])
               for r in records)


def test_playout_cap_randomisation_gives_every_game_and_colour_its_share(go_training):
    """Each move searches a fresh random quarter of the games in full, so both colours
    of every game get full searches at that rate: over the run's 1,024 moves each
    colour's share is within a binomial bound of 1/4, and two full searches of one slot
    a few plies apart are as often an odd number of plies apart (the other colour, when
    in one game) as an even one. A pattern fixed over the iteration's steps would put
    every full search of a game on one colour (all distances even)."""
    _, program, data, _ = go_training
    p = program.selfplay.full_search_prob
    assert p == 0.25 and program.selfplay.full_search_games == go_tiny.GAMES // 4
    shape = (go_tiny.ITERATIONS * go_tiny.STEPS, go_tiny.GAMES)  # written time-major
    assert (data.slot >= 0).all()
    full, player = data.full_search.reshape(shape), data.player.reshape(shape)
    assert (full.sum(axis=1) == go_tiny.GAMES // 4).all()
    for colour in (0, 1):
        moves = player == colour
        n = moves.sum()
        assert abs(full[moves].mean() - p) < 4 * np.sqrt(p * (1 - p) / n), colour
    odd = pairs = 0
    for slot in range(go_tiny.GAMES):
        times = np.flatnonzero(full[:, slot])
        gaps = (times[None, :] - times[:, None])[np.triu_indices(len(times), 1)]
        near = gaps[gaps <= 8]
        pairs, odd = pairs + len(near), odd + (near % 2).sum()
    assert pairs > 200  # (deterministic, as above)
    assert 0.35 < odd / pairs < 0.65
    cheap = cheap_search_config(program.search, program.selfplay)
    assert cheap.num_simulations == 2 and cheap.max_num_considered_actions == 2


def test_cheap_searches_never_train_the_policy_inside_the_compiled_iteration(
        tmp_path_factory):
    """One more iteration of the shared run's own compiled step, from its final state with
    every position of the ring given an outcome: scrambling the policy targets of those
    positions changes nothing of the parameters after it while they are marked as cheap
    searches, and changes them once they are marked as full ones. (The iteration's own
    new positions, full searches among them, are the same in every call.)"""
    run = go_tiny.trained(tmp_path_factory)
    state = run.result.train_state
    data = state.replay.data
    assert data.has_z.sum() >= go_tiny.LEARN_AFTER  # it learns in the next iteration
    scrambled = np.zeros_like(data.policy)
    scrambled[:, -1] = 1.0  # every target on the pass, a legal move everywhere

    def params_after(full_search, policy):
        ring = data.replace(has_z=np.ones_like(data.has_z), z=np.where(data.has_z, data.z, 0.0),
                            full_search=np.full_like(data.full_search, full_search),
                            policy=policy)
        start = state.replace(replay=state.replay.replace(data=ring))
        stepped, _ = run.step(stack([start]), np.ones(1, bool))
        return jax.device_get(stepped.params)

    cheap = params_after(False, data.policy)
    same = jax.tree.map(np.array_equal, cheap, params_after(False, scrambled))
    assert jax.tree.all(same)
    moved = jax.tree.map(np.array_equal, cheap, params_after(True, scrambled))
    assert not jax.tree.all(moved)


def test_training_vmapped_over_runs_runs_each_search_on_its_games_only():
    """Each move runs the full search on its F games and the cheap one on the other
    B - F, as two batches, also when training vmaps the iteration over a group's runs
    (a branch on a drawn value would run both searches on every game there). The
    searches are stand-ins that record the batch they are traced with."""
    selfplay = SelfPlayConfig(num_games=8, steps_per_iteration=2, full_search_prob=0.25,
                              cheap_simulations=2)
    env = envs.make("tictactoe")
    batches = []

    def stand_in(params, search, key, states):
        batch, actions = states.legal_action_mask.shape
        batches.append(batch)
        summary = types.SimpleNamespace(value=jnp.zeros(batch),
                                        visit_counts=jnp.ones((batch, actions)))
        return types.SimpleNamespace(action_weights=jnp.full((batch, actions), 1 / actions),
                                     action=jnp.zeros(batch, jnp.int32),
                                     search_tree=types.SimpleNamespace(summary=lambda: summary))

    search = SearchConfig(num_simulations=4)
    play = make_play_fn(env, stand_in, search, selfplay, stand_in)
    keys = jax.random.split(jax.random.key(0), 2)
    games = jax.vmap(lambda k: init_games(env, k, selfplay))(keys)
    _, trajectory = jax.eval_shape(jax.vmap(lambda k, g: play(None, search, k, g)),
                                   keys, games)
    assert sorted(batches) == [2, 6]
    assert trajectory.positions.full_search.shape == (2, 2, 8)


@pytest.mark.parametrize("prob, games, ok", [(0.25, 16, True), (0.5, 2, True),
                                             (0.3, 16, False), (0.25, 2, False),
                                             (0.01, 16, False)])
def test_the_full_searches_are_a_whole_number_of_games(prob, games, ok):
    if ok:
        config = SelfPlayConfig(num_games=games, full_search_prob=prob)
        assert config.full_search_games == round(prob * games)
    else:
        with pytest.raises(ValueError, match="must be a whole number of fully searched "
                           "games per move, at least 1"):
            SelfPlayConfig(num_games=games, full_search_prob=prob)


def test_a_cheap_search_as_dear_as_the_full_one_is_refused():
    capped = SelfPlayConfig(steps_per_iteration=8, full_search_prob=0.5, cheap_simulations=8)
    with pytest.raises(ValueError, match=r"selfplay.cheap_simulations \(8\) must be fewer "
                       r"than search.num_simulations \(8\)"):
        ProgramConfig(game="tictactoe", search=SearchConfig(num_simulations=8), selfplay=capped)
    ProgramConfig(game="tictactoe", search=SearchConfig(num_simulations=8),
                  selfplay=SelfPlayConfig(cheap_simulations=8))  # no cap: any cheap search
