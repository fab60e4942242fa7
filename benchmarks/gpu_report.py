"""What a user wants to know before renting a GPU, measured on this machine, as Markdown.

Sections, each in processes of its own with its own timeout (a failure or a timeout is one
line of its section and the next section still runs; the report so far is rewritten and
flushed after every section, so a killed run leaves it):

  1. tic-tac-toe to perfect play, whole process, cold, against the hand-written pgx + mctx
     loop (benchmarks/tictactoe_time_to_perfect.py's runs, seed by seed);
  2. the Connect Four curve: experiments/connect_four.py for --minutes, its evaluations with
     search (strict optimal moves, results kept) and the device's peak memory;
  3. env steps/s against pgx (benchmarks/env_throughput.py);
  4. E experiments vmapped in one program against one at a time (benchmarks/sweep_speedup.py;
     Connect Four experiments of the cpu preset, the size a sweep runs many of);
  5. bfloat16 against float32: positions/s of the Connect Four iteration, repeats alternated;
  6. peak device memory of each recipe's iteration beside `program_bytes`' estimate (one
     process each, all at once: compiling is the CPU's work);
  7. a run too large for the device, refused in one `error:` line before any allocation.

    python benchmarks/gpu_report.py [--minutes 3] [--deadline-minutes 8] [--out gpu_report.md]
        [--json PATH] [--preset auto|cpu|gpu] [--c4-arg=ARG ...]
    python benchmarks/gpu_report.py --quick   # the same sections, small: ~2.5 min of 2 cores

A full run ends within --deadline-minutes: a section's timeout is its cap, or less so that
every later section keeps its floor; Connect Four trains for the minutes left (at most
--minutes, at least 1). --quick runs 3 sections at a time, with no deadline, its programs
compiled at XLA's lowest optimisation level (its figures are not the point).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PY = sys.executable
PACKAGES = ("jax", "jaxlib", "jax-cuda12-plugin", "flax", "optax", "mctx", "pgx")
RECIPES = ["tictactoe", "connect_four", "coin_split", "gomoku", "go9x9"]  # if the header fails
C4_OVERHEAD_S = 30  # a Connect Four run's time outside --max-minutes (about 10 s on an H200)
C4_MIN_MINUTES = 1.0
MIN_SECTION_S = 10
QUICK_CAP_S = 240
QUICK_C4 = ["--selfplay.num-games", "64", "--gradient-steps", "8", "--network.num-blocks", "1",
            "--network.channels", "16", "--eval-every", "0", "--eval-every-minutes", "0.2",
            "--eval-search-every", "1", "--eval-simulations", "8", "--checkpoint-every", "1000"]
DTYPES = ("float32", "bfloat16")


def log(message: str) -> None:
    """A timestamped progress line on stderr."""
    print(f"[{datetime.now():%H:%M:%S}] {message}", file=sys.stderr, flush=True)


class Child:
    """A subprocess run to its end or killed, its whole process group, at `timeout`."""

    def __init__(self, command: list[str], timeout: float, env: dict | None = None):
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.timeout, self.timed_out, start = timeout, False, time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env,
                                   start_new_session=True)
        try:
            self.out, self.err = process.communicate(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended meanwhile
                pass
            try:
                self.out, self.err = process.communicate(timeout=15)
            except subprocess.TimeoutExpired:  # a grandchild that left the group holds a pipe
                self.out, self.err = "", ""
        self.code, self.seconds = process.returncode, time.perf_counter() - start

    def problem(self) -> str | None:
        """None if it ended well, else the report's line about it."""
        if self.timed_out:
            return f"timed out after {self.timeout:.0f} s"
        if self.code != 0:
            lines = [line.strip() for line in self.err.splitlines() if line.strip()]
            return f"failed: {lines[-1] if lines else f'exit status {self.code}'}"
        return None

    def results(self) -> list[dict]:
        """The `RESULT {json}` lines a `--child` printed (but one cut short by a kill)."""
        out = []
        for line in self.out.splitlines():
            try:
                out += [json.loads(line[7:])] if line.startswith("RESULT ") else []
            except json.JSONDecodeError:
                pass
        return out


