"""Whole-process time until the tic-tac-toe network alone plays perfectly, seed by seed.

Each seed runs the real command in a fresh process and is timed from start to exit
(imports, compilation, training, evaluation, checkpoint writing), as a user sees it:

    python experiments/tictactoe.py --seed S --run-dir <tmpdir>/ours-S [overrides]

Its result is read from the run's metrics.jsonl: perfect at the first record whose
evaluation said perfect (as the driver's `perfect_at`). With --reference the hand-written
pgx + mctx loop runs too, interleaved seed by seed (ours 0, reference 0, ours 1, ...) so
machine noise hits both alike:

    python benchmarks/tictactoe_reference.py --seed S [each --reference-arg=ARG]

    python benchmarks/tictactoe_time_to_perfect.py [--seeds 5] [--reference] [--cold-only]
        [--reference-arg=ARG ...] [--json FILE] [any experiments/tictactoe.py option,
        e.g. --iterations 4]

Columns: "process s" is the whole-process wall time (the figure compared); "run s" is the
run's own clock at perfect (or at its end): ours its metrics `wall_time`, the reference its
`since_start_s`. The summary's medians are over the seeds that reached perfect play.

Ours runs twice per seed: "ours cold" with an empty compilation cache (a first run on a
fresh machine compiles everything), then "ours warm" in a new run directory with the
cache the first filled (every later run: `azjax.run.process.compile_cache`). --cold-only skips the
second.

`--quick`: seed 0 alone, ours at `benchmarks/_quick.py`'s sizes for 1 iteration and the
reference's `--quick`, in seconds (to check the script end to end; the figures mean
nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _quick

from azjax.run import metric_schema as ms
from azjax.run.process import compile_cache

ROOT = Path(__file__).resolve().parents[1]
OURS = ROOT / "experiments" / "tictactoe.py"
REFERENCE = ROOT / "benchmarks" / "tictactoe_reference.py"


def timed(command: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Runs a command; returns (seconds from Popen to exit, exit code, stdout)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    out, err = process.communicate()
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        sys.stderr.write(err[-2000:])
    return seconds, process.returncode, out


def read_metrics(run_dir: Path) -> list[dict]:
    """The records of a run's metrics.jsonl (empty if there is none)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_ours(who: str, seed: int, run_dir: Path, cache: Path, overrides: list[str]) -> dict:
    """One whole-process run of experiments/tictactoe.py with its compilation cache in
    `cache`, summarized from its metrics."""
    command = [sys.executable, str(OURS), "--seed", str(seed), "--run-dir", str(run_dir),
               *overrides]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env[compile_cache.ENV_VAR] = str(cache)
    seconds, code, _ = timed(command, env)
    records = read_metrics(run_dir)
    perfect = next((r for r in records if r.get(ms.PERFECT.name)), None)
    last = records[-1] if records else {}
    at = perfect or last
    optimal = ms.ground_truth_key(ms.NET, "optimal_share")
    shares = [r[optimal] for r in records if optimal in r]
    return {
        "who": who, "seed": seed, "exit_code": code, "process_s": seconds,
        "perfect": perfect is not None, "run_wall_s": at.get(ms.WALL_TIME.name),
        "games": at.get(ms.GAMES.name), "iterations": at.get(ms.ITERATION.name),
        "optimal_share": shares[-1] if shares else None,
    }


def run_reference(seed: int, extra: list[str]) -> dict:
    """One whole-process run of the hand-written reference loop."""
    seconds, code, out = timed([sys.executable, str(REFERENCE), "--seed", str(seed), *extra])
    lines = out.strip().splitlines()
    result = json.loads(lines[-1]) if code == 0 and lines else {}
    return {
        "who": "reference", "seed": seed, "exit_code": code, "process_s": seconds,
        "perfect": bool(result.get("perfect")), "run_wall_s": result.get("since_start_s"),
        "games": result.get("games"), "iterations": result.get("iterations"),
        "optimal_share": result.get("optimal_share"), "train_s": result.get("train_s"),
        "compile_s": result.get("compile_s"),
    }


def fmt(x, spec: str) -> str:
    """`x` formatted, or '-' when missing."""
    return "-" if x is None else format(x, spec)


def print_row(row: dict) -> None:
    """One table line."""
    share = row["optimal_share"]
    print(f"{row['who']:>9} | {row['seed']:>4} | {fmt(row['process_s'], '8.1f')} | "
          f"{fmt(row['run_wall_s'], '8.1f')} | {fmt(row['games'], '>7,')} | "
          f"{fmt(row['iterations'], '>5')} | {'yes' if row['perfect'] else 'no':>7} | "
          f"{fmt(share and 100 * share, '6.2f')}%", flush=True)


def summary(rows: list[dict], who: str) -> float | None:
    """Prints 'who: k/N perfect, median X s'; returns the median whole-process seconds
    over the perfect runs (None if none)."""
    mine = [r for r in rows if r["who"] == who]
    if not mine:
        return None
    hits = [r["process_s"] for r in mine if r["perfect"]]
    median = statistics.median(hits) if hits else None
    text = f"median {median:.1f} s (whole process)" if hits else "no perfect run"
    print(f"{who}: {len(hits)}/{len(mine)} perfect, {text}; median over all runs "
          f"{statistics.median(r['process_s'] for r in mine):.1f} s")
    return median


def main() -> int:
    """Runs the seeds, prints the table and the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    parser.add_argument("--reference", action="store_true",
                        help="also time benchmarks/tictactoe_reference.py, interleaved")
    parser.add_argument("--reference-arg", action="append", default=[], metavar="ARG",
                        help="pass ARG to the reference (repeatable: --reference-arg=--steps "
                             "--reference-arg=256)")
    parser.add_argument("--cold-only", action="store_true",
                        help="skip the second (warm-cache) run of ours")
    parser.add_argument("--json", type=Path, default=None, help="write all rows here")
    args, overrides = _quick.parse(parser, known=True, seeds=1)
    if args.quick:
        overrides = _quick.flags(iterations=1) + overrides
        args.reference_arg = ["--quick", *args.reference_arg]

    rows = []
    print("      who | seed | process s | run s   |   games | iters | perfect | optimal")
    with tempfile.TemporaryDirectory(prefix="ttt_time_") as tmp:
        for seed in range(args.seeds):
            cache = Path(tmp) / f"cache-{seed}"  # empty: the first run compiles everything
            runs = [("ours cold", "cold")] + ([] if args.cold_only else [("ours warm", "warm")])
            for who, name in runs:
                rows.append(run_ours(who, seed, Path(tmp) / f"{name}-{seed}", cache, overrides))
                print_row(rows[-1])
            if args.reference:
                rows.append(run_reference(seed, args.reference_arg))
                print_row(rows[-1])
    medians = {who: summary(rows, who) for who in ("ours cold", "ours warm", "reference")}
    reference = medians["reference"]
    for who in ("ours cold", "ours warm"):
        if medians[who] is not None and reference is not None:
            print(f"ratio {who}/reference: {medians[who]:.1f}/{reference:.1f} = "
                  f"{medians[who] / reference:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
