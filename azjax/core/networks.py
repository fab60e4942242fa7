"""Policy-value networks (Flax linen).

`PolicyValueNet` is the network of the reference tic-tac-toe study when `num_blocks=0`
(one 3x3 conv with 32 filters + ReLU; policy head 1x1 conv with 2 filters, ReLU, dense
to the action count; value head 1x1 conv with 1 filter, ReLU, dense 32, ReLU, dense 1,
tanh), and grows a residual tower of `num_blocks` blocks for bigger boards. With
`torso='mlp'` it is a stack of dense layers on the flattened observation instead, with a
dense policy head and a dense tanh value head (tic-tac-toe's recipe: its board is too
small for convolutions to pay).

Two settings choose how it runs, not what it computes: `conv` (how 3x3 convolutions are
computed: shifted copies + one matmul, fastest on CPU, XLA's convolution, the one for
accelerators, or XLA's forward with the matmul backward) and `dtype` (float32, or bfloat16 activations with float32 parameters and
outputs). The parameters are the same pytree whichever is chosen, so a checkpoint trained
one way loads and runs the other way.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from azjax.core.conv import PatchConv, resolve_conv
from azjax.core.fields import bounded, checked
from envs import Env


@checked("network.")
class NetworkConfig:
    """Shape of the policy-value network."""

    torso: Literal["conv", "mlp"] = "conv"
    """'conv': a 3x3 conv stem and `num_blocks` residual blocks, with conv heads (for
    boards). 'mlp': `mlp_layers` dense ReLU layers `channels` wide on the flattened
    observation, a dense policy head and a dense tanh value head (small boards and
    non-spatial games; `num_blocks`, `*_filters`, `value_hidden` and `conv` are unused)."""
    channels: int = bounded(32, low=1)
    """Filters of the stem conv and of every residual block (torso 'mlp': the width of
    every dense layer)."""
    num_blocks: int = bounded(0, low=0)
    """Residual blocks after the stem (0 = the reference tic-tac-toe network)."""
    mlp_layers: int = bounded(3, low=1)
    """Dense layers of the 'mlp' torso."""
    policy_filters: int = bounded(2, low=1)
    """Filters of the policy head's 1x1 conv."""
    value_filters: int = bounded(1, low=1)
    """Filters of the value head's 1x1 conv."""
    value_hidden: int = bounded(32, low=1)
    """Width of the value head's hidden dense layer."""
    conv: Literal["auto", "patch", "xla", "hybrid"] = "auto"
    """How 3x3 convolutions are computed (`azjax.core.conv`): 'patch' (shifted copies + one
    matmul: on a CPU its gradient is a plain matmul, which XLA runs far better than its
    convolution's gradient; docs/results.md), 'xla' (XLA's convolution, for
    GPUs), 'hybrid' (XLA's convolution forward, the patch matmuls backward), or 'auto'
    (on the CPU backend 'patch' where the network is differentiated and 'xla' where it
    only runs forward, e.g. in search; elsewhere 'xla'). The parameters and the function
    are the same either way: a checkpoint from one runs with the other."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Compute dtype of activations and matmuls. With 'bfloat16' the parameters are still
    stored and updated in float32 and the outputs (logits, value) are float32."""
    ownership_head: bool = False
    """An auxiliary head that predicts who owns each cell at the game's end (a territory
    game's `Env.ownership`; KataGo's ownership target): a 1x1 conv and tanh, from the
    mover's view. Trained with weight `learner.ownership_weight`; search never runs it."""
    score_head: bool = False
    """An auxiliary head that predicts the final score margin (`Env.score_margin`) from
    the mover's view, per cell of the board, beside the value (weight
    `learner.score_weight`)."""
    pooled_heads: bool = False
    """Heads whose weights fit every board size (KataGo's global pooling), for a conv
    torso on a game whose actions are its board's cells (then any extra moves, e.g. pass):
    each cell's policy logit from a 1x1 conv, the extra moves' logits and the value (and
    score) from the mean and max of the torso's features over the board, and the stem
    sees a plane of ones beside the observation, so that padding marks the board's edge.
    A network trained on one board size then runs on another (`run.warm_start`: 7x7 Go
    to 9x9). `value_filters` is unused."""

    def _check(self) -> None:
        """The rules that join settings (each field's own bounds are on the field)."""
        if self.pooled_heads and self.torso != "conv":
            raise ValueError("network.pooled_heads needs network.torso 'conv' (dense layers "
                             "over the flattened board fit one board size)")