def child(kind: str, options: dict, timeout: float, env: dict | None = None) -> Child:
    """Runs this file's hidden sub-command `kind` with `options`."""
    return Child([PY, str(Path(__file__).resolve()), "--child", kind, json.dumps(options)],
                 timeout, env)


class Section:
    """A report section: its outcome, Markdown lines and raw figures (read once `done`)."""

    def __init__(self, number: int, function, title: str):
        self.number, self.function, self.title = number, function, title
        self.status, self.lines, self.data, self.seconds, self.done = "pending", [], {}, None, False

    def fail(self, line: str) -> None:
        self.status = next(s for s in ("timed out", "skipped", "failed") if line.startswith(s))
        self.data["problem"] = line

    def markdown(self) -> list[str]:
        out = [f"## {self.number}. {self.title}", ""]
        if not self.done:
            return out + [f"({self.status})", ""]
        out += self.lines + ([""] if self.lines else [])
        return out + ([self.data["problem"], ""] if "problem" in self.data else [])


def fmt(x, spec: str = "") -> str:
    """`x` formatted, or '-' when missing."""
    return "-" if x is None else format(x, spec)


def size(n) -> str:
    """Bytes for humans, in powers of 1000."""
    if n is None:
        return "n/a"
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table."""
    return ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)] + [
        "| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# --------------------------------------------------------------------------- sections


def ttt(s: Section, a, timeout: float) -> None:
    """Tic-tac-toe to perfect play, ours against the reference, seed by seed."""
    reference = importlib.util.find_spec("pgx") is not None
    ours = ["--preset", a.preset, *(["--iterations", "2"] if a.quick
                                    else ["--max-minutes", "0.75"])]
    ref = ["--max-seconds=2", "--steps=16"] if a.quick else ["--max-seconds=30"]
    c = child("ttt", {"seeds": 1 if a.quick else 2, "ours": ours, "reference": ref,
                      "with_reference": reference, "work": a.work}, timeout)
    rows = c.results()

    def at(r: dict) -> str:
        if not r:
            return "-"
        if r.get("exit_code"):
            return f"exit status {r['exit_code']}"
        if r["perfect"]:
            return f"iteration {r['iterations']}, {fmt(r['games'], ',')} games"
        return f"not perfect within {r['iterations']} iterations"

    def pick(who: str, seed: int | None, key: str) -> float | None:
        return median([r.get(key) for r in rows if (r["who"] == "reference") == (who == "ref")
                       and seed in (None, r["seed"])])

    def ratio(seed: int | None) -> float | None:
        ours_s, ref_s = pick("ours", seed, "process_s"), pick("ref", seed, "train_s")
        compile_s = pick("ref", seed, "compile_s")
        return ours_s / (ref_s + compile_s) if ours_s and ref_s is not None and compile_s else None

    out = []
    for seed in sorted({r["seed"] for r in rows}) + ["median"]:
        key = None if seed == "median" else seed
        mine = [next((r for r in rows if r["seed"] == seed and (r["who"] == "reference") == ref),
                     {}) for ref in (False, True)]
        out.append([seed, fmt(pick("ours", key, "process_s"), ".1f"), at(mine[0]),
                    fmt(pick("ref", key, "process_s"), ".1f"),
                    (f"{fmt(pick('ref', key, 'train_s'), '.1f')} + "
                     f"{fmt(pick('ref', key, 'compile_s'), '.1f')}"), at(mine[1]),
                    fmt(ratio(key), ".2f")])
    s.data.update(rows=rows, ours_args=ours, reference_args=ref, median_ratio=ratio(None))
    s.lines = ([] if reference else ["pgx is not installed: the reference was skipped."]) + [
        (f"`experiments/tictactoe.py {' '.join(ours)}`, cold compilation cache; reference "
         f"`benchmarks/tictactoe_reference.py {' '.join(ref)}`; process s: the whole process."),
        ""] + table(["seed", "ours process s", "ours perfect at", "reference process s",
                     "reference train + compile s", "reference perfect at",
                     "ours process / reference (train + compile)"], out if rows else [])
    if c.problem():
        s.fail(c.problem())


def connect_four(s: Section, a, timeout: float) -> None:
    """The Connect Four run's evaluations with search, from its metrics.jsonl."""
    minutes = a.minutes if a.quick else round(
        max(0.1, min(a.minutes, (timeout - C4_OVERHEAD_S) / 60)), 2)
    every = f"{max(0.25, min(1.0, minutes / 3)):g}"  # metrics.jsonl is written at checkpoints
    every = ["--eval-every", "0", "--eval-every-minutes", every, "--eval-search-every", "1",
             "--checkpoint-every", "0", "--checkpoint-every-minutes", every]
    args = ["--preset", a.preset, "--max-minutes", f"{minutes:g}",
            *(QUICK_C4 if a.quick else every), *a.c4_arg]
    run_dir = Path(a.work) / "connect_four"
    c = Child([PY, "experiments/connect_four.py", "--run-dir", str(run_dir), *args], timeout)
    path = run_dir / "metrics.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()
               if line.strip()] if path.exists() else []
    from azjax.run import metric_schema as ms  # after the run: it imports JAX

    net_moves, search_moves, kept = (ms.ground_truth_key(*k) for k in (
        (ms.NET, "move_accuracy"), (ms.SEARCH, "move_accuracy"), (ms.SEARCH, "result_kept")))
    keys = [f"{k}{h}" for k in (net_moves, search_moves, kept) for h in ("", "_hard")]
    wall, positions, peak = ms.WALL_TIME.name, ms.POSITIONS.name, ms.DEVICE_PEAK_BYTES.name
    evals = [{"minutes": r[wall] / 60, "games": r[ms.GAMES.name], "positions": r[positions],
              "positions_per_s": r[positions] / max(r[wall], 1e-9),
              "iteration_positions_per_s": r.get(ms.POSITIONS_PER_S.name),
              **{k: r.get(k) for k in keys}} for r in records if search_moves in r]
    peaks = [r[peak] for r in records if r.get(peak) is not None]
    s.data.update(minutes=minutes, args=args, evaluations=evals, exit_status=c.code,
                  iterations=records[-1][ms.ITERATION.name] if records else 0,
                  device_peak_bytes=max(peaks) if peaks else None)

    def pair(e: dict, key: str) -> str:
        return " / ".join(fmt(e[k] and 100 * e[k], ".1f") + "%" for k in (key, key + "_hard"))

    cut = "" if minutes >= a.minutes else f", cut from {a.minutes:g} to keep the deadline"
    s.lines = [(f"`experiments/connect_four.py {' '.join(args)}` ({minutes:g} minutes{cut}): "
                f"{s.data['iterations']} iterations; peak device memory "
                f"{size(s.data['device_peak_bytes'])}. Minutes: the run's clock (compilation "
                "included); hard: the positions without an immediate win where some move is "
                "not optimal."), ""] + table(
        ["minutes", "games", "positions", "positions/s (whole run / last iteration)",
         "net optimal (all / hard)", "net + search optimal (all / hard)",
         "net + search results kept (all / hard)"],
        [[f"{e['minutes']:.2f}", f"{e['games']:,}", f"{e['positions']:,}",
          f"{e['positions_per_s']:,.0f} / {fmt(e['iteration_positions_per_s'], ',.0f')}",
          pair(e, net_moves), pair(e, search_moves), pair(e, kept)] for e in evals])
    if c.problem():
        s.fail(c.problem())
    elif not evals:
        s.fail("failed: no evaluation with search in metrics.jsonl")


