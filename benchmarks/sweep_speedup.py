"""Speed-up of running E experiments as one vmapped program over running them one by one.

Both ways run the same E experiments (seeds 0..E-1 of one config) for the same number of
iterations in this process, compiled once each way before timing (compilation excluded,
every timed run ends with block_until_ready). Sequential: one jitted iteration, each
experiment run to the end in turn. Vmapped: `azjax.sweep.make_group_step`, all E at once.
It also prints the first call's time each way (compilation + one iteration), and the
ratio when each experiment would run in a process of its own (E compilations).

    python benchmarks/sweep_speedup.py --experiments 4 --iterations 10 [experiment options]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=4, help="E (seeds 0..E-1)")
    parser.add_argument("--iterations", type=int, default=10, help="timed iterations")
    parser.add_argument("--game", default="tictactoe", help="experiment defaults to use")
    args, overrides = parser.parse_known_args()

    import jax
    import tyro
    from _cli import Experiment
    from sweep import game_defaults

    from azjax.loop import init_train_state, make_iteration_fn
    from azjax.sweep import init_group_state, make_group_step

    base = tyro.cli(Experiment, default=Experiment(config=game_defaults(args.game)),
                    args=overrides).config
    configs = [dataclasses.replace(base, seed=s) for s in range(args.experiments)]
    env = base.make_env()

    single = jax.jit(make_iteration_fn(env, base), donate_argnums=0)
    start = time.perf_counter()
    warm, _ = single(init_train_state(env, configs[0], jax.random.key(0)))
    jax.block_until_ready(warm)
    compile_single = time.perf_counter() - start
    sequential = 0.0
    for config in configs:
        state = init_train_state(env, config, jax.random.key(config.seed))
        jax.block_until_ready(state)
        start = time.perf_counter()
        for _ in range(args.iterations):
            state, metrics = single(state)
        jax.block_until_ready((state, metrics))
        sequential += time.perf_counter() - start

    step = make_group_step(env, configs)
    start = time.perf_counter()
    warm, _ = step(init_group_state(env, configs))
    jax.block_until_ready(warm)
    compile_vmapped = time.perf_counter() - start
    state = init_group_state(env, configs)
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(args.iterations):
        state, metrics = step(state)
    jax.block_until_ready((state, metrics))
    vmapped = time.perf_counter() - start

    device = jax.devices()[0]
    print(f"{args.game}, {args.experiments} experiments x {args.iterations} iterations "
          f"({base.positions_per_iteration:,} positions, {base.gradient_steps} gradient steps "
          f"of {base.learner.batch_size} each), {device.platform} ({device.device_kind})")
    print(f"E={args.experiments} sequential {sequential:.2f} s | vmapped {vmapped:.2f} s | "
          f"speed-up {sequential / vmapped:.2f}x (compilation excluded)")
    # One process per experiment compiles the program E times; the group compiles once.
    apart = args.experiments * compile_single + sequential
    together = compile_vmapped + vmapped
    print(f"first call (compile + 1 iteration): single {compile_single:.1f} s, vmapped "
          f"{compile_vmapped:.1f} s; with one compilation per process: {apart:.1f} s vs "
          f"{together:.1f} s, speed-up {apart / together:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
