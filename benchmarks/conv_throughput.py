"""Which convolution: a 3x3 conv stack inside a loop, several ways, in the same run.

A stack of `--layers` 3x3 'SAME' convolutions (`--channels` wide, ReLU between) on a
`--height` x `--width` board, applied `--steps` times inside a `lax.scan` (as self-play
and training run it), for each of `--kinds` (the first is the reference):
  * 'patch', 'xla', 'hybrid': `PatchConv`'s impls (default),
  * 'nn.Conv' (`flax.linen.Conv`, the reference function),
  * 'lax patches': `lax.conv_general_dilated_patches` + matmul (what `PatchConv` used
    before).
`--mode forward` times forward passes (as the search runs them), `--mode gradient` (or
`--grad`) forward + backward with respect to the parameters (as the learner runs them),
`--mode both` (default) one then the other. Prints positions/s (batch x steps / time;
compile excluded, `block_until_ready`, median of `--repeats` rounds that time every kind
in turn, so load on a shared machine hits them alike) and the ratio to the reference.

`--network` times the whole `PolicyValueNet` instead (`--blocks` residual blocks,
`--channels` wide, on 0/1 observation planes) for each `NetworkConfig.conv` in `--convs`
and `NetworkConfig.dtype` in `--dtypes`, on the same parameters, and prints ratios to
'patch'. `--experiments E` vmaps the loop over E copies of the parameters, as the driver
trains E experiments (XLA's convolution then becomes a grouped convolution).

The shapes that matter (defaults: Connect Four's 7 convs, 32 channels, 6x7, batch 256):

    python benchmarks/conv_throughput.py [--batch 128]
    python benchmarks/conv_throughput.py --network --blocks 3 --dtypes float32 [--batch 128]
    python benchmarks/conv_throughput.py --network --blocks 3 --dtypes float32 \
        --convs patch,hybrid --experiments 4 --batch 64
    python benchmarks/conv_throughput.py --layers 1 --channels 128 --height 3 --width 3
    python benchmarks/conv_throughput.py --network --blocks 0 --channels 128 --height 3 \
        --width 3 --dtypes float32 --steps 200

`--quick` times both, the stack (a `PatchConv`, `nn.Conv` and 'lax patches') and the
network ('patch' and 'hybrid', both dtypes), at tiny sizes in seconds (to check the script
end to end; the figures mean nothing).

Measured on a shared 2-core CPU (jax 0.10.2; load 4-9, so ratios +-15%), ratios to
'patch': Connect Four, without vmap, 'hybrid' 1.65-2.36x forward ('xla' alike) and
1.12-1.26x forward + backward ('xla' 0.09x); vmapped over 1 experiment 1.9-3.2x forward
and 0.74-1.01x forward + backward; over 4 experiments (batch 64 each) 0.79-0.88x forward
and 0.83-0.88x forward + backward. Tic-tac-toe
network: all within 5% forward. Hence `resolve_conv('auto')` stays 'patch' on CPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import _quick
import flax.linen as nn
import jax
import jax.numpy as jnp

from azjax.core.networks import NetworkConfig, PatchConv, PolicyValueNet


class LaxPatches(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        x = jax.lax.conv_general_dilated_patches(
            x, (3, 3), (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return nn.Dense(self.features)(x)


IMPLS = ("patch", "xla", "hybrid")  # PatchConv's impls; the reference kinds follow
KINDS = (*IMPLS, "nn.Conv", "lax patches")


class Stack(nn.Module):
    kind: str
    channels: int
    layers: int

    @nn.compact
    def __call__(self, x):
        for _ in range(self.layers):
            if self.kind in IMPLS:
                x = PatchConv(self.channels, impl=self.kind)(x)
            elif self.kind == "nn.Conv":
                x = nn.Conv(self.channels, (3, 3), padding="SAME")(x)
            else:
                x = LaxPatches(self.channels)(x)
            x = nn.relu(x)
        return jnp.sum(x, axis=(1, 2, 3))


def stack_runner(kind: str, args, grad: bool):
    net = Stack(kind, args.channels, args.layers)
    x = jax.random.normal(jax.random.key(0), (args.batch, args.height, args.width, args.channels))
    params = net.init(jax.random.key(1), x)
    return runner(net.apply, params, x, args, grad)


def runner(apply, params, x, args, grad: bool):
    """A compiled, warmed-up call that runs `apply(params, x)` (its outputs summed), or its
    gradient with respect to `params` when `grad`, `--steps` times inside one jitted
    `lax.scan`, and waits for it (`block_until_ready`)."""

    def forward(params, x, carry):
        perturbed = x + (carry[:, None, None, None] * 1e-6).astype(x.dtype)
        out = apply(params, perturbed)
        return sum(jnp.sum(o.reshape(args.batch, -1), axis=1) for o in jax.tree.leaves(out))

    def gradient(params, x, carry):
        grads = jax.grad(lambda p: jnp.sum(forward(p, x, carry)))(params)
        return carry + sum(jnp.sum(g) for g in jax.tree.leaves(grads)) * 1e-9

    step = gradient if grad else forward

    def scan(params, x):
        def body(carry, _):
            return step(params, x, carry).astype(jnp.float32), None

        final, _ = jax.lax.scan(body, jnp.zeros(args.batch), None, length=args.steps)
        return final

    if args.experiments:  # as the driver runs E experiments: vmapped, own parameters each
        params = jax.tree.map(
            lambda p: jnp.stack([p * (1 + 0.01 * e) for e in range(args.experiments)]), params)
        x = jnp.stack([x] * args.experiments)
        scan = jax.vmap(scan)
    run = jax.jit(scan)
    jax.block_until_ready(run(params, x))  # compile (not timed)
    return lambda: jax.block_until_ready(run(params, x))


def rates(runners: dict, args) -> dict:
    """Positions/s (batch x steps / median time) of each runner, timed in turn one call
    each per round for `--repeats` rounds, so that load on a shared machine hits them
    alike."""
    times = {name: [] for name in runners}
    for _ in range(args.repeats):
        for name, run in runners.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    positions = args.batch * args.steps * max(args.experiments, 1)
    return {name: positions / statistics.median(t) for name, t in times.items()}


def measure_networks(args, grad: bool) -> dict[tuple[str, str], float]:
    """Positions/s of the whole network for each (conv, dtype), on one set of parameters.
    The observations are float32 planes (0/1), so the loop can perturb them."""
    base = NetworkConfig(channels=args.channels, num_blocks=args.blocks)
    obs = jax.random.bernoulli(
        jax.random.key(0), 0.3, (args.batch, args.height, args.width, args.planes)
    ).astype(jnp.float32)
    num_actions = args.height * args.width
    params = PolicyValueNet(num_actions, base).init(jax.random.key(1), obs)
    runners = {}
    for dtype in args.dtypes:
        for conv in args.convs:
            net = PolicyValueNet(num_actions, dataclasses.replace(base, conv=conv, dtype=dtype))
            runners[conv, dtype] = runner(net.apply, params, obs, args, grad)
    return rates(runners, args)


def vmapped(args) -> str:
    return f", vmapped over {args.experiments} experiment(s)" if args.experiments else ""


def main_network(args, grad: bool) -> None:
    print(f"PolicyValueNet {args.blocks} blocks x {args.channels}ch on {args.height}x"
          f"{args.width} ({args.planes} planes), batch {args.batch}, {args.steps} "
          f"{'gradients' if grad else 'forward passes'} inside lax.scan, backend "
          f"{jax.default_backend()} ({jax.devices()[0].device_kind}){vmapped(args)}")
    found = measure_networks(args, grad)
    reference = next(iter(found.values()))
    for (conv, dtype), r in found.items():
        print(f"{conv:>6} {dtype:>9}: {r:>10,.0f} positions/s  "
              f"({r / reference:.2f}x {args.convs[0]} {args.dtypes[0]})")
    for dtype in args.dtypes:
        if "patch" in args.convs:
            ratios = ", ".join(f"{conv} / patch = {found[conv, dtype] / found['patch', dtype]:.2f}"
                               for conv in args.convs if conv != "patch")
            best = max(args.convs, key=lambda conv: found[conv, dtype])
            print(f"{dtype}: {ratios} -> fastest conv='{best}'")
    if "float32" in args.dtypes and "bfloat16" in args.dtypes:
        for conv in args.convs:
            print(f"{conv}: bfloat16 / float32 = "
                  f"{found[conv, 'bfloat16'] / found[conv, 'float32']:.2f}")


def main_stack(args, grad: bool) -> None:
    print(f"{args.layers} x conv3x3 {args.channels}ch on {args.height}x{args.width}, batch "
          f"{args.batch}, {args.steps} {'gradients' if grad else 'forward passes'} inside "
          f"lax.scan, backend {jax.default_backend()}{vmapped(args)}")
    found = rates({kind: stack_runner(kind, args, grad) for kind in args.kinds}, args)
    reference = args.kinds[0]
    for kind, r in found.items():
        print(f"{kind:>12}: {r:>10,.0f} positions/s  ({r / found[reference]:.2f}x {reference})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--layers", type=int, default=7)
    parser.add_argument("--height", type=int, default=6)
    parser.add_argument("--width", type=int, default=7)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--mode", choices=("forward", "gradient", "both"), default="both",
                        help="time forward passes (search), forward + backward (learner) "
                             "or both, one after the other")
    parser.add_argument("--grad", action="store_true", help="same as --mode gradient")
    parser.add_argument("--kinds", type=lambda s: s.split(","), default=list(IMPLS),
                        help=f"comma-separated, the first is the reference; of {KINDS}")
    parser.add_argument("--experiments", type=int, default=0,
                        help="vmap the loop over this many copies of the parameters, as "
                             "the driver runs experiments (0: no vmap)")
    parser.add_argument("--network", action="store_true",
                        help="time the whole PolicyValueNet for each conv and dtype")
    parser.add_argument("--blocks", type=int, default=3, help="residual blocks (--network)")
    parser.add_argument("--planes", type=int, default=2,
                        help="observation planes (--network)")
    parser.add_argument("--convs", type=lambda s: s.split(","), default=list(IMPLS),
                        help="comma-separated NetworkConfig.conv values (--network)")
    parser.add_argument("--dtypes", type=lambda s: s.split(","),
                        default=["float32", "bfloat16"],
                        help="comma-separated NetworkConfig.dtype values (--network)")
    args = _quick.parse(parser, channels=4, layers=1, height=3, width=3, batch=2, steps=2,
                        repeats=1, kinds=["patch", "nn.Conv", "lax patches"], blocks=1,
                        convs=["patch", "hybrid"])
    for kind in args.kinds:
        if kind not in KINDS:
            parser.error(f"--kinds: {kind!r} is not one of {KINDS}")
    mode = "gradient" if args.grad else args.mode
    parts = [main_stack, main_network] if args.quick else [
        main_network if args.network else main_stack]
    for part in parts:
        for grad in {"forward": [False], "gradient": [True], "both": [False, True]}[mode]:
            part(args, grad)


if __name__ == "__main__":
    main()