ENV_ROW = re.compile(r"^(\S+)\s+(\d+)\s+([\d,]+)\s+([\d,]+|-)\s+\S+\s*$")


def env_throughput(s: Section, a, timeout: float) -> None:
    """Steps/s of ours and pgx's envs, parsed row by row (a timeout keeps the rows done)."""
    args = ["--games", "tictactoe,connect_four,go9", "--batches",
            "64,256" if a.quick else "1024,4096", "--seconds", "0.1" if a.quick else "0.3",
            "--repeats", "1" if a.quick else "3"]
    c = Child([PY, "benchmarks/env_throughput.py", *args], timeout,
              {"XLA_FLAGS": a.xla_flags})  # XLA's optimisation pays here, --quick too
    rows = []
    for m in filter(None, map(ENV_ROW.match, c.out.splitlines())):
        ours, pgx = float(m[3].replace(",", "")), m[4].replace(",", "")
        pgx = None if pgx == "-" else float(pgx)
        rows.append({"game": m[1], "batch": int(m[2]), "ours_steps_per_s": ours,
                     "pgx_steps_per_s": pgx, "ratio": pgx and ours / pgx})
    s.data.update(args=args, rows=rows)
    s.lines = [(f"`benchmarks/env_throughput.py {' '.join(args)}`: random legal moves, "
                "auto-reset, compilation excluded."), ""] + table(
        ["game", "batch", "ours steps/s", "pgx steps/s", "ours / pgx"],
        [[r["game"], f"{r['batch']:,}", f"{r['ours_steps_per_s']:,.0f}",
          fmt(r["pgx_steps_per_s"], ",.0f"), fmt(r["ratio"], ".2f")] for r in rows])
    if c.problem():
        s.fail(c.problem())


