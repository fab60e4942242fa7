"""The score-aware value target (`LearnerConfig.score_value_mix`): the value learns the
win/loss outcome mixed with tanh of the final score margin, from the mover's view."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.core.iteration import init_train_state, make_iteration_fn
from azjax.core.learner import LearnerConfig, score_value_target
from azjax.core.networks import NetworkConfig
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


def _train(learner: LearnerConfig):
    program = ProgramConfig(
        game="go", game_options={"size": 5, "komi": 0.5, "history": 2},
        network=NetworkConfig(channels=8, num_blocks=1),
        search=SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=4),
        selfplay=SelfPlayConfig(num_games=16, steps_per_iteration=8),
        learner=learner, replay_capacity=16 * 8 * ITERATIONS, gradient_steps=2)
    env = program.make_env()
    state = init_train_state(env, program, jax.random.key(0))
    iteration = jax.jit(make_iteration_fn(env, program))
    for _ in range(ITERATIONS):
        state, _ = iteration(state)
    return jax.device_get(state)


@pytest.fixture(scope="module")
def runs():
    plain = LearnerConfig(batch_size=32)
    return {
        "win/loss": _train(plain),
        # tanh(margin / 1e-4) is the margin's sign, the win/loss outcome (komi 0.5: no draws)
        "sign": _train(dataclasses.replace(plain, score_value_mix=1.0, score_value_scale=1e-4)),
        "margin": _train(dataclasses.replace(plain, score_value_mix=1.0,
                                             score_value_scale=20.0)),
    }


def test_replay_keeps_each_games_final_margin_without_a_score_head(runs):
    data = runs["margin"].replay.data
    assert runs["win/loss"].replay.data.score is None
    labelled = data.has_z
    assert labelled.sum() > 100
    mover_sign = np.where(data.player[labelled] == 0, 1.0, -1.0)
    np.testing.assert_array_equal(np.sign(data.score[labelled]) * mover_sign,
                                  data.z[labelled])
    assert len(np.unique(np.abs(data.score[labelled]))) > 3  # margins, not just signs


def test_the_value_learns_the_mixed_target(runs):
    """With a vanishing scale the target is the win/loss outcome again, so training is the
    same to the bit; with a scale of 20 points it is another target, and other weights."""
    same = jax.tree.map(np.array_equal, runs["win/loss"].params, runs["sign"].params)
    assert all(jax.tree.leaves(same))
    moved = jax.tree.map(lambda a, b: not np.allclose(a, b), runs["win/loss"].params,
                         runs["margin"].params)
    assert any(jax.tree.leaves(moved))
