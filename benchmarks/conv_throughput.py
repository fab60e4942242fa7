"""Why `PatchConv`: a 3x3 conv stack inside a loop, three ways, in the same run.

A stack of `--layers` 3x3 'SAME' convolutions (`--channels` wide, ReLU between) on a
`--height` x `--width` board, applied `--steps` times inside a `lax.scan` (as self-play
and training run it), for:
  * `PatchConv` (ours): k*k shifted slices + one matmul,
  * `flax.linen.Conv` (the reference),
  * `lax.conv_general_dilated_patches` + matmul (what `PatchConv` used before).
`--grad` times forward + backward instead (as the learner runs it). Prints positions/s
(batch x steps / time; compile excluded, median of repeats) and the ratio to `nn.Conv`.

`--network` times the whole `PolicyValueNet` instead (`--blocks` residual blocks,
`--channels` wide, on 0/1 observation planes) for each `NetworkConfig.conv`
('patch', 'xla') and `NetworkConfig.dtype` ('float32', 'bfloat16'), on the same
parameters, and prints the ratio of each to patch/float32 and of xla to patch: run it on
a GPU to see which `conv` and `dtype` win there ('auto' picks 'patch' on CPU only).

    python benchmarks/conv_throughput.py [--channels 32] [--layers 4] [--batch 256]
    python benchmarks/conv_throughput.py --network [--blocks 2] [--grad]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import flax.linen as nn
import jax
import jax.numpy as jnp

from azjax.networks import NetworkConfig, PatchConv, PolicyValueNet


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
    return rate(net.apply, params, x, args)


def rate(apply, params, x, args) -> float:
    """Positions/s of `apply(params, x)` (its outputs summed), or of its gradient with
    `--grad`, run `--steps` times inside one jitted `lax.scan`."""

    def forward(params, x, carry):
        perturbed = x + (carry[:, None, None, None] * 1e-6).astype(x.dtype)
        out = apply(params, perturbed)
        return sum(jnp.sum(o.reshape(args.batch, -1), axis=1) for o in jax.tree.leaves(out))

    def gradient(params, x, carry):
        grads = jax.grad(lambda p: jnp.sum(forward(p, x, carry)))(params)
        return carry + sum(jnp.sum(g) for g in jax.tree.leaves(grads)) * 1e-9

    step = gradient if args.grad else forward

    @jax.jit
    def run(params, x):
        def body(carry, _):
            return step(params, x, carry).astype(jnp.float32), None

        final, _ = jax.lax.scan(body, jnp.zeros(args.batch), None, length=args.steps)
        return final

    jax.block_until_ready(run(params, x))
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        jax.block_until_ready(run(params, x))
        times.append(time.perf_counter() - start)
    return args.batch * args.steps / statistics.median(times)


NETWORK_VARIANTS = [(conv, dtype) for dtype in ("float32", "bfloat16") for conv in ("patch", "xla")]


def measure_networks(args) -> dict[tuple[str, str], float]:
    """Positions/s of the whole network for each (conv, dtype), on one set of parameters.
    The observations are float32 planes (0/1), so the loop can perturb them."""
    base = NetworkConfig(channels=args.channels, num_blocks=args.blocks)
    obs = jax.random.bernoulli(
        jax.random.key(0), 0.3, (args.batch, args.height, args.width, args.planes)
    ).astype(jnp.float32)
    num_actions = args.height * args.width
    params = PolicyValueNet(num_actions, base).init(jax.random.key(1), obs)
    rates = {}
    for conv, dtype in NETWORK_VARIANTS:
        net = PolicyValueNet(num_actions, dataclasses.replace(base, conv=conv, dtype=dtype))
        rates[conv, dtype] = rate(net.apply, params, obs, args)
    return rates


def main_network(args) -> None:
    print(f"PolicyValueNet {args.blocks} blocks x {args.channels}ch on {args.height}x"
          f"{args.width} ({args.planes} planes), batch {args.batch}, {args.steps} "
          f"{'gradients' if args.grad else 'forward passes'} inside lax.scan, backend "
          f"{jax.default_backend()} ({jax.devices()[0].device_kind})")
    rates = measure_networks(args)
    reference = rates["patch", "float32"]
    for (conv, dtype), r in rates.items():
        print(f"{conv:>6} {dtype:>9}: {r:>10,.0f} positions/s  "
              f"({r / reference:.2f}x patch float32)")
    for dtype in ("float32", "bfloat16"):
        ratio = rates["xla", dtype] / rates["patch", dtype]
        print(f"{dtype}: xla / patch = {ratio:.2f} -> use conv='{'xla' if ratio > 1 else 'patch'}'")
    for conv in ("patch", "xla"):
        print(f"{conv}: bfloat16 / float32 = "
              f"{rates[conv, 'bfloat16'] / rates[conv, 'float32']:.2f}")


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
    parser.add_argument("--network", action="store_true",
                        help="time the whole PolicyValueNet for each conv and dtype")
    parser.add_argument("--blocks", type=int, default=2, help="residual blocks (--network)")
    parser.add_argument("--planes", type=int, default=2,
                        help="observation planes (--network)")
    args = parser.parse_args()
    if args.network:
        main_network(args)
        return
    print(f"{args.layers} x conv3x3 {args.channels}ch on {args.height}x{args.width}, batch "
          f"{args.batch}, {args.steps} {'gradients' if args.grad else 'forward passes'} inside "
          f"lax.scan, backend {jax.default_backend()}")
    rates = {kind: measure(kind, args) for kind in ("nn.Conv", "patchconv", "lax patches")}
    for kind, rate in rates.items():
        print(f"{kind:>12}: {rate:>10,.0f} positions/s  ({rate / rates['nn.Conv']:.2f}x nn.Conv)")


if __name__ == "__main__":
    main()
