"""Training split over N devices (data parallel): throughput, time to perfect play, accuracy.

Every measurement runs in a fresh process of its own, since the devices must be arranged
(`azjax.run.process.devices.arrange`) before JAX starts; on a CPU that makes N host devices (more
than there are cores, too: a simulated curve), on a GPU it changes nothing and N may go
up to `jax.device_count()` (larger counts are reported as skipped).

Throughput (the default): whole training iterations (self-play, replay, learning; no
host-side evaluation) with the driver's own step (`azjax.core.stacked.group_step` on a data
mesh), one warm-up (compile) iteration excluded, then --repeats timings of --iterations
iterations each; the best timing counts (the cores may be shared), the median is shown
beside it. Speed-up = thr(N) / thr(1), efficiency = thr(N) / (N thr(1)), both from this
run; CPU/wall is the process's CPU time over wall time while timed.

    python benchmarks/device_scaling.py [--recipes tictactoe,connect_four] [--devices 1,2]
        [--iterations 5] [--repeats 2] [--json FILE]
    python benchmarks/device_scaling.py --devices 1,2,4,8     # simulated on a 2-core CPU

Time to perfect play (--time-to-perfect): the tic-tac-toe recipe run by `train` until
the network alone plays perfectly, with devices=1 and devices=all, seeds 0..K-1
interleaved; the process's whole time (interpreter, imports and compilation included,
from the parent) and the run's own clock at the first perfect evaluation, at the
recipe's evaluation cadence (every 2 iterations; `--set eval_every=1` for every one).

    python benchmarks/device_scaling.py --time-to-perfect --seeds 5 [--json FILE]

Connect Four accuracy after M minutes (--connect-four-minutes M): the Connect Four recipe
with max_minutes=M (its own clock, compilation included; stop_when_perfect off as the
recipe has it; no run directory) with devices=1 and devices=all; the last iteration
always evaluates, with search, so the last record gives the solver-position accuracy.

    python benchmarks/device_scaling.py --connect-four-minutes 30 [--json FILE]

--set NAME=VALUE (repeatable) changes any recipe setting by name in every measurement
(`TrainConfig.replace`), e.g. `--set iterations=40` to cap a run; `--devices` takes
counts and `all` (every device: one per core on a CPU) in each mode.

--quick runs the chosen modes at tiny sizes, in seconds (`benchmarks/_quick.py`; the
figures mean nothing): tic-tac-toe, 1 timed iteration, 1 seed, runs of 1 iteration.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _quick  # noqa: E402

DEFAULT_ITERATIONS = {"tictactoe": 5, "connect_four": 2}
"""Timed iterations per repeat in the throughput mode, by recipe (others: 2)."""
RESULT = "RESULT "
"""The prefix of the line a measuring process prints its result on."""


def accuracy_keys() -> tuple[str, ...]:
    """Connect Four's evaluation (`envs.connect_four.GROUND_TRUTH`, metric move_accuracy):
    the share of optimal moves on the solver's development set, of the network alone and
    of network + search, on all positions and on the non-trivial ones (`_hard`), and the
    network's value sign on decided positions."""
    from azjax.run import metric_schema as ms  # here: a process arranges its devices first

    return (*(ms.ground_truth_key(player, "move_accuracy", subset)
              for player in (ms.NET, ms.SEARCH) for subset in ("", "hard")),
            ms.NET_VALUE_ACCURACY.name)


# ---------------------------------------------------------------------------------------
# In the measuring process (fresh for each measurement)


def configure(name: str, sets: list[str], **changes: Any):
    """The recipe `name` with the `NAME=VALUE` settings of `sets`, then `changes`."""
    from azjax.run.recipes import recipe

    config = recipe(name, "cpu")
    for item in sets:
        path, _, text = item.partition("=")
        current = config.get(path)
        if isinstance(current, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"--set {item}: {path} takes true or false")
            value: Any = text.lower() in ("true", "1")
        elif isinstance(current, (int, float, str)):
            value = type(current)(text)
        else:
            value = ast.literal_eval(text)
        config = config.with_value(path, value)
    return config.replace(**changes)  # checked as it is made


def device_info() -> dict[str, Any]:
    import jax

    from azjax.run.process.devices import cpu_cores

    device = jax.devices()[0]
    return {"backend": jax.default_backend(), "device_kind": device.device_kind,
            "device_count": jax.device_count(), "cpu_cores": cpu_cores()}


