"""The network's `conv` and `dtype` options: they change how it runs, not its parameters."""

from __future__ import annotations

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax.core.networks import NetworkConfig, PatchConv, PolicyValueNet, make_network, resolve_conv
from azjax.run.config import TrainConfig

SMALL = NetworkConfig(channels=8, policy_filters=2, value_filters=2, value_hidden=8)


def random_obs(key, shape, planes=3):
    return jax.random.bernoulli(key, 0.4, (5, *shape, planes))


def cosine(a, b):
    """The cosine of two trees' leaves flattened into one vector each (in NumPy: eager JAX
    would compile a program per leaf shape)."""
    a = np.concatenate([np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(a)])
    b = np.concatenate([np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(b)])
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("impl", ["xla", "hybrid"])
@pytest.mark.parametrize("kernel_size", [1, 3])
@pytest.mark.parametrize("shape", [(3, 3), (6, 7), (9, 9)])
def test_patch_and_xla_convolutions_agree_on_one_set_of_parameters(impl, kernel_size, shape):
    x = jax.random.normal(jax.random.key(0), (4, *shape, 5))
    patch, xla = PatchConv(6, kernel_size, impl="patch"), PatchConv(6, kernel_size, impl=impl)
    params = patch.init(jax.random.key(1), x)
    # Shapes are facts of tracing: eval_shape gives them without compiling an init.
    assert jax.tree.map(jnp.shape, jax.eval_shape(xla.init, jax.random.key(1), x)) == (
        jax.tree.map(jnp.shape, params))
    # A nonzero bias, so that it is checked too.
    params = jax.tree.map(lambda p: p + 0.3, params)
    out = patch.apply(params, x)
    assert out.shape == (4, *shape, 6) and np.abs(out).max() > 0.5
    np.testing.assert_allclose(xla.apply(params, x), out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("conv", ["xla", "hybrid"])
@pytest.mark.parametrize("num_blocks", [0, 2])
@pytest.mark.parametrize("shape", [(3, 3), (6, 7), (9, 9)])
def test_the_whole_network_computes_the_same_function_with_either_convolution(
        conv, num_blocks, shape):
    config = dataclasses.replace(SMALL, num_blocks=num_blocks)
    patch = PolicyValueNet(11, dataclasses.replace(config, conv="patch"))
    xla = PolicyValueNet(11, dataclasses.replace(config, conv=conv))
    obs = random_obs(jax.random.key(2), shape)
    params = patch.init(jax.random.key(3), obs)
    # A checkpoint of one loads into the other: identical tree, shapes and dtypes (facts
    # of tracing, which eval_shape gives without compiling the other's init).
    xla_params = jax.eval_shape(xla.init, jax.random.key(3), obs)
    assert jax.tree.structure(xla_params) == jax.tree.structure(params)
    assert jax.tree.map(lambda a: (a.shape, a.dtype), xla_params) == (
        jax.tree.map(lambda a: (a.shape, a.dtype), params))
    logits, value = patch.apply(params, obs)
    xla_logits, xla_value = xla.apply(params, obs)
    assert np.std(logits) > 1e-3 and np.std(value) > 1e-4  # not constant
    np.testing.assert_allclose(xla_logits, logits, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xla_value, value, rtol=1e-4, atol=1e-5)


def test_older_checkpoints_keep_their_parameter_names():
    params = PolicyValueNet(9, dataclasses.replace(SMALL, num_blocks=1, conv="xla")).init(
        jax.random.key(0), random_obs(jax.random.key(1), (3, 3)))["params"]
    assert params["PatchConv_0"]["Dense_0"]["kernel"].shape == (9 * 3, 8)
    assert params["ResidualBlock_0"]["PatchConv_1"]["Dense_0"]["bias"].shape == (8,)
    assert params["PatchConv_1"]["Dense_0"]["kernel"].shape == (8, 2)  # the 1x1 policy conv


def test_auto_picks_the_patch_convolution_on_cpu_when_the_network_is_built(monkeypatch):
    class Env:
        num_actions = 9

    assert make_network(Env, SMALL).config.conv == resolve_conv("auto")
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert resolve_conv("auto") == "patch"
    assert make_network(Env, SMALL).config.conv == "patch"
    # forward passes alone (search, evaluation, play) take XLA's convolution on a CPU
    assert resolve_conv("auto", gradients=False) == "xla"
    assert make_network(Env, SMALL, gradients=False).config.conv == "xla"
    assert make_network(Env, dataclasses.replace(SMALL, conv="patch"),
                        gradients=False).config.conv == "patch"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert resolve_conv("auto") == "xla" == resolve_conv("auto", gradients=False)
    assert make_network(Env, SMALL).config.conv == "xla"
    assert make_network(Env, dataclasses.replace(SMALL, conv="patch")).config.conv == "patch"


def test_the_mlp_torso_is_dense_layers_on_the_flattened_board_with_dense_heads():
    config = NetworkConfig(torso="mlp", channels=16, mlp_layers=2)
    net = PolicyValueNet(num_actions=7, config=config)
    obs = random_obs(jax.random.key(0), (6, 7), planes=2)
    params = net.init(jax.random.key(1), obs)["params"]
    shapes = {name: layer["kernel"].shape for name, layer in params.items()}
    assert shapes == {"Dense_0": (6 * 7 * 2, 16), "Dense_1": (16, 16),
                      "Dense_2": (16, 7), "Dense_3": (16, 1)}
    apply = jax.jit(net.apply)  # one program for both boards
    logits, value = apply({"params": params}, obs)
    assert logits.shape == (5, 7) and value.shape == (5,)
    assert np.all(np.abs(value) < 1)
    # every cell reaches the output: flipping one plane of one cell changes it
    flipped = obs.at[:, 5, 6, 1].set(~obs[:, 5, 6, 1])
    assert not np.allclose(apply({"params": params}, flipped)[0], logits)


def test_the_mlp_torso_checks_its_settings():
    with pytest.raises(ValueError, match=r"network.mlp_layers must be.*got 0"):
        NetworkConfig(torso="mlp", mlp_layers=0).validate()
    with pytest.raises(ValueError, match=r"network.torso must be one of \('conv', 'mlp'\)"):
        NetworkConfig(torso="resnet").validate()


@pytest.mark.parametrize("conv", [pytest.param("patch", marks=pytest.mark.slow),  # ~17 s
                                  "xla", "hybrid"])
def test_bfloat16_computes_in_bfloat16_with_float32_parameters_and_outputs(conv):
    config = dataclasses.replace(SMALL, channels=16, num_blocks=2, conv=conv)
    f32 = PolicyValueNet(9, config)
    bf16 = PolicyValueNet(9, dataclasses.replace(config, dtype="bfloat16"))
    obs = random_obs(jax.random.key(4), (6, 7))
    # The parameters' tree and dtypes are facts of tracing (eval_shape compiles nothing):
    # bfloat16's are float32 and the same tree as float32's, whose values the test uses.
    abstract = jax.eval_shape(bf16.init, jax.random.key(5), obs)
    assert {a.dtype for a in jax.tree.leaves(abstract)} == {jnp.dtype(jnp.float32)}
    params = f32.init(jax.random.key(5), obs)
    assert jax.tree.structure(abstract) == jax.tree.structure(params)
    assert jax.tree.map(lambda a: (a.shape, a.dtype), abstract) == (
        jax.tree.map(lambda a: (a.shape, a.dtype), params))
    target = jax.random.normal(jax.random.key(6), (5, 9))

    def loss(net):
        def f(p):
            lg, v = net.apply(p, obs)
            return jnp.mean((lg - target) ** 2) + jnp.mean((v - 0.5) ** 2)
        return f

    @jax.jit  # one program for every pass the test compares (one compilation)
    def passes(params):
        return (bf16.apply(params, obs), f32.apply(params, obs),
                bf16.apply(params, obs, capture_intermediates=True)[1],
                jax.grad(loss(bf16))(params), jax.grad(loss(f32))(params))

    (logits, value), (ref_logits, ref_value), inter, grads, ref_grads = passes(params)
    assert logits.dtype == jnp.float32 and value.dtype == jnp.float32
    # bfloat16 keeps 8 bits of mantissa (relative error ~0.4% a rounding); measured here:
    # ~1% of the logits' scale, ~0.002 on values of ~0.1.
    scale = float(np.abs(ref_logits).max())
    assert scale > 0.1
    np.testing.assert_allclose(logits, ref_logits, atol=0.03 * scale)
    np.testing.assert_allclose(value, ref_value, atol=0.01)
    assert not np.array_equal(np.asarray(logits), np.asarray(ref_logits))  # really bf16

    # The activations really are bfloat16.
    conv_out = inter["intermediates"]["PatchConv_0"]["__call__"][0]
    assert conv_out.dtype == jnp.bfloat16

    leaves = jax.tree.leaves(grads)
    assert all(g.dtype == jnp.float32 for g in leaves)
    assert all(np.isfinite(np.asarray(g)).all() for g in leaves)
    # Not a statistical criterion: the observations, parameters and target come from the
    # fixed keys 4, 5 and 6, so the cosine is one deterministic number on a given backend
    # (0.994 measured on CPU) and the test never fails at random (false-failure rate 0);
    # the margin to 0.99 only absorbs rounding differences between backends and versions.
    assert cosine(grads, ref_grads) > 0.99


def test_unknown_choices_are_one_line_errors_naming_the_option():
    with pytest.raises(ValueError, match=r"^network\.conv must be one of \('auto', 'patch', "
                                         r"'xla', 'hybrid'\), got 'foo'$"):
        NetworkConfig(conv="foo").validate()
    with pytest.raises(ValueError, match=r"^network\.dtype must be one of \('float32', "
                                         r"'bfloat16'\), got 'float16'$"):
        NetworkConfig(dtype="float16").validate()
    with pytest.raises(ValueError, match=r"network\.conv"):
        TrainConfig().replace(network=NetworkConfig(conv="cudnn")).validate()
    NetworkConfig(conv="xla", dtype="bfloat16").validate()
    NetworkConfig(conv="hybrid").validate()
    assert resolve_conv("hybrid") == "hybrid"
    x = jnp.zeros((1, 3, 3, 2))
    for kernel_size in (1, 3):
        with pytest.raises(ValueError, match=r"^PatchConv impl must be one of \('patch', "
                                             r"'xla', 'hybrid'\), got 'cudnn'"):
            PatchConv(4, kernel_size, impl="cudnn").init(jax.random.key(0), x)


def test_the_options_are_compiled_settings_saved_in_config_json():
    base = TrainConfig()
    xla = base.replace(network=NetworkConfig(conv="xla", dtype="bfloat16"))
    data = json.loads(json.dumps(xla.to_dict()))
    assert data["program"]["network"]["conv"] == "xla"
    assert TrainConfig.from_dict(data) == xla
    assert xla.program.compile_key() != base.program.compile_key()
    assert base.with_value("network.conv", "patch").program.compile_key() != (
        base.program.compile_key())
    # A config.json written before these options existed loads with their defaults.
    old = base.to_dict()
    del old["program"]["network"]["conv"], old["program"]["network"]["dtype"]
    loaded = TrainConfig.from_dict(json.loads(json.dumps(old)))
    assert loaded.program.network.conv == "auto" and loaded.program.network.dtype == "float32"
    assert loaded == base


# 'hybrid': XLA's convolution forward, a custom backward pass of shifted slices + matmuls.


@functools.lru_cache
def conv_inputs(shape, channels, features=5):
    """Parameters (nonzero bias), an input and a target of a 3x3 PatchConv, made once per
    shape for the tests that share them. The parameters are float32 whatever the conv's
    impl and dtype, so a float32 'patch' conv initialises them for all."""
    x = jax.random.normal(jax.random.key(7), (3, *shape, channels))
    params = jax.tree.map(lambda p: p + 0.3,
                          PatchConv(features, 3, impl="patch").init(jax.random.key(8), x))
    target = jax.random.normal(jax.random.key(9), (3, *shape, features))
    return params, x, target


def conv_and_loss(impl, shape, channels, dtype=jnp.float32, features=5):
    """A PatchConv, its parameters (nonzero bias), an input and a loss of (params, x)."""
    conv = PatchConv(features, 3, impl=impl, dtype=dtype)
    params, x, target = conv_inputs(shape, channels, features)

    def loss(params, x):
        return jnp.sum(jnp.tanh(conv.apply(params, x)) * target)

    return conv, params, x, loss


def assert_close_trees(actual, expected, rtol):
    """Each leaf within `rtol` of the largest entry of its expected value (compared in
    NumPy, which compiles nothing)."""
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        a, e = np.asarray(a, np.float32), np.asarray(e, np.float32)
        scale = float(np.abs(e).max())
        assert scale > 0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("channels", [2, 6, 32])
@pytest.mark.parametrize("shape", [(3, 3), (6, 7), (9, 9)])
def test_hybrid_convolution_has_the_outputs_and_gradients_of_patch(shape, channels):
    patch, params, x, patch_loss = conv_and_loss("patch", shape, channels)
    hybrid, _, _, hybrid_loss = conv_and_loss("hybrid", shape, channels)

    @jax.jit  # the references and the jitted hybrid pass: one program
    def passes(params, x):
        return (patch.apply(params, x), hybrid.apply(params, x),
                jax.value_and_grad(patch_loss, argnums=(0, 1))(params, x),
                jax.value_and_grad(hybrid_loss, argnums=(0, 1))(params, x))

    patch_out, hybrid_out, expected, hybrid_jitted = passes(params, x)
    assert_close_trees(hybrid_out, patch_out, 1e-5)
    assert_close_trees(hybrid.apply(params, x), patch_out, 1e-5)  # eagerly too
    # Gradients with respect to kernel, bias and input, eagerly and jitted.
    assert_close_trees(jax.value_and_grad(hybrid_loss, argnums=(0, 1))(params, x), expected,
                       1e-5)
    assert_close_trees(hybrid_jitted, expected, 1e-5)


def test_hybrid_convolution_under_vmap_and_its_gradient_inside_lax_scan():
    patch, params, x, patch_loss = conv_and_loss("patch", (6, 7), 6)
    _, _, _, hybrid_loss = conv_and_loss("hybrid", (6, 7), 6)
    xs = jnp.stack([x, -0.5 * x])
    grad_x = jax.grad(patch_loss, argnums=(0, 1))
    hybrid = PatchConv(5, 3, impl="hybrid")
    # vmap over stacked parameters too (the driver vmaps over experiments, each with its
    # own parameters): a batched kernel.
    stacked = jax.tree.map(lambda p: jnp.stack([p, 0.5 * p]), params)

    # Gradient steps inside a lax.scan, as the learner runs them; called twice.
    def train(loss):
        @jax.jit
        def run(params, x):
            def step(params, _):
                grads = jax.grad(loss)(params, x)
                return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), grads
            return jax.lax.scan(step, params, None, length=3)
        return run

    @jax.jit  # every reference of 'patch' below: one program
    def references(params, x, xs, stacked):
        return (jax.vmap(patch.apply, in_axes=(None, 0))(params, xs),
                jax.vmap(grad_x, in_axes=(None, 0))(params, xs),
                jax.vmap(grad_x)(stacked, xs),
                train(patch_loss)(params, x), train(patch_loss)(params, 2.0 * x))

    outputs, expected, expected_stacked, trained, trained_twice = references(
        params, x, xs, stacked)
    # vmap over a leading axis of inputs, of the outputs and of the gradients.
    assert_close_trees(jax.vmap(hybrid.apply, in_axes=(None, 0))(params, xs), outputs, 1e-5)
    assert_close_trees(
        jax.jit(jax.vmap(jax.grad(hybrid_loss, argnums=(0, 1)), in_axes=(None, 0)))(params, xs),
        expected, 1e-5)
    assert_close_trees(
        jax.jit(jax.vmap(jax.grad(hybrid_loss, argnums=(0, 1))))(stacked, xs),
        expected_stacked, 1e-5)
    run = train(hybrid_loss)
    assert_close_trees(run(params, x), trained, 1e-5)
    assert_close_trees(run(params, 2.0 * x), trained_twice, 1e-5)


def test_hybrid_convolution_in_bfloat16_matches_patch_in_bfloat16():
    _, params, x, patch_loss = conv_and_loss("patch", (6, 7), 32, jnp.bfloat16)
    hybrid, _, _, hybrid_loss = conv_and_loss("hybrid", (6, 7), 32, jnp.bfloat16)
    assert hybrid.apply(params, x).dtype == jnp.bfloat16

    @jax.jit  # the hybrid gradient and its reference: one program
    def gradients(params, x):
        return (jax.grad(hybrid_loss, argnums=(0, 1))(params, x),
                jax.grad(patch_loss, argnums=(0, 1))(params, x))

    grads, expected = gradients(params, x)
    assert {g.dtype for g in jax.tree.leaves(grads[0])} == {jnp.dtype(jnp.float32)}
    assert grads[1].dtype == jnp.float32  # the cotangent of a float32 input
    # bfloat16 rounds to ~0.4%; sums of 288 products in bfloat16 drift further.
    assert_close_trees(grads, expected, 0.05)
    assert cosine(grads, expected) > 0.999
