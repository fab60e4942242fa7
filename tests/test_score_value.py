"""The score-aware value target (`LearnerConfig.score_value_mix`): the value learns the
win/loss outcome mixed with tanh of the final score margin, from the mover's view."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.core.iteration import TrainState, init_train_state, make_iteration_fn
from azjax.core.learner import LearnerConfig, score_value_target
from azjax.core.networks import NetworkConfig, make_network
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig


def test_the_target_matches_a_plain_python_reference():
    rng = np.random.default_rng(3)
    n, mix, scale = 64, 0.3, 7.0
    target = rng.choice([-1.0, 0.0, 1.0], n).astype(np.float32)
    score = rng.normal(0, 15, n).astype(np.float32)
    player = rng.integers(0, 2, n).astype(np.int32)
    known = rng.random(n) < 0.8
    got = np.asarray(score_value_target(jnp.asarray(target), jnp.asarray(score),
                                        jnp.asarray(player), jnp.asarray(known), mix, scale))
    for i in range(n):
        mover_margin = score[i] if player[i] == 0 else -score[i]
        want = ((1 - mix) * target[i] + mix * np.tanh(mover_margin / scale) if known[i]
                else target[i])
        assert got[i] == pytest.approx(want, abs=1e-6)
    everywhere = score_value_target(jnp.asarray(target), jnp.asarray(score),
                                    jnp.asarray(player), None, mix, scale)
    np.testing.assert_allclose(np.asarray(everywhere)[known], got[known], rtol=1e-6)


@pytest.mark.parametrize("option, value, message", [
    ("score_value_mix", 1.5, r"learner.score_value_mix must be in \[0, 1\], got 1.5"),
    ("score_value_mix", -0.1, r"learner.score_value_mix must be in \[0, 1\], got -0.1"),
    ("score_value_scale", 0.0, r"learner.score_value_scale must be .*> 0"),
])
def test_bad_settings_are_one_clear_error(option, value, message):
    with pytest.raises(ValueError, match=message):
        LearnerConfig(**{option: value}).validate()


def test_a_game_without_a_score_margin_is_refused():
    program = ProgramConfig(game="tictactoe", learner=LearnerConfig(score_value_mix=0.5))
    with pytest.raises(ValueError, match=r"learner.score_value_mix needs a game with a score "
                       r"margin: tictactoe has no Env.score_margin"):
        program.check(program.make_env())


ITERATIONS = 4
NETWORK = NetworkConfig(channels=8, num_blocks=0)
PROGRAM = ProgramConfig(
    game="go", game_options={"size": 5, "komi": 0.5, "history": 2},
    network=NETWORK,
    search=SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=4),
    selfplay=SelfPlayConfig(num_games=16, steps_per_iteration=8),
    # a high learning rate (traced: not compiled in), so that a few steps teach the value
    learner=LearnerConfig(batch_size=32, learning_rate=1e-2),
    replay_capacity=16 * 8 * ITERATIONS, gradient_steps=4)


class Run(NamedTuple):
    """A run's starting weights and its final train state (on the host)."""

    start: dict
    state: TrainState


def _train(**learner) -> Run:
    """`PROGRAM` with these learner settings, `ITERATIONS` iterations from seed 0."""
    program = dataclasses.replace(PROGRAM, learner=dataclasses.replace(PROGRAM.learner,
                                                                        **learner))
    env = program.make_env()
    state = init_train_state(env, program, jax.random.key(0))
    start = jax.device_get(state.params)
    iteration = jax.jit(make_iteration_fn(env, program))
    for _ in range(ITERATIONS):
        state, _ = iteration(state)
    return Run(start, jax.device_get(state))


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    return {
        "win/loss": _train(),
        # tanh(margin / 1e-4) is the margin's sign, the win/loss outcome (komi 0.5: no draws)
        "sign": _train(score_value_mix=1.0, score_value_scale=1e-4),
        "margin": _train(score_value_mix=1.0, score_value_scale=20.0),
    }


# Slow (with the next): trains three Go programs.
@pytest.mark.slow
def test_replay_keeps_each_games_final_margin_without_a_score_head(runs):
    data = runs["margin"].state.replay.data
    assert runs["win/loss"].state.replay.data.score is None
    labelled = data.has_z
    # Deterministic (the run is a fixed function of its seed): its games end often
    # enough to label many positions.
    assert labelled.sum() > 100
    mover_sign = np.where(data.player[labelled] == 0, 1.0, -1.0)
    np.testing.assert_array_equal(np.sign(data.score[labelled]) * mover_sign,
                                  data.z[labelled])
    assert len(np.unique(np.abs(data.score[labelled]))) > 3  # margins, not just signs


# Slow: the runs of the test above.
@pytest.mark.slow
def test_the_value_learns_the_mixed_target(runs):
    """With a vanishing scale the target is the win/loss outcome again, so training is the
    same to the bit. With a scale of 20 points it is another target, and the value learns
    it: on the margin run's positions of known outcome, its value comes closer to
    tanh(margin / 20) than it started, and closer than the win/loss run's value comes,
    which comes closer to the win/loss outcome than the margin run's."""
    same = jax.tree.map(np.array_equal, runs["win/loss"].state.params,
                        runs["sign"].state.params)
    assert all(jax.tree.leaves(same))
    data = runs["margin"].state.replay.data
    labelled = data.has_z
    outcome = data.z[labelled]
    mixed = np.asarray(score_value_target(
        jnp.asarray(outcome), jnp.asarray(data.score[labelled]),
        jnp.asarray(data.player[labelled]), None, 1.0, 20.0))
    assert np.abs(mixed).max() < 1.0 and (np.sign(mixed) == outcome).all()
    network = make_network(PROGRAM.make_env(), NETWORK)
    value = jax.jit(lambda params, obs: network.apply(params, obs)[1])

    def error(params, target) -> float:
        """Mean squared error of the value on those positions."""
        return float(np.mean((np.asarray(value(params, data.observation[labelled])) - target)
                             ** 2))

    margin, win_loss = runs["margin"].state.params, runs["win/loss"].state.params
    # Deterministic (the runs are fixed functions of their seed): a few steps of the high
    # learning rate set the two values well apart.
    assert error(margin, mixed) < error(runs["margin"].start, mixed)
    assert error(margin, mixed) < error(win_loss, mixed)
    assert error(win_loss, outcome) < error(margin, outcome)
