"""Policy-value networks (Flax linen).

`PolicyValueNet` is the network of the reference tic-tac-toe study when `num_blocks=0`
(one 3x3 conv with 32 filters + ReLU; policy head 1x1 conv with 2 filters, ReLU, dense
to the action count; value head 1x1 conv with 1 filter, ReLU, dense 32, ReLU, dense 1,
tanh), and grows a residual tower of `num_blocks` blocks for bigger boards.
"""

from __future__ import annotations

import dataclasses

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from azjax.fields import check_setting
from envs import Env


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Shape of the policy-value network."""

    channels: int = 32
    """Filters of the stem conv and of every residual block."""
    num_blocks: int = 0
    """Residual blocks after the stem (0 = the reference tic-tac-toe network)."""
    policy_filters: int = 2
    """Filters of the policy head's 1x1 conv."""
    value_filters: int = 1
    """Filters of the value head's 1x1 conv."""
    value_hidden: int = 32
    """Width of the value head's hidden dense layer."""

    def validate(self) -> None:
        """Raises ValueError for sizes that cannot build a network."""
        for name in ("channels", "policy_filters", "value_filters", "value_hidden"):
            check_setting(f"network.{name}", getattr(self, name), int, 1)
        check_setting("network.num_blocks", self.num_blocks, int, 0)


def input_planes(obs: chex.Array) -> chex.Array:
    """Network input from observations [B, H, W, C] (bool planes) as float32."""
    return obs.astype(jnp.float32)


class PatchConv(nn.Module):
    """A stride-1 'SAME' k x k convolution computed as shifted copies + one matmul.

    Same function class as `nn.Conv`, but XLA's CPU convolution runs ~10x slower inside
    loops (`lax.scan`, mctx's while loop), which is where self-play and training run;
    a matmul does not. The k*k shifted copies are slices of the zero-padded input
    (`lax.conv_general_dilated_patches` is itself a convolution: 5x slower at 32 channels).
    """

    features: int
    kernel_size: int = 3

    @nn.compact
    def __call__(self, x: chex.Array) -> chex.Array:
        k = self.kernel_size
        if k == 1:
            return nn.Dense(self.features)(x)
        h, w = x.shape[1], x.shape[2]
        lo = (k - 1) // 2
        padded = jnp.pad(x, ((0, 0), (lo, k - 1 - lo), (lo, k - 1 - lo), (0, 0)))
        patches = jnp.concatenate(
            [padded[:, i : i + h, j : j + w, :] for i in range(k) for j in range(k)], axis=-1
        )
        return _PatchDense(self.features, k, name="Dense_0")(patches)


class _PatchDense(nn.Module):
    """Dense over (row offset, column offset, channel) patches whose kernel is stored in
    `lax.conv_general_dilated_patches` order (channel, row offset, column offset), the
    layout of earlier versions, so their checkpoints still load."""

    features: int
    kernel_size: int

    @nn.compact
    def __call__(self, patches: chex.Array) -> chex.Array:
        kk = self.kernel_size**2
        channels = patches.shape[-1] // kk
        kernel = self.param(
            "kernel", nn.initializers.lecun_normal(), (channels * kk, self.features)
        )
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        kernel = kernel.reshape(channels, kk, self.features).transpose(1, 0, 2)
        return patches @ kernel.reshape(kk * channels, self.features) + bias


class ResidualBlock(nn.Module):
    """conv3x3 - LayerNorm - ReLU - conv3x3 - LayerNorm, plus the skip, then ReLU."""

    channels: int

    @nn.compact
    def __call__(self, x: chex.Array) -> chex.Array:
        y = PatchConv(self.channels)(x)
        y = nn.relu(nn.LayerNorm()(y))
        y = PatchConv(self.channels)(y)
        y = nn.LayerNorm()(y)
        return nn.relu(x + y)


class PolicyValueNet(nn.Module):
    """Maps observations [B, H, W, C] to (policy logits [B, A], value [B] in [-1, 1])."""

    num_actions: int
    config: NetworkConfig = NetworkConfig()

    @nn.compact
    def __call__(self, obs: chex.Array) -> tuple[chex.Array, chex.Array]:
        cfg = self.config
        x = input_planes(obs)
        x = nn.relu(PatchConv(cfg.channels)(x))
        for _ in range(cfg.num_blocks):
            x = ResidualBlock(cfg.channels)(x)
        batch = x.shape[0]

        p = nn.relu(PatchConv(cfg.policy_filters, 1)(x))
        logits = nn.Dense(self.num_actions)(p.reshape(batch, -1))

        v = nn.relu(PatchConv(cfg.value_filters, 1)(x))
        v = nn.relu(nn.Dense(cfg.value_hidden)(v.reshape(batch, -1)))
        value = jnp.tanh(nn.Dense(1)(v))[:, 0]
        return logits, value


def make_network(env: Env, config: NetworkConfig) -> PolicyValueNet:
    """The policy-value network for `env`'s actions, sized by `config`."""
    return PolicyValueNet(num_actions=env.num_actions, config=config)


def observation_dtype(env: Env):
    """The dtype of `env`'s observations (bool planes for our games; wrapped pgx games
    may observe float32)."""
    return jax.eval_shape(env.init, jax.random.key(0)).observation.dtype


def init_params(env: Env, config: NetworkConfig, key: chex.PRNGKey) -> chex.ArrayTree:
    """Fresh parameters of `make_network(env, config)`; the key is consumed."""
    dummy = jnp.zeros((1, *env.observation_shape), observation_dtype(env))
    return make_network(env, config).init(key, dummy)


def abstract_params(env: Env, config: NetworkConfig) -> chex.ArrayTree:
    """Shapes and dtypes (`jax.ShapeDtypeStruct`) of those parameters; nothing is built."""
    return jax.eval_shape(lambda key: init_params(env, config, key), jax.random.key(0))