TORSOS = ("conv", "mlp")
DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def input_planes(obs: chex.Array) -> chex.Array:
    """The network's input from observations.

    Args:
      obs: (B, *observation_shape) observations (bool planes, or float32 for wrapped
        pgx games).

    Returns:
      The same as float32.
    """
    return obs.astype(jnp.float32)


class ResidualBlock(nn.Module):
    """conv3x3 - LayerNorm - ReLU - conv3x3 - LayerNorm, plus the skip, then ReLU."""

    channels: int
    impl: str = "patch"
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: chex.Array) -> chex.Array:
        conv = {"impl": self.impl, "dtype": self.dtype}
        norm = {"dtype": self.dtype, "param_dtype": jnp.float32}
        y = PatchConv(self.channels, **conv)(x)
        y = nn.relu(nn.LayerNorm(**norm)(y))
        y = PatchConv(self.channels, **conv)(y)
        y = nn.LayerNorm(**norm)(y)
        return nn.relu(x + y)


class PolicyValueNet(nn.Module):
    """Maps observations [B, H, W, C] to (policy logits [B, A], value [B] in [-1, 1]),
    both float32 whatever `config.dtype` computes in. Called with `aux=True` it also
    returns a dict of its auxiliary heads' outputs (float32): 'ownership' [B, H*W] in
    [-1, 1] and 'score' [B] (the margin per cell), for the heads it has."""

    num_actions: int
    config: NetworkConfig = NetworkConfig()

    @nn.compact
    def __call__(self, obs: chex.Array, aux: bool = False):
        cfg = self.config
        impl, dtype = resolve_conv(cfg.conv), DTYPES[cfg.dtype]
        dense = {"dtype": dtype, "param_dtype": jnp.float32}
        x = input_planes(obs).astype(dtype)
        batch = x.shape[0]
        if cfg.torso == "mlp":
            x = x.reshape(batch, -1)
            for _ in range(cfg.mlp_layers):
                x = nn.relu(nn.Dense(cfg.channels, **dense)(x))
            logits, v = nn.Dense(self.num_actions, **dense)(x), x
        else:
            if cfg.pooled_heads:
                x = jnp.concatenate([x, jnp.ones_like(x[..., :1])], axis=-1)
            x = nn.relu(PatchConv(cfg.channels, impl=impl, dtype=dtype)(x))
            for _ in range(cfg.num_blocks):
                x = ResidualBlock(cfg.channels, impl=impl, dtype=dtype)(x)
        if cfg.pooled_heads:
            logits, v = self._pooled_heads(x)
        elif cfg.torso == "conv":
            p = nn.relu(PatchConv(cfg.policy_filters, 1, dtype=dtype)(x))
            logits = nn.Dense(self.num_actions, **dense)(p.reshape(batch, -1))
            v = nn.relu(PatchConv(cfg.value_filters, 1, dtype=dtype)(x))
            v = nn.relu(nn.Dense(cfg.value_hidden, **dense)(v.reshape(batch, -1)))
        value = jnp.tanh(nn.Dense(1, **dense)(v).astype(jnp.float32))[:, 0]
        if not aux:
            return logits.astype(jnp.float32), value
        heads = {}
        if cfg.ownership_head:
            cells = obs.shape[1] * obs.shape[2] if obs.ndim == 4 else obs.shape[1]
            if cfg.torso == "mlp":
                owner = nn.Dense(cells, name="ownership", **dense)(x)
            else:
                owner = PatchConv(1, 1, dtype=dtype, name="ownership")(x).reshape(batch, -1)
            heads["ownership"] = jnp.tanh(owner.astype(jnp.float32))
        if cfg.score_head:
            heads["score"] = nn.Dense(1, name="score", **dense)(v).astype(jnp.float32)[:, 0]
        return logits.astype(jnp.float32), value, heads

    def _pooled_heads(self, x: chex.Array) -> tuple[chex.Array, chex.Array]:
        """Policy logits [B, A] and the value's hidden features [B, value_hidden] of
        torso features [B, H, W, C], with weights that do not depend on H and W."""
        cfg = self.config
        dtype = DTYPES[cfg.dtype]
        dense = {"dtype": dtype, "param_dtype": jnp.float32}
        batch, cells = x.shape[0], x.shape[1] * x.shape[2]
        extra = self.num_actions - cells
        if extra < 0:  # ProgramConfig.check says so first, for a run
            raise ValueError(f"network.pooled_heads needs {cells} actions or more (one a "
                             f"cell, then extra moves), not {self.num_actions}")
        pooled = jnp.concatenate([jnp.mean(x, axis=(1, 2)), jnp.max(x, axis=(1, 2))], -1)
        p = nn.relu(PatchConv(cfg.policy_filters, 1, dtype=dtype)(x))
        logits = PatchConv(1, 1, dtype=dtype, name="cell_logits")(p).reshape(batch, cells)
        if extra:
            logits = jnp.concatenate(
                [logits, nn.Dense(extra, name="extra_logits", **dense)(pooled)], -1)
        v = nn.relu(nn.Dense(cfg.value_hidden, **dense)(pooled))
        return logits, v


