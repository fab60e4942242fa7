"""Speed-up of running E experiments as one vmapped program over running them one by one.

Both ways run the same E experiments (seeds 0..E-1 of one config) for the same number of
iterations in this process, compiled once each way before timing (compilation excluded,
every timed run ends with block_until_ready), with the driver's own step
(`azjax.driver.driver.group_step`). Sequential: a stack of one, each experiment run to the end in
turn (as `train` runs it). Vmapped: a stack of E, all at once (as a sweep group runs).
It also prints the first call's time each way (compilation + one iteration), and the
ratio when each experiment would run in a process of its own (E compilations).

    python benchmarks/sweep_speedup.py --experiments 4 --iterations 10 [--preset cpu|gpu]
        [experiment options]

`--quick`: 2 experiments x 1 iteration at `benchmarks/_quick.py`'s sizes, in seconds (to
check the script end to end; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _quick  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=4, help="E (seeds 0..E-1)")
    parser.add_argument("--iterations", type=int, default=10, help="timed iterations")
    parser.add_argument("--game", default="tictactoe", help="experiment defaults to use")
    parser.add_argument("--preset", choices=("cpu", "gpu"), default=None,
                        help="the recipe's variant (default: the backend's)")
    args, overrides = _quick.parse(parser, known=True, experiments=2, iterations=1)
    if args.quick:
        overrides = _quick.flags() + overrides

    import jax
    import numpy as np
    import tyro

    from azjax.commands.train import Experiment
    from azjax.core.iteration import init_train_state
    from azjax.driver.driver import group_step, stack
    from azjax.run.recipes import defaults_for

    defaults = defaults_for(args.game, args.preset or "auto")
    base = tyro.cli(Experiment, default=Experiment(config=defaults), args=overrides).config
    seeds = range(args.experiments)
    program, env = base.program, base.make_env()

    def states(seeds):
        return stack([init_train_state(env, program, jax.random.key(s)) for s in seeds])

    def run(seeds) -> tuple[float, float]:
        """(first call: compilation + 1 iteration, then `args.iterations` iterations) s."""
        step, active = group_step(env, program, len(seeds)), np.ones(len(seeds), bool)
        start = time.perf_counter()
        jax.block_until_ready(step(states(seeds), active))
        first = time.perf_counter() - start
        state = states(seeds)
        jax.block_until_ready(state)
        start = time.perf_counter()
        for _ in range(args.iterations):
            state, metrics = step(state, active)
        jax.block_until_ready((state, metrics))
        return first, time.perf_counter() - start

    compile_single, _ = run([0])
    sequential = sum(run([s])[1] for s in seeds)
    compile_vmapped, vmapped = run(list(seeds))

    device = jax.devices()[0]
    print(f"{args.game}, {args.experiments} experiments x {args.iterations} iterations "
          f"({program.positions_per_iteration:,} positions, {program.gradient_steps} gradient "
          f"steps of {program.learner.batch_size} each), {device.platform} "
          f"({device.device_kind})")
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