def measure_throughput(spec: dict[str, Any]) -> dict[str, Any]:
    """Times whole training iterations of a recipe on `spec["devices"]` devices."""
    from azjax.run.process.devices import arrange

    arrange(spec["devices"])  # before anything starts JAX's backend

    import jax
    import numpy as np

    from azjax.core import counters
    from azjax.core.iteration import init_train_state
    from azjax.core.stacked import group_step, placed, stack
    from azjax.run.process.devices import data_mesh, misfits

    info = device_info()
    count = spec["devices"] or info["device_count"]
    out: dict[str, Any] = {**info, "devices": count}
    if count > info["device_count"]:
        return {**out, "skipped": f"only {info['device_count']} devices here"}
    config = configure(spec["recipe"], spec["sets"], devices=count, seed=spec["seed"])
    program, env = config.program, config.make_env()
    wrong = misfits(program, count)
    if wrong:
        return {**out, "skipped": "; ".join(wrong)}
    config.check(env)
    mesh = data_mesh(count) if count > 1 else None
    state = stack([init_train_state(env, program, jax.random.key(config.seed))])
    if mesh is not None:
        state = placed(state, mesh)
    step = group_step(env, program, 1, mesh)
    active = np.ones(1, bool)
    start = time.perf_counter()
    state, metrics = step(state, active)  # compiles
    jax.block_until_ready((state, metrics))
    out["first_call_s"] = time.perf_counter() - start
    timings = []
    for _ in range(spec["repeats"]):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(spec["iterations"]):
            state, metrics = step(state, active)
        jax.block_until_ready((state, metrics))
        timings.append({"wall_s": time.perf_counter() - wall,
                        "cpu_s": time.process_time() - cpu})
    positions = program.positions_per_iteration * spec["iterations"]
    for t in timings:
        t["positions_per_s"] = positions / t["wall_s"]
        t["cpu_per_wall"] = t["cpu_s"] / t["wall_s"]
    best = min(timings, key=lambda t: t["wall_s"])
    return {**out, "positions_per_iteration": program.positions_per_iteration,
            "iterations": spec["iterations"], "timings": timings,
            "positions_per_s": best["positions_per_s"], "cpu_per_wall": best["cpu_per_wall"],
            "median_positions_per_s": statistics.median(t["positions_per_s"]
                                                        for t in timings),
            "final_iteration": counters.value(state.iteration, 0)}


def measure_run(spec: dict[str, Any]) -> dict[str, Any]:
    """A whole run of a recipe by `azjax.driver.driver.train` (no run directory)."""
    from azjax.run.process.devices import arrange

    arrange(spec["devices"])

    from azjax.driver.driver import train
    from azjax.run import metric_schema as ms
    from azjax.run.process.devices import device_count, misfits

    info = device_info()
    requested = spec["devices"]
    if requested > info["device_count"]:
        return {**info, "devices": requested,
                "skipped": f"only {info['device_count']} devices here"}
    config = configure(spec["recipe"], spec["sets"], seed=spec["seed"], devices=requested,
                       **spec["changes"])
    wrong = misfits(config.program, requested) if requested else []
    if wrong:
        return {**info, "devices": requested, "skipped": "; ".join(wrong)}
    count, notice = device_count(requested, config.program)  # what train will use
    start = time.perf_counter()
    result = train(config, run_dir=None, progress=None)
    train_s = time.perf_counter() - start
    records = result.records
    evaluations = [r for r in records if ms.PERFECT.name in r]
    unbeatable = next((r for r in records if r.get(ms.ground_truth_key(ms.NET, "unbeatable"))),
                      None)

    def brief(record):
        return record and {m.name: record[m.name] for m in (ms.ITERATION, ms.WALL_TIME,
                                                            ms.GAMES, ms.POSITIONS)
                           if m.name in record}

    return {**info, "devices": count, "notice": notice, "train_s": train_s,
            "perfect_at": brief(result.perfect_at), "unbeatable_at": brief(unbeatable),
            "last": records[-1] if records else None,
            "last_evaluation": evaluations[-1] if evaluations else None}


# ---------------------------------------------------------------------------------------
# In the parent process (never starts JAX: on a GPU it would take the device's memory)