def sweep(s: Section, a, timeout: float) -> None:
    """E experiments vmapped against one at a time, parsed from sweep_speedup's lines."""
    if a.quick:
        args = ["--game", "tictactoe", "--experiments", "2", "--iterations", "2",
                "--selfplay.num-games", "32", "--gradient-steps", "4",
                "--learner.batch-size", "64", "--replay-capacity", "4096"]
    else:
        args = ["--game", "connect_four", "--experiments", "8", "--iterations", "3",
                "--preset", "cpu"]
    c = Child([PY, "benchmarks/sweep_speedup.py", *args], timeout)
    m = re.search(r"E=(\d+) sequential ([\d.]+) s \| vmapped ([\d.]+) s \| speed-up ([\d.]+)x",
                  c.out)
    first = re.search(r"single ([\d.]+) s, vmapped ([\d.]+) s; .*: ([\d.]+) s vs ([\d.]+) s, "
                      r"speed-up ([\d.]+)x", c.out)
    s.data["args"] = args
    s.lines = [f"`benchmarks/sweep_speedup.py {' '.join(args)}`: "
               + (c.out.splitlines()[0] if c.out.strip() else ""), ""]
    if m:
        s.data.update(experiments=int(m[1]), sequential_s=float(m[2]), vmapped_s=float(m[3]),
                      speedup=float(m[4]))
        if first:
            s.data.update(compile_single_s=float(first[1]), compile_vmapped_s=float(first[2]),
                          with_compile_speedup=float(first[5]))
        s.lines += table(["E", "sequential s", "vmapped s", "speed-up (compilation excluded)",
                          "a process each vs one group, compilation included"],
                         [[m[1], m[2], m[3], f"{m[4]}x", f"{first[3]} s vs {first[4]} s "
                           f"({first[5]}x)" if first else "-"]])
    if c.problem():
        s.fail(c.problem())
    elif not m:
        s.fail("failed: no speed-up line in sweep_speedup's output")


