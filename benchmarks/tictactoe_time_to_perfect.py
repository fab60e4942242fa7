"""Time and self-play games until the tic-tac-toe agent is unbeatable and 100% optimal.

Each seed runs in a fresh process, so compilation is included in the times, as a user
running `python experiments/tictactoe.py` would see it. Evaluation runs every iteration
here (it is exact and cheap: one batched network pass + an exhaustive game-tree walk).

    python benchmarks/tictactoe_time_to_perfect.py --seeds 5 [any experiment option]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def one_seed(seed: int, overrides: list[str]) -> dict:
    import tyro
    from _cli import Experiment
    from tictactoe import DEFAULTS

    from azjax.driver import train

    experiment = tyro.cli(
        Experiment, default=Experiment(config=DEFAULTS), args=overrides
    )
    config = experiment.config.replace(seed=seed, eval_every=1, eval_search_every=0,
                                       log_every=1)
    start = time.perf_counter()
    result = train(config, run_dir=None, progress=None)
    total = time.perf_counter() - start
    unbeatable = next((r for r in result.records if r.get("net_unbeatable")), None)
    perfect = result.perfect_at
    last = result.records[-1]
    return {
        "seed": seed,
        "unbeatable_s": unbeatable and unbeatable["wall_time"],
        "unbeatable_games": unbeatable and unbeatable["games"],
        "perfect_s": perfect and perfect["wall_time"],
        "perfect_games": perfect and perfect["games"],
        "final_optimal_share": last.get("net_optimal_share"),
        "iterations": last["iteration"],
        "total_s": total,
    }


def fmt(x, spec):
    return "never" if x is None else format(x, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    parser.add_argument("--one-seed", type=int, default=None, help=argparse.SUPPRESS)
    args, overrides = parser.parse_known_args()
    if args.one_seed is not None:
        print(json.dumps(one_seed(args.one_seed, overrides)))
        return 0

    rows = []
    print("seed | unbeatable: s, games | 100% optimal: s, games | final optimal | iterations")
    for seed in range(args.seeds):
        out = subprocess.run(
            [sys.executable, __file__, "--one-seed", str(seed), *overrides],
            check=True, capture_output=True, text=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{seed:>4} | {fmt(row['unbeatable_s'], '6.1f')} s {fmt(row['unbeatable_games'], '>7,')} | "
            f"{fmt(row['perfect_s'], '6.1f')} s {fmt(row['perfect_games'], '>7,')} | "
            f"{100 * row['final_optimal_share']:6.2f}% | {row['iterations']}",
            flush=True,
        )
    for key, label in (("unbeatable_s", "unbeatable"), ("perfect_s", "100% optimal")):
        got = [r[key] for r in rows if r[key] is not None]
        if got:
            print(
                f"{label}: {len(got)}/{len(rows)} seeds, median {statistics.median(got):.1f} s, "
                f"max {max(got):.1f} s (compile included)"
            )
        else:
            print(f"{label}: 0/{len(rows)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
