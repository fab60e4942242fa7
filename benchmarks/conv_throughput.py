"""Why `PatchConv`: a 3x3 conv stack inside a loop, three ways, in the same run.

A stack of `--layers` 3x3 'SAME' convolutions (`--channels` wide, ReLU between) on a
`--height` x `--width` board, applied `--steps` times inside a `lax.scan` (as self-play
and training run it), for:
  * `PatchConv` (ours): k*k shifted slices + one matmul,
  * `flax.linen.Conv` (the reference),
  * `lax.conv_general_dilated_patches` + matmul (what `PatchConv` used before).
`--grad` times forward + backward instead (as the learner runs it). Prints positions/s (batch x steps / time; compile excluded, median of repeats) and the
ratio to `nn.Conv`.

    python benchmarks/conv_throughput.py [--channels 32] [--layers 4] [--batch 256]
"""

from __future__ import annotations

import argparse
import statistics
import time

import flax.linen as nn
import jax
import jax.numpy as jnp

from azjax.networks import PatchConv


class LaxPatches(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = jax.lax.conv_general_dilated_patches(
            x, (3, 3), (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return nn.Dense(self.features)(x)


class Stack(nn.Module):
    kind: str
    channels: int
    layers: int

    @nn.compact
    def __call__(self, x):
        for _ in range(self.layers):
            if self.kind == "patchconv":
                x = PatchConv(self.channels)(x)
            elif self.kind == "nn.Conv":
                x = nn.Conv(self.channels, (3, 3), padding="SAME")(x)
            else:
                x = LaxPatches(self.channels)(x)
            x = nn.relu(x)
        return jnp.sum(x, axis=(1, 2, 3))


def measure(kind: str, args) -> float:
    net = Stack(kind, args.channels, args.layers)
    x = jax.random.normal(jax.random.key(0), (args.batch, args.height, args.width, args.channels))
    params = net.init(jax.random.key(1), x)

    def forward(params, x, carry):
        return net.apply(params, x + carry[:, None, None, None] * 1e-6)

    def gradient(params, x, carry):
        grads = jax.grad(lambda p: jnp.sum(forward(p, x, carry)))(params)
        return carry + sum(jnp.sum(g) for g in jax.tree.leaves(grads)) * 1e-9

    step = gradient if args.grad else forward

    @jax.jit
    def run(params, x):
        def body(carry, _):
            return step(params, x, carry), None

        final, _ = jax.lax.scan(body, jnp.zeros(args.batch), None, length=args.steps)
        return final

    jax.block_until_ready(run(params, x))
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(params, x))
        times.append(time.perf_counter() - start)
    return args.batch * args.steps / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--height", type=int, default=6)
    parser.add_argument("--width", type=int, default=7)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--grad", action="store_true", help="time forward + backward")
    args = parser.parse_args()
    print(f"{args.layers} x conv3x3 {args.channels}ch on {args.height}x{args.width}, batch "
          f"{args.batch}, {args.steps} {'gradients' if args.grad else 'forward passes'} inside "
          f"lax.scan, backend {jax.default_backend()}")
    rates = {kind: measure(kind, args) for kind in ("nn.Conv", "patchconv", "lax patches")}
    for kind, rate in rates.items():
        print(f"{kind:>12}: {rate:>10,.0f} positions/s  ({rate / rates['nn.Conv']:.2f}x nn.Conv)")


if __name__ == "__main__":
    main()