def dtype(s: Section, a, timeout: float) -> None:
    """bfloat16 against float32 positions/s of the Connect Four iteration."""
    c = child("dtype", {"preset": a.preset, "quick": a.quick}, timeout)
    results = c.results()
    for name in DTYPES:
        mine = [r for r in results if r.get("dtype") == name]
        timed = [r for r in mine if "positions_per_s" in r]
        s.data[name] = {
            "positions_per_s": median([r["positions_per_s"] for r in timed]),
            "rates": [r["positions_per_s"] for r in timed],
            "compile_s": next((r["compile_s"] for r in mine if "compile_s" in r), None),
            "losses": timed[-1]["losses"] if timed else None,
            "losses_finite": bool(timed) and all(r["finite"] for r in timed)}
    f32, bf16 = (s.data[name]["positions_per_s"] for name in DTYPES)
    s.data["ratio"] = bf16 / f32 if f32 and bf16 else None
    setup = next((r for r in results if "positions_per_iteration" in r), {})
    s.data.update(setup)
    s.lines = [(f"`recipe('connect_four', '{a.preset}')`{' shrunk' if a.quick else ''}: "
                f"{fmt(setup.get('positions_per_iteration'), ',')} positions per iteration, "
                f"{setup.get('iterations')} iterations per repeat, {setup.get('repeats')} "
                f"repeats alternated, median; bfloat16 / float32 = "
                f"{fmt(s.data['ratio'], '.2f')}."),
               ""] + table(
        ["dtype", "positions/s", "compile + first iteration s", "losses finite", "last losses"],
        [[name, fmt(d["positions_per_s"], ",.0f"), fmt(d["compile_s"], ".1f"),
          "yes" if d["losses_finite"] else "no",
          ", ".join(f"{k} {v:.3f}" for k, v in (d["losses"] or {}).items())]
         for name, d in ((name, s.data[name]) for name in DTYPES)])
    if c.problem():
        s.fail(c.problem())


