"""The AlphaZero loss and an Optax update step.

loss = mean((z - v)^2) - mean(pi^T log p) + c * ||theta||^2
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from azjax.core.fields import check_setting, config_dataclass, traced


@config_dataclass
class LearnerConfig:
    """Optimiser and loss settings."""

    learning_rate: float = traced(1e-3)
    """Adam step size (traced: it lives in the optimizer state, set at initialisation)."""
    weight_decay: float = 1e-4
    """c in the loss: the L2 penalty on all parameters."""
    batch_size: int = 256
    """Positions per gradient step."""
    max_grad_norm: float = 1.0
    """Gradients are clipped to this global norm (0 switches clipping off)."""

    def validate(self) -> None:
        """Raises ValueError for settings that cannot train."""
        check_setting("learner.learning_rate", self.learning_rate, float, above=0)
        check_setting("learner.weight_decay", self.weight_decay, float, 0)
        check_setting("learner.batch_size", self.batch_size, int, 1)
        check_setting("learner.max_grad_norm", self.max_grad_norm, float, 0)

    def optimizer(self) -> optax.GradientTransformation:
        """Adam with optional global-norm clipping; the learning rate is injectable."""
        adam = optax.inject_hyperparams(optax.adam)(learning_rate=self.learning_rate)
        if self.max_grad_norm > 0:
            return optax.chain(optax.clip_by_global_norm(self.max_grad_norm), adam)
        return adam


@struct.dataclass
class LossInfo:
    """Scalar loss terms of one batch."""

    total: chex.Array
    value_loss: chex.Array
    policy_loss: chex.Array
    policy_entropy: chex.Array
    l2: chex.Array


def alphazero_loss(
    logits: chex.Array,
    value: chex.Array,
    target_policy: chex.Array,
    target_value: chex.Array,
    params: chex.ArrayTree,
    weight_decay: chex.Numeric,
    weights: chex.Array | None = None,
) -> LossInfo:
    """The AlphaZero loss of one batch.

    Args:
      logits: [B, A] network policy logits (illegal actions included; pi is 0 there).
      value: [B] network value in [-1, 1].
      target_policy: [B, A] search policy pi.
      target_value: [B] outcome z from the mover's view.
      params: parameters, for the L2 term c * sum(theta^2).
      weight_decay: c.
      weights: optional [B] per-example weights (0 masks an example out).
    """
    chex.assert_equal_shape([logits, target_policy])
    chex.assert_equal_shape([value, target_value])
    if weights is None:
        weights = jnp.ones_like(value)
    denom = jnp.maximum(jnp.sum(weights), 1.0)
    log_p = jax.nn.log_softmax(logits)
    value_loss = jnp.sum(weights * (target_value - value) ** 2) / denom
    policy_loss = -jnp.sum(weights * jnp.sum(target_policy * log_p, axis=-1)) / denom
    entropy = -jnp.sum(weights * jnp.sum(jnp.exp(log_p) * log_p, axis=-1)) / denom
    l2 = sum(jnp.sum(jnp.square(p)) for p in jax.tree.leaves(params))
    total = value_loss + policy_loss + weight_decay * l2
    return LossInfo(
        total=total, value_loss=value_loss, policy_loss=policy_loss,
        policy_entropy=entropy, l2=l2,
    )
