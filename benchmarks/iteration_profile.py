"""Where one training iteration's time goes, recipe by recipe, on this machine.

For each recipe (`azjax.run.recipes.RECIPES`) the driver's own jitted iteration
(`azjax.core.stacked.group_step` over `azjax.core.iteration.make_iteration_fn`, on a data mesh of
--devices devices) is lowered and compiled (each timed on its own), and so is the same
program with `gradient_steps=0`; then each is called once to warm up and --repeats times,
the two interleaved (`jax.block_until_ready`; medians count). The second is the self-play
part (search, and the replay write); the learner is the rest (the median of full minus
self-play, pair by pair). Evaluation is what the driver runs between iterations:
`azjax.evaluation.evaluators.make_evaluator(env)` scoring the network alone (`network_metrics`) and
network + search (`search_metrics`), each with its first call (compilation, and loading
the ground truth) and its steady state, amortized per iteration by the recipe's
`eval_every` and `eval_search_every` (and `versus` its `eval_opponents`, when it has
any). One table per recipe: phase | seconds | share of an iteration, evaluation
amortized; the one-time costs below it; a one-line summary with positions/s, self-play
simulations/s and the process's CPU/wall while timed (below the core count: the cores
are shared). The import time of `azjax.driver.driver` (a fresh interpreter) is measured once. Compile times
are cold unless JAX was given a persistent cache (`JAX_COMPILATION_CACHE_DIR`; the header
says), which the experiment scripts turn on.

    python benchmarks/iteration_profile.py                         # tictactoe, connect_four
    python benchmarks/iteration_profile.py --recipe gomoku --recipe go9x9 --repeats 2
    python benchmarks/iteration_profile.py --all --devices 2 --json profile.json

--devices N arranges N host devices on a CPU before JAX starts (`azjax.run.process.devices.arrange`,
as the experiment scripts do); on a GPU it takes N of the devices there are. A recipe whose
sizes do not split over N devices is reported as skipped.

`--quick`: the tic-tac-toe recipe at `benchmarks/_quick.py`'s sizes, 1 timed call each, in
seconds (to check the script end to end; the figures mean nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _quick  # noqa: E402

DEFAULT_RECIPES = ("tictactoe", "connect_four")
"""Recipes profiled when none is named."""


def import_seconds() -> float:
    """Wall seconds a fresh interpreter takes to `import azjax.driver.driver`."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import azjax.driver.driver"], check=True, cwd=ROOT)
    return time.perf_counter() - start


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall seconds of `fn()` (its result blocked on) and its result."""
    import jax

    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return time.perf_counter() - start, out


def median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, list[float], Any]:
    """The median of `repeats` timed calls of `fn`, every timing, and the last result."""
    times, out = [], None
    for _ in range(repeats):
        seconds, out = timed(fn)
        times.append(seconds)
    return statistics.median(times), times, out


def build_step(env, program, count: int):
    """The driver's step for one experiment on `count` devices, its stacked (and placed)
    fresh state and `active` flags, as `azjax.driver.driver.train_group` makes them."""
    import jax
    import numpy as np

    from azjax.core.iteration import init_train_state
    from azjax.core.stacked import group_step, placed, stack
    from azjax.run.process.devices import data_mesh

    mesh = data_mesh(count) if count > 1 else None
    state = stack([init_train_state(env, program, jax.random.key(0))])
    if mesh is not None:
        state = placed(state, mesh)
    return group_step(env, program, 1, mesh), state, np.ones(1, bool)


class Iteration:
    """The driver's compiled iteration of one program on `count` devices and its state:
    lowering and compiling timed, then called (and timed) one iteration at a time."""

    def __init__(self, env, program, count: int):
        step, self.state, self.active = build_step(env, program, count)
        self.lower_s, lowered = timed(lambda: step.lower(self.state, self.active))
        self.compile_s, self.executable = timed(lowered.compile)
        self.timings: list[float] = []
        self.cpu: list[float] = []

    def call(self):
        """One iteration (the state is donated), blocked on."""
        self.state, metrics = self.executable(self.state, self.active)
        return self.state, metrics

    def time(self) -> float:
        """Times one iteration and keeps the timing (and this process's CPU seconds)."""
        cpu = time.process_time()
        seconds, _ = timed(self.call)
        self.cpu.append(time.process_time() - cpu)
        self.timings.append(seconds)
        return seconds

    def summary(self) -> dict[str, Any]:
        """Lowering, compiling, first call and median steady-state seconds."""
        return {"lower_s": self.lower_s, "compile_s": self.compile_s,
                "first_call_s": self.timings[0], "seconds": statistics.median(self.timings[1:]),
                "timings": self.timings[1:],
                "cpu_per_wall": sum(self.cpu[1:]) / sum(self.timings[1:])}


def time_iterations(env, programs: list, count: int, repeats: int) -> list[Iteration]:
    """Compiles each program's iteration, then times a warm-up call and `repeats` calls
    of each, interleaved (so that drift in a shared machine hits them alike)."""
    iterations = [Iteration(env, program, count) for program in programs]
    for _ in range(repeats + 1):
        for iteration in iterations:
            iteration.time()
    return iterations


def eval_players(env, program, state, simulations: int = 0,
                 search_with: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """The driver's evaluation players (`azjax.driver.program_players`) bound to experiment 0
    of `state`: the network alone and the scored search at `simulations` per move (0:
    the training budget; the run's `eval_simulations`), changed by the run's
    `eval_search_with`."""
    from azjax.core.players import AgentParams
    from azjax.core.stacked import unstack
    from azjax.driver.program_players import ProgramPlayers
    from azjax.run.process.devices import local

    players = ProgramPlayers(env, program)
    params = local(unstack(state.params, 0))
    bound = AgentParams(params, local(unstack(state.search_params, 0)))
    return (players.network.with_params(params),
            players.scored(simulations, search_with, bound))


def time_phase(fn: Callable[[int], Any], repeats: int) -> dict[str, Any]:
    """First call (compilation included) and median steady state of `fn(i)`."""
    first_s, _ = timed(lambda: fn(0))
    calls = iter(range(1, repeats + 1))
    median, times, _ = median_seconds(lambda: fn(next(calls)), repeats)
    return {"first_call_s": first_s, "seconds": median, "timings": times}


def time_evaluation(config, env, state, repeats: int) -> dict[str, Any]:
    """Network-alone, network + search and baseline evaluations as the driver runs them,
    and what each costs per iteration at the recipe's cadence."""
    import jax

    from azjax.evaluation.evaluators import make_evaluator, versus
    from azjax.evaluation.player_specs import make_player

    run = config.run
    evaluator = make_evaluator(env)
    network, agent = eval_players(env, config.program, state, run.eval_simulations,
                                  run.eval_search_with)
    key = jax.random.key(config.seed + 1)
    out: dict[str, Any] = {"evaluator": type(evaluator).__name__,
                           "eval_every": run.eval_every,
                           "eval_search_every": run.eval_search_every}
    out["network"] = time_phase(lambda i: evaluator.network_metrics(network), repeats)
    out["search"] = time_phase(
        lambda i: evaluator.search_metrics(agent, jax.random.fold_in(key, i)), repeats)
    if run.eval_opponents:
        try:
            opponents = [make_player(spec, env) for spec in run.eval_opponents]
            out["opponents"] = time_phase(
                lambda i: versus(env, agent, opponents, jax.random.fold_in(key, i),
                                 run.eval_games, run.eval_openings), repeats)
        except Exception as err:  # noqa: BLE001 - a baseline missing here (gnugo, say)
            out["opponents"] = {"skipped": f"{', '.join(run.eval_opponents)}: {err}"}
    every = run.eval_every
    search_every = every * run.eval_search_every
    out["per_iteration"] = {
        "network": out["network"]["seconds"] / every if every else 0.0,
        "search": out["search"]["seconds"] / search_every if search_every else 0.0,
        "opponents": (out["opponents"]["seconds"] / every
                      if every and "seconds" in out.get("opponents", {}) else 0.0),
    }
    return out


def profile(name: str, requested: int, repeats: int, conv: str | None = None,
            quick: bool = False) -> dict[str, Any]:
    """Everything measured for recipe `name` on `requested` devices (with its network's
    `conv` replaced by `conv` when given; at `_quick`'s sizes when `quick`)."""
    import jax

    from azjax.run.process.devices import cpu_cores, device_count
    from azjax.run.recipes import recipe

    config = recipe(name, "cpu")
    if quick:
        config = _quick.shrink(config)
    if conv is not None:
        config = config.replace(network=dataclasses.replace(config.program.network, conv=conv))
    program, env = config.program, config.make_env()
    config.check(env)
    try:
        count, _ = device_count(requested, program)
    except ValueError as err:
        return {"recipe": name, "devices": requested, "skipped": str(err)}
    search = program.search
    out: dict[str, Any] = {
        "recipe": name, "devices": count, "backend": jax.default_backend(),
        "conv": config.program.network.conv,
        "positions_per_iteration": program.positions_per_iteration,
        "num_simulations": search.num_simulations, "gradient_steps": program.gradient_steps,
        "batch_size": program.learner.batch_size, "repeats": repeats,
        "cpu_cores": cpu_cores(),
    }
    both = time_iterations(env, [program, config.replace(gradient_steps=0).program], count,
                           repeats)
    full, selfplay = out["iteration"], out["selfplay"] = [i.summary() for i in both]
    # the learner: the median of the paired differences (each pair timed back to back)
    out["learner_s"] = max(statistics.median(
        a - b for a, b in zip(full["timings"], selfplay["timings"])), 0.0)
    out["evaluation"] = time_evaluation(config, env, both[0].state, repeats)
    positions = program.positions_per_iteration
    out["positions_per_s"] = positions / full["seconds"]
    out["selfplay_positions_per_s"] = positions / selfplay["seconds"]
    out["simulations_per_s"] = positions * search.num_simulations / selfplay["seconds"]
    out["gradient_steps_per_s"] = (program.gradient_steps / out["learner_s"]
                                   if out["learner_s"] > 0 else None)
    out["seconds_per_iteration"] = sum(seconds for _, seconds in rows(out))
    return out


def cadence(every: int) -> str:
    """How often an evaluation runs: 'every 1/N its', or only at the end."""
    return f"1/{every} its" if every else "last it only"


def rows(result: dict[str, Any]) -> list[tuple[str, float]]:
    """The per-iteration phases of a result, evaluation amortized: (label, seconds)."""
    evaluation = result["evaluation"]
    every, search_every = evaluation["eval_every"], evaluation["eval_search_every"]
    per = evaluation["per_iteration"]
    out = [("self-play + replay write", result["selfplay"]["seconds"]),
           (f"learner ({result['gradient_steps']} steps x {result['batch_size']})",
            result["learner_s"]),
           (f"eval: network alone ({cadence(every)})", per["network"]),
           (f"eval: network + search ({cadence(every * search_every)})", per["search"])]
    if "seconds" in evaluation.get("opponents", {}):
        out.append((f"eval: vs baselines ({cadence(every)})", per["opponents"]))
    return out


def show(result: dict[str, Any]) -> None:
    """Prints a recipe's table, its one-time costs and its summary line."""
    name = result["recipe"]
    if "skipped" in result:
        print(f"\n{name}: skipped on {result['devices']} devices: {result['skipped']}")
        return
    total = result["seconds_per_iteration"]
    print(f"\n{name} on {result['devices']} {result['backend']} device"
          f"{'s' if result['devices'] > 1 else ''} (median of {result['repeats']})")
    print(f"  {'phase':<44} | {'seconds':>8} | share")
    for label, seconds in rows(result):
        print(f"  {label:<44} | {seconds:8.3f} | {100 * seconds / total:4.0f}%")
    print(f"  {'iteration (the rows above)':<44} | {total:8.3f} | 100%")
    print(f"  {'(measured: the whole jitted iteration)':<44} | "
          f"{result['iteration']['seconds']:8.3f} | {'':>4}")
    evaluation = result["evaluation"]
    once = [("lower (trace) the iteration", result["iteration"]["lower_s"]),
            ("compile the iteration", result["iteration"]["compile_s"]),
            ("compile the self-play-only iteration", result["selfplay"]["compile_s"]),
            ("first eval, network (compile" + (", ground truth)" if
             evaluation["evaluator"] == "PositionEvaluator" else ")"),
             evaluation["network"]["first_call_s"]),
            ("first eval, network + search (compile)", evaluation["search"]["first_call_s"])]
    opponents = evaluation.get("opponents", {})
    if "first_call_s" in opponents:
        once.append(("first eval vs baselines (compile)", opponents["first_call_s"]))
    print("  one-time:")
    for label, seconds in once:
        print(f"  {label:<44} | {seconds:8.2f}")
    if "skipped" in opponents:
        print(f"  (baselines skipped: {opponents['skipped']})")
    selfplay = result["selfplay"]["seconds"]
    evals = sum(evaluation["per_iteration"].values())
    print(f"{name}: {total:.3f} s/iteration = self-play {100 * selfplay / total:.0f}% + "
          f"learner {100 * result['learner_s'] / total:.0f}% + eval {100 * evals / total:.0f}%;"
          f" {result['positions_per_s']:,.0f} positions/s, "
          f"{result['simulations_per_s']:,.0f} simulations/s in self-play; compile "
          f"{result['iteration']['lower_s'] + result['iteration']['compile_s']:.1f} s; "
          f"CPU/wall {result['iteration']['cpu_per_wall']:.2f} "
          f"(of {result['cpu_cores']} cores)")


def main() -> int:
    """Parses the options, profiles each recipe, prints and saves the results."""
    from azjax.core.conv import CONV_CHOICES
    from azjax.run.process.devices import arrange  # imports JAX; starts no backend
    from azjax.run.recipes import RECIPES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", action="append", default=None, choices=sorted(RECIPES),
                        help="a recipe to profile (repeatable; default: "
                             f"{', '.join(DEFAULT_RECIPES)})")
    parser.add_argument("--all", action="store_true", help="every recipe")
    parser.add_argument("--devices", type=int, default=1,
                        help="devices to split the iteration over (host devices on a CPU)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls per phase after the warm-up (the median counts)")
    parser.add_argument("--conv", default=None, choices=CONV_CHOICES,
                        help="replace the recipes' network.conv (azjax.core.conv; default: theirs)")
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = _quick.parse(parser, repeats=1)
    if args.repeats < 1 or args.devices < 1:
        parser.error("--repeats and --devices must be at least 1")
    names = list(RECIPES) if args.all else (
        args.recipe or (["tictactoe"] if args.quick else list(DEFAULT_RECIPES)))

    import_s = import_seconds()  # before this process's JAX takes the cores
    arrange(args.devices)  # before anything starts JAX's backend

    import jax

    from azjax.run.process.devices import cpu_cores

    device = jax.devices()[0]
    print(f"{platform.node()}, python {platform.python_version()}, jax {jax.__version__}, "
          f"{jax.default_backend()} ({device.device_kind}), {jax.device_count()} devices, "
          f"{cpu_cores()} CPU cores, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    cache = jax.config.jax_compilation_cache_dir
    print(f"import azjax.driver.driver in a fresh interpreter: {import_s:.2f} s; persistent "
          f"compilation cache: {cache or 'none (cold compiles)'}")
    results = []
    for name in names:
        result = profile(name, args.devices, args.repeats, args.conv, args.quick)
        show(result)
        results.append(result)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"command": sys.argv, "import_s": import_s, "compilation_cache": cache,
             "backend": jax.default_backend(),
             "device_kind": device.device_kind, "cpu_cores": cpu_cores(),
             "results": results}, indent=1) + "\n")
        print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