def memory(s: Section, a, timeout: float) -> None:
    """Peak device memory of each recipe's iteration beside the estimate, a process each,
    all at once (no process takes the device's memory in advance)."""
    names = ["tictactoe", "coin_split"] if a.quick else a.header.get("recipes", RECIPES)
    options = [{"name": name, "preset": a.preset, "quick": a.quick} for name in names]
    with ThreadPoolExecutor(len(names)) as pool:
        children = list(pool.map(lambda o: child("memory", o, timeout, {
            "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}), options))
    rows = [{"recipe": name, **{k: v for r in c.results() for k, v in r.items()},
             "problem": c.problem()} for name, c in zip(names, children)]
    s.data["rows"] = rows

    def peak(r: dict) -> str:
        return "n/a (CPU)" if r.get("platform") == "cpu" else size(r.get("peak_bytes"))

    s.lines = [(f"Each recipe's `{a.preset}` preset{' (shrunk)' if a.quick else ''}: init and 2 "
                "iterations in a fresh process."), ""] + table(
        ["recipe", "estimate (program_bytes)", "peak bytes in use", "peak / estimate", "note"],
        [[r["recipe"], size(r.get("estimate_bytes")), peak(r),
          fmt(r.get("peak_bytes") and r["peak_bytes"] / r["estimate_bytes"], ".2f"),
          r["problem"] or ""] for r in rows])
    if all(r["problem"] for r in rows):
        s.fail("failed: no recipe measured")


def refusal(s: Section, a, timeout: float) -> None:
    """A run whose estimate exceeds the device's memory: one `error:` line, at once."""
    sizes = a.header.get("refusal") or {"num_games": 4194304, "replay_capacity": 67108864}
    run_dir = Path(a.work) / "too_large"
    args = ["--preset", a.preset, "--selfplay.num-games", str(sizes["num_games"]),
            "--replay-capacity", str(sizes["replay_capacity"])]
    c = Child([PY, "experiments/connect_four.py", "--run-dir", str(run_dir), *args], timeout)
    lines = [line for line in c.err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    s.data.update(args=args, exit_status=c.code, stderr_lines=len(lines),
                  one_error_line=len(lines) == 1 and bool(errors),
                  line=errors[-1] if errors else (lines[-1] if lines else ""),
                  seconds=c.seconds, run_dir_created=run_dir.exists(),
                  estimate_bytes=sizes.get("estimate_bytes"),
                  available_bytes=a.header.get("available_bytes"))
    s.lines = [(f"`experiments/connect_four.py {' '.join(args)}`: estimate "
                f"{size(sizes.get('estimate_bytes'))} against "
                f"{size(a.header.get('available_bytes'))} available."), ""] + table(
        ["exit status", "stderr is one `error:` line", "the line", "seconds"],
        [["timed out" if c.timed_out else c.code,
          "yes" if s.data["one_error_line"] else f"no ({len(lines)} lines)",
          f"`{s.data['line']}`", f"{c.seconds:.1f}"]])
    if c.timed_out:
        s.fail(c.problem())
    elif c.code == 0:
        s.fail("failed: the run was not refused")


# (function, title, timeout in a full run, floor kept for it while earlier sections run)
SECTIONS = [
    (ttt, "Tic-tac-toe: time to perfect play", 130, 70),
    (connect_four, "Connect Four: the accelerator recipe's curve", None, None),  # limits()
    (env_throughput, "Env throughput against pgx", 60, 40),
    (sweep, "Sweep speed-up: E experiments vmapped against one at a time", 80, 50),
    (dtype, "bfloat16 against float32", 90, 50),
    (memory, "Peak device memory per recipe", 60, 40),
    (refusal, "A run too large for the device is refused before allocation", 30, 20),
]
QUICK_ORDER = [dtype, ttt, env_throughput, sweep, connect_four, memory, refusal]  # longest first


# --------------------------------------------------------------------------- children


def emit(**result) -> None:
    print("RESULT " + json.dumps(result), flush=True)


def child_header(o: dict) -> None:
    """The device, its memory, and sizes of a Connect Four run certainly too large for it."""
    import jax

    from azjax.core.program import program_bytes
    from azjax.run.recipes import RECIPES, backend_preset, recipe
    from envs.limits import available_bytes

    device = jax.devices()[0]
    preset = o["preset"] if o["preset"] != "auto" else backend_preset()
    config, available = recipe("connect_four", preset), available_bytes()
    env, games, capacity = config.make_env(), 4194304, 67108864
    while True:
        sized = config.with_value("selfplay.num_games", games).replace(replay_capacity=capacity)
        estimate = program_bytes(sized.program, env)
        if estimate > 4 * available or games >= 1 << 26:
            break
        games *= 2
    emit(device_kind=device.device_kind, platform=device.platform,
         device_count=jax.device_count(), preset=preset, available_bytes=available,
         recipes=list(RECIPES),
         refusal={"num_games": games, "replay_capacity": capacity, "estimate_bytes": estimate})


def child_ttt(o: dict) -> None:
    """Ours (cold) and the reference, seed by seed, through the time-to-perfect benchmark."""
    spec = importlib.util.spec_from_file_location(
        "ttt_time", ROOT / "benchmarks" / "tictactoe_time_to_perfect.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    work = Path(o["work"]) / "ttt"
    for seed in range(o["seeds"]):
        emit(**bench.run_ours("ours cold", seed, work / f"ours-{seed}", work / f"cache-{seed}",
                              o["ours"]))
        if o["with_reference"]:
            emit(**bench.run_reference(seed, o["reference"]))


def build(name: str, preset: str, quick: bool):
    """A recipe's config (shrunk for --quick) and its env."""
    from azjax.run.recipes import recipe

    config = recipe(name, preset)
    if quick:
        for path, value in (("selfplay.num_games", 32), ("learner.batch_size", 64),
                            ("gradient_steps", 4), ("network.channels", 16),
                            ("network.num_blocks", 1)):
            config = config.with_value(path, value)
    return config, config.make_env()


def jitted(config, env):
    """The iteration, jitted with the state donated (as the driver runs it)."""
    import jax

    from azjax.core.iteration import make_iteration_fn

    return jax.jit(make_iteration_fn(env, config.program), donate_argnums=0)


def child_dtype(o: dict) -> None:
    """Compiles and times each dtype's iteration in turn, then alternates more repeats."""
    import jax

    from azjax.core.iteration import init_train_state

    base, env = build("connect_four", o["preset"], o["quick"])
    iterations, repeats, per = 2, 2 if o["quick"] else 3, base.program.positions_per_iteration
    emit(positions_per_iteration=per, iterations=iterations, repeats=repeats)
    runs = {}

    def timed(name: str) -> None:
        step, state = runs[name]
        start = time.perf_counter()
        for _ in range(iterations):
            state, metrics = step(state)
        jax.block_until_ready((state, metrics))
        seconds, runs[name][1] = time.perf_counter() - start, state
        losses = {k: float(v) for k, v in metrics.items() if "loss" in k}
        emit(dtype=name, positions_per_s=iterations * per / seconds, losses=losses,
             finite=all(math.isfinite(v) for v in losses.values()))

    for name in DTYPES:
        config, start = base.with_value("network.dtype", name), time.perf_counter()
        step = jitted(config, env)
        state = init_train_state(env, config.program, jax.random.key(0))
        runs[name] = [step, jax.block_until_ready(step(state)[0])]
        emit(dtype=name, compile_s=time.perf_counter() - start)
        timed(name)
    for _ in range(repeats - 1):
        for name in DTYPES:
            timed(name)


def child_memory(o: dict) -> None:
    """Init and 2 iterations of a recipe; the device's peak bytes and the estimate."""
    import jax

    from azjax.core.iteration import init_train_state
    from azjax.core.program import program_bytes

    config, env = build(o["name"], o["preset"], o["quick"])
    emit(estimate_bytes=program_bytes(config.program, env))
    start = time.perf_counter()
    step, state = jitted(config, env), init_train_state(env, config.program, jax.random.key(0))
    for _ in range(2):
        state, metrics = step(state)
    jax.block_until_ready((state, metrics))
    device = jax.devices()[0]
    emit(platform=device.platform, seconds=time.perf_counter() - start,
         peak_bytes=(device.memory_stats() or {}).get("peak_bytes_in_use"))


CHILDREN = {"header": child_header, "ttt": child_ttt, "dtype": child_dtype,
            "memory": child_memory}


# --------------------------------------------------------------------------- parent


def versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def write(a, header: dict, sections: list[Section]) -> None:
    """Rewrites the Markdown report and the JSON figures, flushed to disk."""
    rows = [["date", header["date"]], ["command", f"`{header['command']}`"],
            ["device", header.get("device_kind", header.get("problem", "-"))],
            ["platform", f"{header.get('platform', '-')} ({header.get('device_count')} devices)"],
            ["preset", a.preset], ["device memory available", size(header.get("available_bytes"))],
            ["CPUs", header["cpus"]]] + [[k, v] for k, v in header["versions"].items()]
    text = "\n".join(["# azjax GPU report", ""] + table(["", ""], rows) + [""]
                     + [line for s in sections for line in s.markdown()])
    files = [(a.out, text)]
    if a.json:
        figures = {s.function.__name__: {"title": s.title, "status": s.status,
                                         "seconds": s.seconds, **(s.data if s.done else {})}
                   for s in sections}
        files.append((a.json, json.dumps({"header": header, "sections": figures}, indent=1,
                                         default=str)))
    for path, content in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            f.write(content + "\n")
            f.flush()
            os.fsync(f.fileno())


def run_section(s: Section, a, timeout: float) -> Section:
    """Runs one section; a timeout too short, or an error here, becomes its line."""
    start = time.perf_counter()
    log(f"{s.number}. {s.title}: start, timeout {timeout:.0f} s")
    s.status = "running"
    try:
        if timeout < MIN_SECTION_S:
            s.fail(f"skipped: {timeout:.0f} s left before the deadline")
        else:
            s.function(s, a, timeout)
    except Exception as err:  # noqa: BLE001 - one section's bug must not end the report
        s.fail(f"failed: {type(err).__name__}: {err}")
    s.status = "ok" if s.status == "running" else s.status
    s.seconds, s.done = time.perf_counter() - start, True
    log(f"{s.number}. {s.title}: {s.data.get('problem', 'ok')} ({s.seconds:.0f} s)")
    return s


def limits(i: int, a) -> tuple[float, float]:
    """Section i's (cap, floor) in a full run: Connect Four's from --minutes."""
    function, _, cap, floor = SECTIONS[i]
    if function is connect_four:
        return (a.minutes * 60 + C4_OVERHEAD_S,
                min(a.minutes, C4_MIN_MINUTES) * 60 + C4_OVERHEAD_S)
    return cap, floor


def timeout_for(i: int, a, start: float) -> float:
    """Section i's timeout: its cap, or less to keep every later section's floor before the
    deadline, but not under its own floor (earlier sections come first) nor past the
    deadline."""
    cap, floor = limits(i, a)
    if a.deadline is None:
        return cap
    left = a.deadline - (time.monotonic() - start)
    later = sum(limits(j, a)[1] for j in range(i + 1, len(SECTIONS)))
    return min(cap, max(floor, left - later), left)


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        CHILDREN[sys.argv[2]](json.loads(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a CPU")
    parser.add_argument("--minutes", type=float, default=3.0,
                        help="Connect Four training minutes, at most (full run)")
    parser.add_argument("--deadline-minutes", type=float, default=8.0,
                        help="a full run ends within this (0: no deadline)")
    parser.add_argument("--preset", choices=["auto", "cpu", "gpu"], default="auto",
                        help="recipe variant (auto: cpu on a CPU, else gpu)")
    parser.add_argument("--c4-arg", action="append", default=[], metavar="ARG",
                        help="an extra option of the Connect Four run (repeatable)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="sections run at once (default 1; --quick 3)")
    parser.add_argument("--out", type=Path, default=Path("gpu_report.md"))
    parser.add_argument("--json", type=Path, default=None, help="also write the raw figures")
    a = parser.parse_args()
    start = time.monotonic()
    a.jobs, a.xla_flags = a.jobs or (3 if a.quick else 1), os.environ.get("XLA_FLAGS", "")
    a.deadline = None if a.quick or a.jobs > 1 or a.deadline_minutes <= 0 else \
        60 * a.deadline_minutes
    if a.quick:
        a.minutes = 0.4
        os.environ["XLA_FLAGS"] = f"{a.xla_flags} --xla_backend_optimization_level=0".strip()
    header = {"date": f"{datetime.now():%Y-%m-%d %H:%M:%S}", "cpus": os.cpu_count(),
              "command": " ".join(["python", *sys.argv]), "versions": versions()}
    sections = [Section(i, f, title) for i, (f, title, *_) in enumerate(SECTIONS, 1)]
    log("header: the device")
    c = child("header", {"preset": a.preset}, 90)
    header.update((c.results() or [{"problem": c.problem() or "no result"}])[-1])
    if a.preset == "auto":
        a.preset = header.get("preset") or ("cpu" if a.quick else "gpu")
    a.header = header
    write(a, header, sections)
    with tempfile.TemporaryDirectory(prefix="gpu_report_") as work:
        a.work = work
        if a.jobs == 1:
            for i, s in enumerate(sections):
                run_section(s, a, QUICK_CAP_S if a.quick else timeout_for(i, a, start))
                write(a, header, sections)
        else:
            order = sorted(sections, key=lambda s: QUICK_ORDER.index(s.function))
            with ThreadPoolExecutor(a.jobs) as pool:
                futures = [pool.submit(run_section, s, a, QUICK_CAP_S if a.quick
                                       else timeout_for(sections.index(s), a, start))
                           for s in order]
                for _ in as_completed(futures):
                    write(a, header, sections)
    log(f"wrote {a.out}" + (f" and {a.json}" if a.json else "")
        + f" in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