def measure(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Runs one measurement in a fresh process; its result with the process's wall time
    and CPU time (user + system, all threads), or {"error": ...}."""
    env = dict(os.environ)
    env.pop("JAX_NUM_CPU_DEVICES", None)  # arrange(0) then means one device per core
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--measure", kind, json.dumps(spec)],
                         check=False, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in out.stdout.splitlines() if line.startswith(RESULT)]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-15:]
        return {**spec, "asked": spec["devices"], "error": f"exit {out.returncode}",
                "stderr_tail": tail}
    result = json.loads(lines[-1][len(RESULT):])
    return {**spec, "asked": spec["devices"], **result, "process_s": wall,
            "process_cpu_s": cpu}


def device_counts(text: str) -> list[int]:
    """'1,2,all' -> [1, 2, 0] (0: every device)."""
    counts = []
    for part in text.split(","):
        part = part.strip().lower()
        counts.append(0 if part == "all" else int(part))
        if counts[-1] < 0:
            raise ValueError(f"--devices: {part} is not a device count")
    return counts


def label(devices: int) -> str:
    return "all" if devices == 0 else str(devices)


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def say_error(row: dict[str, Any]) -> None:
    print(f"  failed ({row['error']}):", *row["stderr_tail"], sep="\n    ", flush=True)


def header(row: dict[str, Any], shown: list[bool]) -> None:
    """The backend line, once, from the first process that reports it."""
    if not shown[0] and "backend" in row:
        print(f"backend {row['backend']} ({row['device_kind']}), {row['cpu_cores']} CPU "
              f"cores; jax.devices(): {row['device_count']} in the first process (each "
              "process arranges its own)", flush=True)
        shown[0] = True


def shown_row(row: dict[str, Any], shown: list[bool], columns: list[str], prefix: str) -> bool:
    """Prints the backend line and the table's columns (each once) and, for a failed or
    skipped measurement, its line; whether `row` has a result to show."""
    header(row, shown)
    if columns[0]:
        print(columns[0], flush=True)
        columns[0] = ""
    if "error" in row:
        print(prefix, end="")
        say_error(row)
    elif "skipped" in row:
        print(f"{prefix} skipped: {row['skipped']}")
    return "error" not in row and "skipped" not in row


def throughput(args, sets: list[str], counts: list[int], shown: list[bool]) -> list[dict]:
    rows = []
    for name in args.recipes.split(","):
        iterations = args.iterations or DEFAULT_ITERATIONS.get(name, 2)
        print(f"\n{name}: {iterations} iterations x {args.repeats} repeats per count, best "
              "repeat (median beside), compile excluded", flush=True)
        table_shown = False
        results = []
        for count in counts:
            row = measure("throughput", {"recipe": name, "devices": count, "seed": args.seed,
                                         "iterations": iterations, "repeats": args.repeats,
                                         "sets": sets})
            rows.append(row)
            header(row, shown)
            if not table_shown:
                print("   N | seen | positions/s (median) | speed-up | efficiency | "
                      "CPU/wall | compile+1 it", flush=True)
                table_shown = True
            if "error" in row:
                print(f"{label(count):>4} |", end="")
                say_error(row)
                continue
            if "skipped" in row:
                print(f"{label(count):>4} | {row['device_count']:>4} | skipped: "
                      f"{row['skipped']}", flush=True)
                continue
            results.append(row)
            base = next((r for r in results if r["devices"] == 1), results[0])
            speedup = row["positions_per_s"] / base["positions_per_s"]
            row["speedup"] = speedup
            row["efficiency"] = speedup * base["devices"] / row["devices"]
            row["baseline_devices"] = base["devices"]
            print(f"{row['devices']:>4} | {row['device_count']:>4} | "
                  f"{row['positions_per_s']:>9,.0f} ({row['median_positions_per_s']:>7,.0f}) | "
                  f"{speedup:7.2f}x | {100 * row['efficiency']:9.0f}% | "
                  f"{row['cpu_per_wall']:8.2f} | {row['first_call_s']:9.1f} s", flush=True)
        if results and all(r["devices"] != 1 for r in results):
            print(f"(no N=1 row: ratios are against N={results[0]['devices']})")
    return rows


def time_to_perfect(args, sets: list[str], counts: list[int], shown: list[bool]
                    ) -> list[dict]:
    print("\ntic-tac-toe recipe until the network alone is perfect (fresh process each: "
          "process s includes imports and compilation; run s is the run's clock, "
          "compilation included)", flush=True)
    columns = [("seed |   N | process s | perfect at: run s, iteration, games | unbeatable "
                "at | final net optimal | CPU/wall")]
    from azjax.run import metric_schema as ms  # the parent process starts no backend

    optimal = ms.ground_truth_key(ms.NET, "optimal_share")
    rows = []
    for seed in range(args.seeds):
        for count in counts:  # interleaved, so that drift in the machine hits each alike
            row = measure("run", {"recipe": "tictactoe", "devices": count, "seed": seed,
                                  "sets": sets, "changes": {}})
            rows.append(row)
            if not shown_row(row, shown, columns, f"{seed:>4} | {label(count):>3} |"):
                continue
            perfect, unbeatable = row["perfect_at"], row["unbeatable_at"]
            share = (row["last_evaluation"] or {}).get(optimal)
            reached = (f"{perfect['wall_time']:6.1f} s, it {perfect['iteration']:>3}, "
                       f"{perfect['games']:>7,} games" if perfect else
                       f"never in {row['last']['iteration']} iterations".ljust(31))
            print(f"{seed:>4} | {row['devices']:>3} | {row['process_s']:9.1f} | {reached} | "
                  f"{fmt(unbeatable and unbeatable['wall_time'], '6.1f')} s  | "
                  f"{fmt(share and 100 * share, '16.2f')}% | "
                  f"{row['process_cpu_s'] / row['process_s']:5.2f}"
                  + (f" ({row['notice']})" if row.get("notice") else ""), flush=True)
    summary = {}
    for count in counts:
        done = rows_for(rows, count)
        perfect = [r for r in done if r["perfect_at"]]
        if not done:
            continue
        entry = {"runs": len(done), "perfect": len(perfect),
                 "devices": sorted({r["devices"] for r in done})}
        if perfect:
            for key, get in (("process_s", lambda r: r["process_s"]),
                             ("perfect_s", lambda r: r["perfect_at"]["wall_time"]),
                             ("iterations", lambda r: r["perfect_at"]["iteration"]),
                             ("games", lambda r: r["perfect_at"]["games"])):
                entry[f"median_{key}"] = statistics.median(get(r) for r in perfect)
        summary[label(count)] = entry
        print(f"devices {label(count)} ({'/'.join(map(str, entry['devices']))}): perfect in "
              f"{len(perfect)}/{len(done)} runs"
              + (f"; medians of those: process {entry['median_process_s']:.1f} s, run clock "
                 f"{entry['median_perfect_s']:.1f} s, {entry['median_iterations']:g} "
                 f"iterations, {entry['median_games']:,.0f} games" if perfect else ""))
    ratio_line(summary, counts, ("median_process_s", "median_perfect_s",
                                 "median_iterations", "median_games"))
    return rows + [{"summary": summary}]


def rows_for(rows: list[dict], count: int) -> list[dict]:
    """The finished measurements asked for with `count` devices."""
    return [r for r in rows if r.get("asked") == count and "error" not in r
            and "skipped" not in r]


def ratio_line(summary: dict[str, dict], counts: list[int], keys: tuple[str, ...]) -> None:
    """The ratios of the first count's medians to the last's (e.g. devices 1 / all)."""
    if len(counts) < 2:
        return
    first, last = summary.get(label(counts[0])), summary.get(label(counts[-1]))
    if not first or not last:
        return
    parts = [f"{key.removeprefix('median_').replace('_s', ' time')} "
             f"{first[key] / last[key]:.2f}x" for key in keys if first.get(key) and last.get(key)]
    if parts:
        print(f"devices {label(counts[0])} / devices {label(counts[-1])}: "
              + ", ".join(parts))


def connect_four(args, sets: list[str], counts: list[int], shown: list[bool]) -> list[dict]:
    minutes = args.connect_four_minutes
    print(f"\nconnect_four recipe for {minutes:g} minutes of its own clock (compilation "
          "included, no run directory); the last evaluation, with search: share of optimal "
          "moves on the development set (non-trivial positions)", flush=True)
    columns = [("  N | iterations |      games |   positions | run s | net moves (hard) | "
                "search moves (hard) | value sign | CPU/wall")]
    rows = []
    for count in counts:
        row = measure("run", {"recipe": "connect_four", "devices": count, "seed": args.seed,
                              "sets": sets, "changes": {"max_minutes": float(minutes)}})
        rows.append(row)
        if not shown_row(row, shown, columns, f"{label(count):>3} |"):
            continue
        last, evaluation = row["last"], row["last_evaluation"] or {}
        keys = accuracy_keys()
        row["accuracy"] = {k: evaluation.get(k) for k in keys}

        def pct(index, evaluation=evaluation, keys=keys):
            value = evaluation.get(keys[index])
            return "  -  " if value is None else f"{100 * value:5.1f}"

        print(f"{row['devices']:>3} | {last['iteration']:>10} | {last['games']:>10,} | "
              f"{last['positions']:>11,} | {last['wall_time']:5.0f} | "
              f"{pct(0)}% ({pct(1)}%) | {pct(2)}% ({pct(3)}%)    | {pct(4)}%     | "
              f"{row['process_cpu_s'] / row['process_s']:5.2f}"
              + ("" if evaluation.get("iteration") == last["iteration"] else
                 f" (evaluated at iteration {evaluation.get('iteration')})"), flush=True)
    done = [r for r in rows if "last" in r]
    if len(done) >= 2:
        a, b = done[0]["last"], done[-1]["last"]
        print(f"devices {done[-1]['devices']} / devices {done[0]['devices']}: positions "
              f"{b['positions'] / a['positions']:.2f}x, games {b['games'] / a['games']:.2f}x, "
              f"iterations {b['iteration'] / a['iteration']:.2f}x in the same minutes")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default="tictactoe,connect_four",
                        help="throughput: recipes to measure (comma-separated)")
    parser.add_argument("--devices", default=None,
                        help="device counts, comma-separated, 'all' = every device "
                             "(default: 1,2 for throughput, 1,all for the other modes)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="throughput: timed iterations per repeat (default: "
                             + ", ".join(f"{k} {v}" for k, v in DEFAULT_ITERATIONS.items())
                             + ", others 2)")
    parser.add_argument("--repeats", type=int, default=2, help="throughput: timings per count")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the throughput and Connect Four runs")
    parser.add_argument("--time-to-perfect", action="store_true",
                        help="tic-tac-toe time to perfect play, devices 1 and all")
    parser.add_argument("--seeds", type=int, default=5, help="--time-to-perfect: seeds 0..K-1")
    parser.add_argument("--connect-four-minutes", type=float, default=None, metavar="M",
                        help="Connect Four accuracy after M minutes, devices 1 and all")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="change a recipe setting in every measurement (repeatable)")
    parser.add_argument("--json", default=None, help="write every result to this file")
    parser.add_argument("--measure", nargs=2, default=None, help=argparse.SUPPRESS)
    args = _quick.parse(parser, recipes="tictactoe", iterations=1, repeats=1, seeds=1)
    if args.quick:
        args.set = _quick.settings(iterations=1, eval_every=1) + args.set

    if args.measure is not None:
        kind, spec = args.measure[0], json.loads(args.measure[1])
        result = (measure_throughput if kind == "throughput" else measure_run)(spec)
        print(RESULT + json.dumps(result), flush=True)
        return 0

    for item in args.set:
        if "=" not in item:
            parser.error(f"--set {item}: NAME=VALUE")
    try:  # a bad setting fails here, before any process starts
        for name in (args.recipes.split(",") if not (args.time_to_perfect
                                                      or args.connect_four_minutes) else
                     ["tictactoe"] * args.time_to_perfect
                     + ["connect_four"] * (args.connect_four_minutes is not None)):
            configure(name, args.set)
        counts_given = device_counts(args.devices) if args.devices else None
    except ValueError as err:
        parser.error(str(err))
    if args.iterations is not None and args.iterations < 1 or args.repeats < 1:
        parser.error("--iterations and --repeats must be at least 1")

    print(f"{platform.node()}, python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; "
          f"settings: {' '.join(args.set) or 'the recipes'}")
    shown = [False]
    results: dict[str, Any] = {"command": sys.argv, "sets": args.set}
    modes = args.time_to_perfect or args.connect_four_minutes is not None
    if not modes:
        results["throughput"] = throughput(args, args.set, counts_given or [1, 2], shown)
    if args.time_to_perfect:
        results["time_to_perfect"] = time_to_perfect(args, args.set, counts_given or [1, 0],
                                                     shown)
    if args.connect_four_minutes is not None:
        results["connect_four"] = connect_four(args, args.set, counts_given or [1, 0], shown)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
        print(f"results: {args.json}")
    failed = any("error" in r for rows in results.values() if isinstance(rows, list)
                 for r in rows if isinstance(r, dict))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
