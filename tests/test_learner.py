"""The AlphaZero loss and optimiser settings (`azjax/learner.py`)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from azjax.core.learner import LearnerConfig, alphazero_loss
from azjax.core.networks import PolicyValueNet

LOGITS = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0]], np.float32)
VALUES = np.array([0.25, -0.5], np.float32)
TARGET_PI = np.array([[0.2, 0.7, 0.1], [0.0, 0.5, 0.5]], np.float32)
TARGET_Z = np.array([1.0, -1.0], np.float32)
PARAMS = {"w": np.array([[1.0, -2.0], [0.5, 0.0]], np.float32), "b": np.array([3.0], np.float32)}
C = 0.01


def np_log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def per_example_terms():
    log_p = np_log_softmax(LOGITS.astype(np.float64))
    v = (TARGET_Z - VALUES) ** 2
    p = -(TARGET_PI * log_p).sum(axis=-1)
    h = -(np.exp(log_p) * log_p).sum(axis=-1)
    return v, p, h


def loss(weights=None):
    return jax.device_get(
        alphazero_loss(
            jnp.asarray(LOGITS), jnp.asarray(VALUES), jnp.asarray(TARGET_PI),
            jnp.asarray(TARGET_Z), jax.tree.map(jnp.asarray, PARAMS), C,
            None if weights is None else jnp.asarray(weights, jnp.float32),
        )
    )


def test_loss_matches_hand_computation():
    v, p, h = per_example_terms()
    # value: ((1 - 0.25)^2 + (-1 + 0.5)^2) / 2 = (0.5625 + 0.25) / 2 = 0.40625
    assert math.isclose(v.mean(), 0.40625)
    # l2: 1 + 4 + 0.25 + 0 + 9 = 14.25
    l2 = 14.25
    info = loss()
    np.testing.assert_allclose(info.value_loss, 0.40625, rtol=1e-6)
    np.testing.assert_allclose(info.policy_loss, p.mean(), rtol=1e-6)
    np.testing.assert_allclose(info.policy_entropy, h.mean(), rtol=1e-6)
    np.testing.assert_allclose(info.l2, l2, rtol=1e-6)
    np.testing.assert_allclose(info.total, 0.40625 + p.mean() + C * l2, rtol=1e-6)


def test_policy_loss_hand_value_for_uniform_logits():
    # Uniform logits over 3 actions: log p = -log 3 for each, so the cross-entropy is
    # log 3 for any target distribution, and the entropy is log 3 too.
    info = alphazero_loss(
        jnp.zeros((2, 3)), jnp.zeros(2), jnp.asarray(TARGET_PI), jnp.zeros(2), {}, 0.0
    )
    np.testing.assert_allclose(info.policy_loss, math.log(3), rtol=1e-6)
    np.testing.assert_allclose(info.policy_entropy, math.log(3), rtol=1e-6)
    assert float(info.value_loss) == 0.0
    assert float(info.l2) == 0.0


def test_weights_mask_an_example():
    v, p, h = per_example_terms()
    for keep in (0, 1):
        w = np.zeros(2, np.float32)
        w[keep] = 1.0
        info = loss(w)
        np.testing.assert_allclose(info.value_loss, v[keep], rtol=1e-6)
        np.testing.assert_allclose(info.policy_loss, p[keep], rtol=1e-6)
        np.testing.assert_allclose(info.policy_entropy, h[keep], rtol=1e-6)
        # The L2 term does not depend on the weights.
        np.testing.assert_allclose(info.l2, 14.25, rtol=1e-6)
        np.testing.assert_allclose(info.total, v[keep] + p[keep] + C * 14.25, rtol=1e-6)
    # Integer weights are a weighted mean: weights (2, 1) -> (2 v0 + v1) / 3.
    info = loss(np.array([2.0, 1.0]))
    np.testing.assert_allclose(info.value_loss, (2 * v[0] + v[1]) / 3, rtol=1e-6)
    np.testing.assert_allclose(info.policy_loss, (2 * p[0] + p[1]) / 3, rtol=1e-6)
    # All-zero weights give zero data losses (no division by zero).
    info = loss(np.zeros(2))
    assert float(info.value_loss) == 0.0 and float(info.policy_loss) == 0.0
    assert np.isfinite(info.total)


def test_gradient_steps_reduce_loss():
    net = PolicyValueNet(9)
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.random((32, 3, 3, 3)) < 0.4)
    pi = jax.nn.softmax(jnp.asarray(rng.normal(size=(32, 9)) * 2, jnp.float32))
    z = jnp.asarray(rng.choice([-1.0, 0.0, 1.0], 32), jnp.float32)
    params = net.init(jax.random.key(0), obs)
    config = LearnerConfig()
    opt = config.optimizer()
    opt_state = opt.init(params)

    def loss_fn(params):
        logits, value = net.apply(params, obs)
        return alphazero_loss(logits, value, pi, z, params, config.weight_decay).total

    @jax.jit
    def step(params, opt_state):
        value, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    losses = []
    for _ in range(40):
        params, opt_state, value = step(params, opt_state)
        losses.append(float(value))
    final = float(jax.jit(loss_fn)(params))
    assert np.all(np.isfinite(losses))
    assert final < losses[0] - 0.1, (losses[0], final)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(learning_rate=0.0),
        dict(learning_rate=-1e-3),
        dict(weight_decay=-1e-4),
        dict(batch_size=0),
        dict(max_grad_norm=-1.0),
    ],
)
def test_invalid_config_raises(kwargs):
    with pytest.raises(ValueError):
        LearnerConfig(**kwargs).validate()


def adam_steps(grads, lr, b1=0.9, b2=0.999, eps=1e-8):
    """Adam's updates for a sequence of gradients, by hand."""
    m = v = 0.0
    updates = []
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g**2
        updates.append(-lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps))
    return updates


def test_valid_configs_pass_and_max_grad_norm_zero_stops_clipping():
    """The edge values are accepted; max_grad_norm clips the global norm, 0 does not."""
    LearnerConfig().validate()
    LearnerConfig(weight_decay=0.0, max_grad_norm=0.0, batch_size=1).validate()
    # Norms 5 then 0.5: clipping the first to norm 1 changes Adam's second step.
    grads = [np.array([3.0, 4.0]), np.array([0.3, -0.4])]
    clipped = [grads[0] / 5.0, grads[1]]
    for max_grad_norm, seen in ((1.0, clipped), (0.0, grads)):
        opt = LearnerConfig(learning_rate=0.1, max_grad_norm=max_grad_norm).optimizer()
        params = {"x": jnp.zeros(2)}
        state = opt.init(params)
        got = []
        for g in grads:
            updates, state = opt.update({"x": jnp.asarray(g, jnp.float32)}, state, params)
            got.append(np.asarray(updates["x"]))
        np.testing.assert_allclose(got, adam_steps(seen, 0.1), rtol=1e-4)
    assert not np.allclose(adam_steps(clipped, 0.1)[1], adam_steps(grads, 0.1)[1], rtol=0.1)


def test_optimizer_learning_rate_is_injectable():
    opt = LearnerConfig(learning_rate=0.5, max_grad_norm=0.0).optimizer()
    params = {"x": jnp.array([1.0, -2.0])}
    state = opt.init(params)
    assert float(state.hyperparams["learning_rate"]) == 0.5
    # The first Adam step moves each coordinate by ~lr against the gradient sign.
    updates, _ = opt.update({"x": jnp.array([3.0, -0.1])}, state, params)
    np.testing.assert_allclose(np.asarray(updates["x"]), [-0.5, 0.5], rtol=1e-4)
