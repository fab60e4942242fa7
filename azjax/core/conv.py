"""3x3 convolutions for the policy-value networks, computed the way the backend runs fastest.

`PatchConv` stores a k x k convolution's kernel as a dense layer's and computes it one of
several ways on the same parameters (`CONV_CHOICES`); `resolve_conv` picks one for 'auto'.

  * 'patch': k*k shifted slices of the zero-padded input + one matmul, forward and
    (by autodiff) backward. The CPU default for the learner.
  * 'xla': XLA's convolution (`lax.conv_general_dilated`) forward and backward. For
    accelerators, and on CPU for networks that only run forward; XLA's CPU gradient
    inside `lax.scan` is much slower than 'patch'.
  * 'hybrid': XLA's convolution forward, and a `jax.custom_vjp` backward pass computed
    from shifted slices + matmuls (kernel cotangent: per tap, the shifted input
    transposed times the output cotangent; input cotangent: the output cotangent
    convolved, as shifted slices + matmuls, with the flipped, channel-swapped kernel).

Why 'auto' on CPU takes 'patch' for the differentiated network (the learner's) and 'xla'
for forward-only ones (search, evaluation, play), and not 'hybrid': the driver vmaps the
training step over experiments, each with its own parameters, and XLA's convolution with a
batched kernel is a grouped convolution, which loses on CPU what 'hybrid' gains in its
forward pass. 'hybrid' is there to choose by hand. The figures behind these choices are in
docs/results.md#convolution-implementations.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

CONV_CHOICES = ("auto", "patch", "xla", "hybrid")


def resolve_conv(conv: str, gradients: bool = True) -> str:
    """'patch', 'xla' or 'hybrid': `conv` itself, or for 'auto' 'xla' off the CPU backend
    and, on it, 'patch' for a network that is differentiated (the learner's: XLA's
    gradient is slow there) and 'xla' for one that only runs forward (`gradients=False`:
    search, evaluation, play: XLA's forward pass is the faster). The backend is read
    when called, i.e. when the network is built, not at import."""
    if conv not in CONV_CHOICES:
        raise ValueError(f"network.conv must be one of {CONV_CHOICES}, got {conv!r}")
    if conv == "auto":
        return "patch" if gradients and jax.default_backend() == "cpu" else "xla"
    return conv


def _pads(k: int) -> tuple[int, int]:
    """Zero rows (columns) before and after the input of a stride-1 'SAME' k x k conv."""
    lo = (k - 1) // 2
    return lo, k - 1 - lo


def _patches(x: chex.Array, k: int, pad: tuple[int, int]) -> chex.Array:
    """[B, H, W, C] -> [B, H, W, k*k*C]: the k*k shifted windows of `x` zero-padded by
    `pad` in height and width, in (row offset, column offset, channel) order."""
    h, w = x.shape[-3], x.shape[-2]
    padded = jnp.pad(x, ((0, 0),) * (x.ndim - 3) + (pad, pad, (0, 0)))
    return jnp.concatenate(
        [padded[..., i : i + h, j : j + w, :] for i in range(k) for j in range(k)], axis=-1
    )


def _xla_conv(x: chex.Array, kernel: chex.Array) -> chex.Array:
    """Stride-1 'SAME' conv of x [B, H, W, C] with kernel [k, k, C, F] (HWIO), by XLA."""
    pad = _pads(kernel.shape[0])
    return jax.lax.conv_general_dilated(
        x, kernel, (1, 1), (pad, pad), dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


@jax.custom_vjp
def _hybrid_conv(x: chex.Array, kernel: chex.Array) -> chex.Array:
    """`_xla_conv` with its backward pass computed from patches and matmuls."""
    return _xla_conv(x, kernel)


def _hybrid_conv_fwd(x, kernel):
    return _xla_conv(x, kernel), (x, kernel)


def _hybrid_conv_bwd(residuals, g):
    x, kernel = residuals
    k, _, channels, features = kernel.shape
    lo, hi = _pads(k)
    h, w = x.shape[1], x.shape[2]
    # Kernel cotangent: tap (i, j) of the kernel met the input shifted by (i, j), so its
    # cotangent is that shifted input (a slice of the padded input), transposed, times the
    # output cotangent, summed over batch and board: one [C, B*H*W] @ [B*H*W, F] per tap.
    padded = jnp.pad(x, ((0, 0), (lo, hi), (lo, hi), (0, 0)))
    g_rows = g.reshape(-1, features)
    d_kernel = jnp.stack([
        jnp.stack([padded[:, i : i + h, j : j + w, :].reshape(-1, channels).T @ g_rows
                   for j in range(k)])
        for i in range(k)
    ])
    # Input cotangent: x[p] reaches y[p + lo - i] through tap i, so dx[p] sums
    # g[p + lo - i] @ kernel[i]^T over taps: a stride-1 conv of g padded (hi, lo) with
    # the kernel flipped in both board axes and its channel axes swapped, computed as
    # one [B, H, W, F] @ [F, C] matmul per tap of the shifted, padded g.
    g_padded = jnp.pad(g, ((0, 0), (hi, lo), (hi, lo), (0, 0)))
    flipped = kernel[::-1, ::-1]
    d_x = sum(g_padded[:, i : i + h, j : j + w, :] @ flipped[i, j].T
              for i in range(k) for j in range(k))
    return d_x.astype(x.dtype), d_kernel.astype(kernel.dtype)


_hybrid_conv.defvjp(_hybrid_conv_fwd, _hybrid_conv_bwd)

IMPLS = tuple(c for c in CONV_CHOICES if c != "auto")


class PatchConv(nn.Module):
    """A stride-1 'SAME' k x k convolution whose kernel is stored as a dense layer's.

    `impl` is how it is computed, on the same parameters (see the module docstring for
    why each exists): 'patch' as k*k shifted copies + one matmul (the shifted copies are
    slices of the zero-padded input, not `lax.conv_general_dilated_patches`, which is
    itself a convolution and slow on CPU); 'xla' with XLA's convolution
    (`lax.conv_general_dilated`), for accelerators and forward-only networks; 'hybrid' with
    XLA's convolution forward and a custom backward pass of shifted slices + matmuls (on
    CPU XLA's forward pass is fast but its gradient inside loops is slow). Any other
    `impl` is a ValueError. `dtype` is the compute dtype (input, kernel and bias are cast
    to it, the output is in it; the backward pass computes in it too); the parameters are
    float32 whichever it is.
    """

    features: int
    kernel_size: int = 3
    impl: str = "patch"
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: chex.Array) -> chex.Array:
        if self.impl not in IMPLS:
            raise ValueError(f"PatchConv impl must be one of {IMPLS}, got {self.impl!r}")
        if self.kernel_size == 1:  # a 1x1 convolution is a dense layer either way
            return nn.Dense(self.features, dtype=self.dtype, param_dtype=jnp.float32)(x)
        return _PatchDense(self.features, self.kernel_size, self.impl, self.dtype,
                           name="Dense_0")(x)


class _PatchDense(nn.Module):
    """The k x k convolution of `PatchConv` on input [B, H, W, C]. Its kernel is stored as
    a dense layer's, [C*k*k, features], in `lax.conv_general_dilated_patches` order
    (channel, row offset, column offset), so that checkpoints written in that layout
    load whichever `impl` computes the convolution."""

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
        # [C*k*k, F] in (channel, row, column) order -> HWIO [k, k, C, F].
        kernel = kernel.reshape(channels, k, k, self.features).transpose(1, 2, 0, 3)
        if self.impl == "xla":
            return _xla_conv(x, kernel) + bias
        if self.impl == "hybrid":
            return _hybrid_conv(x, kernel) + bias
        patches = _patches(x, k, _pads(k))
        return patches @ kernel.reshape(k * k * channels, self.features) + bias