def make_network(env: Env, config: NetworkConfig, gradients: bool = True) -> PolicyValueNet:
    """The policy-value network for `env`'s actions, sized by `config`.

    `config.conv` 'auto' is resolved here, when the network is built, because the best
    convolution depends on the backend JAX runs on and on whether the network is
    differentiated (`azjax.core.conv.resolve_conv`); the parameters are the same
    whichever is chosen.

    Args:
      env: the game (its `num_actions` A).
      config: the network's settings.
      gradients: whether the network will be differentiated (the learner's) or only
        run forward (search, evaluation, play).

    Returns:
      A `PolicyValueNet`: `apply(params, obs (B, *observation_shape)) -> (logits (B, A),
      value (B,))`, and with `aux=True` a third output, the auxiliary heads by name.
    """
    config = dataclasses.replace(config, conv=resolve_conv(config.conv, gradients))
    return PolicyValueNet(num_actions=env.num_actions, config=config)


def observation_dtype(env: Env):
    """The dtype of `env`'s observations, read from an abstract `env.init` (nothing runs).

    Args:
      env: the game.

    Returns:
      bool for the shipped games; wrapped pgx games may observe float32.
    """
    return jax.eval_shape(env.init, jax.random.key(0)).observation.dtype


def init_params(env: Env, config: NetworkConfig, key: chex.PRNGKey) -> chex.ArrayTree:
    """Fresh parameters of `make_network(env, config)`, auxiliary heads included.

    Args:
      env: the game.
      config: the network's settings.
      key: PRNG key (consumed).

    Returns:
      The parameter pytree.
    """
    dummy = jnp.zeros((1, *env.observation_shape), observation_dtype(env))
    return make_network(env, config).init(key, dummy, aux=True)


def abstract_params(env: Env, config: NetworkConfig) -> chex.ArrayTree:
    """The shapes and dtypes of `init_params(env, config, key)`; nothing is built.

    Args:
      env: the game.
      config: the network's settings.

    Returns:
      A pytree of `jax.ShapeDtypeStruct`.
    """
    return jax.eval_shape(lambda key: init_params(env, config, key), jax.random.key(0))
