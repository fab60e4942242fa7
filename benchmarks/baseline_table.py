"""A trained agent against the classic baselines, from both seats: the README's tables.

    python benchmarks/baseline_table.py --run-dir runs/connect_four \
        --opponents random,mcts:100,mcts:1000,alphabeta:2,alphabeta:4 --games 100

Each opponent plays `--games` games (half per seat, paired random openings of
`--openings` plies) against the run's newest checkpoint with its training search
budget (or `--simulations`). Prints a markdown table and writes it with the raw counts
to `--out` (default: RUN_DIR/baselines.md and .json).

`--quick` (seconds, to check the script end to end on any run; the figures mean nothing):
2 games against each of random, mcts:2 and alphabeta:1, 2 simulations a move.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _quick
import jax

from azjax import Agent
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import make_player
from azjax.run.grammar.specs import split_specs


def row(result, seconds: float) -> str:
    """One markdown table row: opponent, W/D/L, score with CI, per seat."""
    low, high = result.score_interval()
    cells = [result.name_b, f"{result.num_games}",
             f"{result.wins} / {result.draws} / {result.losses}",
             f"{100 * result.score:.1f}% ({100 * low:.0f}-{100 * high:.0f}%)"]
    for seat in (0, 1):
        part = result.seat(seat)
        cells.append(f"{part.wins} / {part.draws} / {part.losses}")
    cells.append(f"{seconds:.0f}")
    return "| " + " | ".join(cells) + " |"


HEADER = ("| opponent | games | W / D / L | score (95% CI) | moving first W / D / L "
          "| moving second W / D / L | seconds |\n| --- | --- | --- | --- | --- | --- | --- |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--opponents", default="random,mcts:100,mcts:1000,alphabeta:2,alphabeta:4")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--openings", type=int, default=2)
    parser.add_argument("--simulations", type=int, default=0, help="0 = the training budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="output stem (default RUN_DIR/baselines)")
    args = _quick.parse(parser, argv, opponents="random,mcts:2,alphabeta:1", games=2, simulations=2)
    try:
        agent = Agent.load(args.run_dir)
        if args.simulations:
            agent = agent.with_search(num_simulations=args.simulations)
        opponents = [make_player(spec, agent.env) for spec in split_specs(args.opponents)]
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    player = agent.player("alphazero", f"alphazero ({agent.search_config.policy}, "
                                       f"{agent.search_config.num_simulations} sims)")
    print(f"{agent.env.name}: {player.name} from {args.run_dir}")
    lines, results = [HEADER], []
    print(HEADER)
    for i, opponent in enumerate(opponents):
        start = time.perf_counter()
        result = play_match(agent.env, player, opponent, jax.random.key(args.seed + i),
                          args.games, args.openings)
        lines.append(row(result, time.perf_counter() - start))
        results.append(result.as_dict())
        print(lines[-1], flush=True)
    out = Path(args.out) if args.out else Path(args.run_dir) / "baselines"
    out.with_suffix(".md").write_text(f"{player.name}\n\n" + "\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.with_suffix('.md')} and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
