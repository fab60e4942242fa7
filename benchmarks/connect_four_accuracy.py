"""Connect Four: solver-position accuracy against training time, from a run's metrics.

Trains `experiments/connect_four.py` (or resumes it) unless `--report-only`, then prints
the table of the evaluations that include the search: time, games, optimal-move share
of the network alone and of network + search (all 1,000 positions / non-trivial ones),
and the network's value-sign accuracy, beside two baselines computed here (a uniformly
random move; a value that always says "the side to move wins").

    python benchmarks/connect_four_accuracy.py [--run-dir runs/connect_four] [--report-only]
        [any experiments/connect_four.py option, e.g. --max-minutes 60]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def baselines() -> tuple[float, float, float]:
    """Random-move accuracy (all, non-trivial) and the always-win value accuracy."""
    import envs
    from envs import connect_four as c4
    from envs.connect_four import boards_from_moves

    moves = c4.load_move_set()
    states = boards_from_moves(moves.moves)
    legal = np.asarray(states.legal_action_mask)
    share = moves.optimal.sum(1) / legal.sum(1)
    wins = c4.immediate_wins(envs.make("connect_four"), states).any(axis=1)
    hard = ~wins & np.any(legal & ~moves.optimal, axis=1)
    score = c4.load_value_set().score
    return float(share.mean()), float(share[hard].mean()), float(np.mean(score[score != 0] > 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/connect_four")
    parser.add_argument("--report-only", action="store_true", help="do not train, only report")
    args, rest = parser.parse_known_args()
    if not args.report_only:
        command = [sys.executable, str(ROOT / "experiments" / "connect_four.py"),
                   "--run-dir", args.run_dir, *rest]
        if subprocess.run(command).returncode != 0:
            return 1

    from azjax.checkpoint import read_metrics

    records = [r for r in read_metrics(Path(args.run_dir)) if "search_move_accuracy" in r]
    if not records:
        print(f"no evaluation with search in {args.run_dir}/metrics.jsonl")
        return 1
    rand_all, rand_hard, always_win = baselines()
    print("minutes |   games | net moves (hard) | search moves (hard) | net value sign")
    for r in records:
        print(
            f"{r['wall_time'] / 60:7.1f} | {r['games']:>7,} | "
            f"{100 * r['net_move_accuracy']:5.1f}% ({100 * r['net_move_accuracy_hard']:5.1f}%) | "
            f"{100 * r['search_move_accuracy']:5.1f}% ({100 * r['search_move_accuracy_hard']:5.1f}%)"
            f"      | {100 * r['net_value_accuracy']:5.1f}%"
        )
    print(
        f"baselines: a random legal move {100 * rand_all:.1f}% ({100 * rand_hard:.1f}%); "
        f"a value that always predicts a win {100 * always_win:.1f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
