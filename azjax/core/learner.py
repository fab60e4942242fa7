"""The AlphaZero loss and an Optax update step.

loss = mean((z - v)^2) - mean(pi^T log p) + c * ||theta||^2

plus, for a network with auxiliary heads (`NetworkConfig.ownership_head`, `score_head`),
KataGo's auxiliary targets: the mean squared error of the ownership map and of the
score margin per cell, weighted by `ownership_weight` and `score_weight`; and with
`score_value_mix` > 0 a value target that also sees the final score margin.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from azjax.core.fields import bounded, checked, traced


@checked("learner.", pytree=True)
class LearnerConfig:
    """Optimiser and loss settings."""

    learning_rate: float = traced(1e-3, above=0)
    """Adam step size (traced: it lives in the optimizer state, set at initialisation)."""
    weight_decay: float = bounded(1e-4, low=0)
    """c in the loss: the L2 penalty on all parameters."""
    batch_size: int = bounded(256, low=1)
    """Positions per gradient step."""
    max_grad_norm: float = bounded(1.0, low=0)
    """Gradients are clipped to this global norm (0 switches clipping off)."""
    ownership_weight: float = bounded(1.0, low=0)
    """Weight of the ownership head's loss (mean squared error per cell), where the
    network has one."""
    score_weight: float = bounded(1.0, low=0)
    """Weight of the score head's loss (squared error of the margin per cell), where the
    network has one."""
    score_value_mix: float = bounded(0.0, low=0, high=1)
    """Value target = (1 - mix) * the win/loss target + mix * tanh(final score margin
    from the mover's view / `score_value_scale`): the value also learns by how much a
    game was won (KataGo's score utility, as a target). 0: off; needs a game with
    `Env.score_margin`. Positions of resigned games keep the win/loss target."""
    score_value_scale: float = bounded(20.0, above=0)
    """Points of margin at which the score part of the value target reaches tanh(1)."""

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
    ownership_loss: chex.Array | None = None
    score_loss: chex.Array | None = None


def alphazero_loss(
    logits: chex.Array,
    value: chex.Array,
    target_policy: chex.Array,
    target_value: chex.Array,
    params: chex.ArrayTree,
    weight_decay: chex.Numeric,
    weights: chex.Array | None = None,
    policy_weights: chex.Array | None = None,
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
      policy_weights: optional [B] weights of the policy term alone (default `weights`;
        playout cap randomisation trains the policy on the full searches only).

    Returns:
      `LossInfo` of () float32 scalars: the total (value + policy + c * L2) and its
      terms, with the policy's entropy for monitoring.
    """
    chex.assert_equal_shape([logits, target_policy])
    chex.assert_equal_shape([value, target_value])
    if weights is None:
        weights = jnp.ones_like(value)
    denom = jnp.maximum(jnp.sum(weights), 1.0)
    log_p = jax.nn.log_softmax(logits)
    value_loss = jnp.sum(weights * (target_value - value) ** 2) / denom
    if policy_weights is None:
        policy_weights, policy_denom = weights, denom
    else:
        policy_denom = jnp.maximum(jnp.sum(policy_weights), 1.0)
    policy_loss = -jnp.sum(policy_weights * jnp.sum(target_policy * log_p, axis=-1)
                           ) / policy_denom
    entropy = -jnp.sum(policy_weights * jnp.sum(jnp.exp(log_p) * log_p, axis=-1)
                       ) / policy_denom
    l2 = sum(jnp.sum(jnp.square(p)) for p in jax.tree.leaves(params))
    total = value_loss + policy_loss + weight_decay * l2
    return LossInfo(
        total=total, value_loss=value_loss, policy_loss=policy_loss,
        policy_entropy=entropy, l2=l2,
    )


def auxiliary_losses(heads: dict[str, chex.Array], ownership: chex.Array | None,
                     score: chex.Array | None, player: chex.Array,
                     weights: chex.Array, cells: int) -> dict[str, chex.Array]:
    """The auxiliary heads' losses of one batch, by head: 'ownership' (mean over cells
    of the squared error) and 'score' (squared error of the margin per cell).

    Args:
      heads: the network's auxiliary outputs ('ownership' [B, cells] in [-1, 1] and
        'score' [B], from the mover's view; `PolicyValueNet(aux=True)`).
      ownership: [B, cells] final owners from player 0's view (+1, -1, 0), or None.
      score: [B] final score margin for player 0 (points), or None.
      player: [B] the player to move, whose view the heads take.
      weights: [B] per-example weights (0 masks an example out).
      cells: the board's cells, the score's unit (the margin per cell is learned, so
        that one scale fits every board size).

    Returns:
      head name -> () float32 loss, for the heads present in `heads`.
    """
    sign = jnp.where(player == 0, 1.0, -1.0)
    denom = jnp.maximum(jnp.sum(weights), 1.0)
    losses = {}
    if "ownership" in heads:
        chex.assert_equal_shape([heads["ownership"], ownership])
        target = ownership.astype(jnp.float32) * sign[:, None]
        error = jnp.mean((heads["ownership"] - target) ** 2, axis=-1)
        losses["ownership"] = jnp.sum(weights * error) / denom
    if "score" in heads:
        target = score * sign / cells
        losses["score"] = jnp.sum(weights * (heads["score"] - target) ** 2) / denom
    return losses


def score_value_target(target: chex.Array, score: chex.Array, player: chex.Array,
                       known: chex.Array | None, mix: float, scale: float) -> chex.Array:
    """The value target mixed with the squashed final score margin (KataGo's score utility).

    Args:
      target: (B,) float32: the value target, from the mover's view.
      score: (B,) float32: the final score margin, from player 0's view (points).
      player: (B,) int32: the player to move.
      known: (B,) bool or None: False where the game has no final score (resigned);
        the target stays as it is there.
      mix: the margin's weight.
      scale: points per unit of tanh.

    Returns:
      (B,) float32: `(1 - mix) * target + mix * tanh(margin / scale)`, the margin from
      the mover's view.
    """
    chex.assert_equal_shape([target, score, player])
    sign = jnp.where(player == 0, 1.0, -1.0)
    mixed = (1.0 - mix) * target + mix * jnp.tanh(score * sign / scale)
    return mixed if known is None else jnp.where(known, mixed, target)
