"""What playout cap randomisation saves: one iteration's self-play with every move searched
in full against the same with a share of the games searched in full at each move.

On the go7x7 recipe (cpu preset) by default: self-play as the training iteration runs it
(`azjax.core.selfplay.make_play_fn`, the recipe's network with random weights), once with
`full_search_prob` 1 and once with --prob (0.25: a quarter of the games get the recipe's
32 simulations at each move, the rest `cheap_simulations`). Both are compiled first
(not timed), then called alternately --repeats times (`jax.block_until_ready`), so both
see the same machine; medians count. Prints each one's seconds per iteration and
positions/s, and the ratio of the capped self-play's time to the full one's.

    python benchmarks/playout_cap_cost.py [--recipe go7x7] [--prob 0.25] [--repeats 10]
    python benchmarks/playout_cap_cost.py --quick     # 5x5 Go, tiny sizes: the code path
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from azjax.core.networks import NetworkConfig, make_network  # noqa: E402
from azjax.core.program import ProgramConfig  # noqa: E402
from azjax.core.search import make_search_fn  # noqa: E402
from azjax.core.selfplay import (  # noqa: E402
    cheap_search_config,
    init_games,
    make_play_fn,
)
from azjax.run.recipes import recipe  # noqa: E402


def quick_program() -> ProgramConfig:
    """5x5 Go, 8 games of 2 moves, 4 and 2 simulations, one convolution: seconds."""
    program = recipe("go7x7", "cpu").program
    return dataclasses.replace(
        program, game_options={"size": 5, "komi": 0.5, "history": 2},
        network=NetworkConfig(channels=4, num_blocks=0, value_hidden=4),
        search=dataclasses.replace(program.search, num_simulations=4,
                                   max_num_considered_actions=4),
        selfplay=dataclasses.replace(program.selfplay, num_games=8, steps_per_iteration=2,
                                     cheap_simulations=2))


def self_play(program: ProgramConfig, prob: float):
    """The jitted self-play of one iteration of `program` with `full_search_prob` = prob,
    and its arguments (random weights, fresh games)."""
    selfplay = dataclasses.replace(program.selfplay, full_search_prob=prob)
    env = program.make_env()
    net = make_network(env, program.network, gradients=False)
    search_fn = make_search_fn(env, net.apply, program.search)
    cheap_fn = None
    if prob < 1.0:
        cheap_fn = make_search_fn(env, net.apply,
                                  cheap_search_config(program.search, selfplay))
    play = jax.jit(make_play_fn(env, search_fn, program.search, selfplay, cheap_fn))
    games = init_games(env, jax.random.key(0), selfplay)
    params = net.init(jax.random.key(1), games.state.observation[:1])
    return play, (params, program.search.as_arrays(), jax.random.key(2), games)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="go7x7")
    parser.add_argument("--prob", type=float, default=0.25)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true",
                        help="5x5 Go at tiny sizes, 2 repeats: checks the code path")
    args = parser.parse_args(argv)
    program = quick_program() if args.quick else recipe(args.recipe, "cpu").program
    repeats = 2 if args.quick else args.repeats
    try:  # a config checks its settings as it is made
        capped = dataclasses.replace(program.selfplay, full_search_prob=args.prob)
    except ValueError as err:
        parser.error(str(err))
    runs = {"full": self_play(program, 1.0), "capped": self_play(program, args.prob)}
    for play, inputs in runs.values():
        jax.block_until_ready(play(*inputs))  # compilation, not timed
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, (play, inputs) in runs.items():
            start = time.perf_counter()
            jax.block_until_ready(play(*inputs))
            times[name].append(time.perf_counter() - start)
    positions = program.positions_per_iteration
    print(f"{'quick: ' if args.quick else ''}{args.recipe} self-play, "
          f"{program.selfplay.num_games} games x {program.selfplay.steps_per_iteration} "
          f"moves, {program.search.num_simulations} simulations; capped: "
          f"{capped.full_search_games} games a move in full, the rest "
          f"{capped.cheap_simulations}; backend {jax.default_backend()}, "
          f"median of {repeats}")
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, seconds in median.items():
        print(f"{name:>7}: {seconds * 1000:9.1f} ms an iteration, "
              f"{positions / seconds:10,.0f} positions/s")
    print(f"capped / full time: {median['capped'] / median['full']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
