"""3x3 convolutions for the policy-value networks, computed the way the backend runs fastest.

`PatchConv` stores a k x k convolution's kernel as a dense layer's and computes it one of
several ways on the same parameters (`CONV_CHOICES`); `resolve_conv` picks one for 'auto'.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

CONV_CHOICES = ("auto", "patch", "xla")


def resolve_conv(conv: str) -> str:
    """'patch' or 'xla': `conv` itself, or for 'auto' 'patch' on the CPU backend (where
    the gradient of XLA's convolution is slow inside loops) and 'xla' elsewhere
    (`jax.default_backend()`, read when called, i.e. when the network is built, not at
    import)."""
    if conv not in CONV_CHOICES:
        raise ValueError(f"network.conv must be one of {CONV_CHOICES}, got {conv!r}")
    if conv == "auto":
        return "patch" if jax.default_backend() == "cpu" else "xla"
    return conv



class PatchConv(nn.Module):
    """A stride-1 'SAME' k x k convolution whose kernel is stored as a dense layer's.

    `impl='patch'` computes it as shifted copies + one matmul: on CPU, the gradient of
    XLA's convolution runs ~10x slower inside loops (`lax.scan`), where training runs; a
    matmul's does not (the forward pass alone is ~2x faster with XLA's convolution on
    jax 0.10: `benchmarks/conv_throughput.py`). The k*k shifted copies are slices of the
    zero-padded input (`lax.conv_general_dilated_patches` is itself a convolution: 5x
    slower at 32 channels). `impl='xla'` calls XLA's convolution (`lax.conv_general_dilated`) on the
    same parameters, for accelerators. `dtype` is the compute dtype; the parameters are
    float32 whichever it is.
    """

    features: int
    kernel_size: int = 3
    impl: str = "patch"
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: chex.Array) -> chex.Array:
        if self.kernel_size == 1:  # a 1x1 convolution is a dense layer either way
            return nn.Dense(self.features, dtype=self.dtype, param_dtype=jnp.float32)(x)
        return _PatchDense(self.features, self.kernel_size, self.impl, self.dtype,
                           name="Dense_0")(x)


class _PatchDense(nn.Module):
    """The k x k convolution of `PatchConv` on input [B, H, W, C]. Its kernel is stored as
    a dense layer's, [C*k*k, features], in `lax.conv_general_dilated_patches` order
    (channel, row offset, column offset), the layout of earlier versions, so their
    checkpoints still load."""

    features: int
    kernel_size: int
    impl: str
    dtype: Any

    @nn.compact
    def __call__(self, x: chex.Array) -> chex.Array:
        k = self.kernel_size
        channels = x.shape[-1]
        kernel = self.param(
            "kernel", nn.initializers.lecun_normal(), (channels * k * k, self.features),
            jnp.float32,
        )
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,), jnp.float32)
        x, kernel, bias = x.astype(self.dtype), kernel.astype(self.dtype), bias.astype(self.dtype)
        lo = (k - 1) // 2
        pad = (lo, k - 1 - lo)
        kernel = kernel.reshape(channels, k, k, self.features)
        if self.impl == "xla":
            return jax.lax.conv_general_dilated(
                x, kernel.transpose(1, 2, 0, 3), (1, 1), (pad, pad),
                dimension_numbers=("NHWC", "HWIO", "NHWC"),
            ) + bias
        if self.impl != "patch":
            raise ValueError(f"PatchConv impl must be 'patch' or 'xla', got {self.impl!r}")
        h, w = x.shape[1], x.shape[2]
        padded = jnp.pad(x, ((0, 0), pad, pad, (0, 0)))
        patches = jnp.concatenate(
            [padded[:, i : i + h, j : j + w, :] for i in range(k) for j in range(k)], axis=-1
        )
        kernel = kernel.transpose(1, 2, 0, 3).reshape(k * k * channels, self.features)
        return patches @ kernel + bias
