"""AlphaGo-style leaf evaluation: strength against a fixed opponent as lambda varies.

A leaf's value is `(1 - lambda) * network value + lambda * random-playout result`
(`SearchConfig.rollout_lambda`). For each lambda, the run's newest network with that
mix plays `--games` games against `--opponent` (half per seat, paired openings).

    python benchmarks/alphago_lambda.py --run-dir runs/connect_four \
        --lambdas 0,0.25,0.5,1 --opponent alphabeta:4 --games 200

`--quick` (seconds, to check the script end to end on any run; the figures mean nothing):
lambdas 0 and 1, 2 games each against `random`, 2 simulations a move.
"""

from __future__ import annotations

import argparse
import sys
import time

import _quick
import jax

from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import make_player
from azjax.run.directory.run_dir import RunDir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--lambdas", default="0,0.25,0.5,1")
    parser.add_argument("--opponent", default="alphabeta:4")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--openings", type=int, default=2)
    parser.add_argument("--simulations", type=int, default=0, help="0 = the training budget")
    parser.add_argument("--seed", type=int, default=0)
    args = _quick.parse(parser, argv, lambdas="0,1", opponent="random", games=2, simulations=2)
    try:
        lambdas = [float(x) for x in args.lambdas.split(",")]
        sims = f",sims={args.simulations}" if args.simulations else ""
        env = RunDir(args.run_dir).load_config().make_env()
        players = [make_player(f"alphago:{args.run_dir},lambda={lam}{sims}", env,
                               f"lambda={lam:g}") for lam in lambdas]
        opponent = make_player(args.opponent, env)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{env.name}: AlphaGo leaf mix against {opponent.name}, {args.games} games each")
    print("| lambda | W / D / L | score (95% CI) | seconds |\n| --- | --- | --- | --- |")
    for player in players:
        start = time.perf_counter()
        # The same key for every lambda: the same openings, so only the mix differs.
        result = play_match(env, player, opponent, jax.random.key(args.seed), args.games,
                          args.openings)
        low, high = result.score_interval()
        print(f"| {player.name.split('=')[1]} | {result.wins} / {result.draws} / "
              f"{result.losses} | {100 * result.score:.1f}% ({100 * low:.0f}-{100 * high:.0f}%)"
              f" | {time.perf_counter() - start:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
