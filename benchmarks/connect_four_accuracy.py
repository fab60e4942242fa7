"""Connect Four: solver-position accuracy against training time, from a run's metrics.

Trains `experiments/connect_four.py` (or resumes it) unless `--report-only`, then prints
the table of the evaluations that include the search: time, games, optimal-move share
of the network alone and of network + search (all 1,000 positions / non-trivial ones),
the share of search moves that keep the position's result (all / those where a move
changes it), and the network's value-sign accuracy, beside two baselines computed here
(a uniformly random move; a value that always says "the side to move wins").

With `--budgets N [N ...]` it then searches the 1,000 positions again with the final
network at each budget (simulations per move) and splits the wrong moves: those that
keep the position's result but not its distance (a slower win, a faster loss: the
solver's "optimal" is the best score, and an undiscounted value cannot tell them apart)
and those that change the result, and gives the wrong share by game phase (plies played:
the early positions are the hard ones, their fastest win often 25 plies away).
The search is the run's scored one (its training search changed by its
`eval_search_with`); `--search-with NAME=VALUE ...` changes it further for that table
only (an evaluation-time ablation on a trained network).

    python benchmarks/connect_four_accuracy.py [--run-dir runs/connect_four] [--report-only]
        [--budgets 32 128 512 [--step N] [--search-with gumbel_value_scale=1 ...]]
        [any experiments/connect_four.py option,
        e.g. --max-minutes 60]

`--quick` (seconds, to check the script end to end; the figures mean nothing): trains one
iteration at `benchmarks/_quick.py`'s sizes, evaluated with search, into a new temporary
--run-dir unless given, then the table at a budget of 2 simulations.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import _quick
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


def search_changes(pairs: list[str]) -> dict[str, object]:
    """`NAME=VALUE` search settings (e.g. `gumbel_value_scale=1`), parsed as a run's
    `eval_search_with` is (`azjax.core.search.search_changes`); a one-line error otherwise."""
    from azjax.core.search import search_changes as parse

    try:
        return parse(pairs)
    except ValueError as error:
        raise SystemExit(f"error: --search-with: {error}") from None


def budget_table(run_dir: str, budgets: list[int], step: int | None,
                 changes: dict[str, object]) -> None:
    """Optimal-move share of the run's final agent (or its checkpoint `step`) at each
    search budget, its search changed by `changes`, with its wrong moves split into
    slower wins, faster losses (both keep the result) and result-changing ones."""
    import jax

    from azjax import Agent
    from azjax.core.search import search_changes as parse
    from azjax.run.directory.run_dir import RunDir
    from envs import connect_four as c4
    from envs.connect_four import boards_from_moves

    value = np.array([json.loads(line)["value"] for line in
                      (c4.DATA_DIR / "dev_set.jsonl").read_text().splitlines() if line.strip()])
    moves = c4.load_move_set()
    states = boards_from_moves(moves.moves)
    # the run's own scored search first, as its evaluations searched
    changes = {**parse(RunDir(run_dir).load_config().run.eval_search_with), **changes}
    agent = Agent.load(run_dir, step)
    agent = agent.with_search(**changes)
    legal = np.asarray(states.legal_action_mask)
    wins = c4.immediate_wins(agent.env, states).any(axis=1)
    hard = ~wins & np.any(legal & ~moves.optimal, axis=1)
    which = "final network" if step is None else f"network of iteration {step}"
    changed = "".join(f", {k} {v:g}" if isinstance(v, float) else f", {k} {v}"
                      for k, v in changes.items())
    print(f"\n{which} of {run_dir} (discount {agent.search_config.discount:g}{changed}), "
          f"searching the 1,000 positions (noise off):")
    plies = np.array([len(line) for line in moves.moves])
    phases = {f"{lo}-{hi - 1}": (plies >= lo) & (plies < hi)
              for lo, hi in [(4, 12), (12, 20), (20, 28), (28, 37)]}
    print("simulations | optimal (hard) | wrong, result kept: slower win, faster loss "
          "| wrong, result changed | wrong by plies played: "
          + ", ".join(f"{name} ({phase.sum()})" for name, phase in phases.items()))
    for budget in budgets:
        actions = np.asarray(agent.with_search(num_simulations=budget).act(
            states, jax.random.key(0)))
        index = np.arange(len(actions))
        optimal = moves.optimal[index, actions]
        kept = moves.keeps_result[index, actions]
        slower, faster = (kept & ~optimal & (value > 0)), (kept & ~optimal & (value < 0))
        print(f"{budget:11d} | {100 * optimal.mean():5.1f}% ({100 * optimal[hard].mean():5.1f}%) "
              f"| {100 * (kept & ~optimal).mean():17.1f}%: {100 * slower.mean():4.1f}%, "
              f"{100 * faster.mean():4.1f}% | {100 * (~kept).mean():20.1f}% | "
              + ", ".join(f"{100 * np.mean(~optimal[phase]):4.1f}%" for phase in phases.values()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/connect_four")
    parser.add_argument("--report-only", action="store_true", help="do not train, only report")
    parser.add_argument("--budgets", type=int, nargs="*", default=[],
                        help="also search the positions with the final network at these "
                             "simulation counts")
    parser.add_argument("--step", type=int, default=None,
                        help="with --budgets: the network of this checkpoint, not the last")
    parser.add_argument("--search-with", nargs="*", default=[], metavar="NAME=VALUE",
                        help="with --budgets: search with these settings changed "
                             "(e.g. gumbel_value_scale=1 discount=0.9)")
    args, rest = _quick.parse(parser, known=True, run_dir=None, budgets=[2])
    if args.quick:
        rest = _quick.flags(iterations=1, eval_every=1, eval_search_every=1) + rest
        args.run_dir = args.run_dir or tempfile.mkdtemp(prefix="connect_four_quick_")
    changes = search_changes(args.search_with)
    if not args.report_only:
        command = [sys.executable, str(ROOT / "experiments" / "connect_four.py"),
                   "--run-dir", args.run_dir, *rest]
        if subprocess.run(command).returncode != 0:
            return 1

    from azjax.run import metric_schema as ms
    from azjax.run.directory.run_dir import RunDir

    def key(player: str, name: str, subset: str = "") -> str:
        return ms.ground_truth_key(player, name, subset)

    records = [r for r in RunDir(args.run_dir).metrics.read()
               if key(ms.SEARCH, "move_accuracy") in r]
    if not records:
        print(f"no evaluation with search in {args.run_dir}/metrics.jsonl")
        return 1
    rand_all, rand_hard, always_win = baselines()
    def share(r: dict, player: str, name: str) -> str:
        if key(player, name) not in r:  # a run from before the metric
            return "     -        "
        return (f"{100 * r[key(player, name)]:5.1f}% "
                f"({100 * r[key(player, name, 'hard')]:5.1f}%)")

    print("minutes |   games | net moves (hard) | search moves (hard) | search results kept "
          "(hard) | net value sign")
    for r in records:
        print(f"{r[ms.WALL_TIME.name] / 60:7.1f} | {r[ms.GAMES.name]:>7,} | "
              f"{share(r, ms.NET, 'move_accuracy')}   | "
              f"{share(r, ms.SEARCH, 'move_accuracy')}      | "
              f"{share(r, ms.SEARCH, 'result_kept')}             | "
              f"{100 * r[ms.NET_VALUE_ACCURACY.name]:5.1f}%")
    print(
        f"baselines: a random legal move {100 * rand_all:.1f}% ({100 * rand_hard:.1f}%); "
        f"a value that always predicts a win {100 * always_win:.1f}%"
    )
    if args.budgets:
        budget_table(args.run_dir, args.budgets, args.step, changes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
