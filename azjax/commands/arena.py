"""The arena: N batched games between two players, with confidence intervals.

    python -m azjax.arena alphazero:runs/connect_four mcts:1000 --games 100
    python -m azjax.arena random solver --game tictactoe --games 1000 --openings 2
    python -m azjax.arena random mcts:100 --game go --game-options size=9 --games 10 --sgf games/
    python -m azjax.arena alphazero:oth6.azjax,sims=64 random --games 20
    azjax arena alphazero:go7x7 gnugo:1 --games 100   (an agent that ships with azjax)

Seats are swapped for half the games, and the two halves play the same openings
(`--openings K` random plies first, so deterministic players do not replay one game).
The games are played by `azjax.evaluation.match.play_match` (also `azjax.play_match`). For Go,
`--sgf DIR` saves every game as DIR/game-0001.sgf, ... (`azjax.go.sgf`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

import jax

import envs
from azjax.commands.errors import one_line_errors, run_script
from azjax.core.memory import check_match_fits
from azjax.evaluation import player_specs
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import search_simulations
from azjax.go import sgf
from azjax.run.agents import shipped_agents
from azjax.run.config import check_seed
from azjax.run.files import check_output_path, write_atomic
from azjax.run.grammar.game_options import GAME_OPTIONS_FLAG, GAME_OPTIONS_HELP, split_game_options
from azjax.run.process.progress import Progress
from envs import Env


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.arena A B [--game G] [--games N] [--openings K] [--seed S]
    [--json F] [--sgf DIR]`; exit status 2 with one `error:` line for a bad argument,
    player or output (the outputs are checked before the match and the result printed
    before they are written)."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.arena",
        description="Play two players against each other and report W/D/L with a 95% CI.",
        epilog=player_specs.__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("player_a", help="player spec, e.g. alphazero:runs/tictactoe, "
                        "alphazero:agent.azjax or alphazero:NAME, NAME a shipped agent: "
                        f"{shipped_agents.listed()}")
    parser.add_argument("player_b", help="player spec, e.g. mcts:1000")
    parser.add_argument("--game", help="a game name, pgx:<id> or the import path module:Class "
                        "of a game of your own (default: the game of a run or agent file "
                        "named by A or B)")
    parser.add_argument(GAME_OPTIONS_FLAG, nargs="+", metavar="KEY=VALUE",
                        help=GAME_OPTIONS_HELP)
    parser.add_argument("--game-option", action="append", default=[], metavar="KEY=VALUE",
                        help="one game option (repeatable; the older spelling)")
    parser.add_argument("--games", type=int, default=100, help="games to play (default 100)")
    parser.add_argument("--openings", type=int, default=0, metavar="K",
                        help="random plies before the players take over (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    parser.add_argument("--sgf", metavar="DIR",
                        help="Go only: also save every game as DIR/game-0001.sgf, ... "
                             "(SGF, random opening moves included)")
    argv, given = split_game_options(sys.argv[1:] if argv is None else list(argv), words=True)
    args = parser.parse_args(argv)
    check_seed(args.seed)
    out = None if args.json is None else check_output_path(args.json, "--json")
    env = _arena_env(args, given)
    sgf_dir = None
    if args.sgf is not None:
        sgf_dir = sgf.check_sgf_dir(env, args.sgf)
    player_a = player_specs.make_player(args.player_a, env)
    player_b = player_specs.make_player(args.player_b, env)
    check_match_fits(env, args.games, [(p.name, search_simulations(spec, p)) for spec, p in
                                       ((args.player_a, player_a), (args.player_b, player_b))])
    start = time.perf_counter()
    if player_a.jittable and player_b.jittable and args.games >= 1:
        print(f"playing {args.games} games as one compiled match...", file=sys.stderr,
              flush=True)
    status = Progress(args.games, "games", "arena", every=5.0,
                      write=lambda line: print(line, file=sys.stderr, flush=True))
    result = play_match(env, player_a, player_b, jax.random.key(args.seed), args.games,
                        args.openings, progress=status.update,
                        record=sgf_dir is not None or env.score_margin() is not None)
    print(f"{env.name}: {result.summary()}")
    print(f"  ({time.perf_counter() - start:.1f}s)", flush=True)
    if out is not None:
        write_atomic(out, json.dumps({"game": env.name, **result.as_dict()}, indent=2) + "\n")
    if sgf_dir is not None:
        paths = sgf.write_match_sgfs(env, result, sgf_dir, event="arena",
                                     date=datetime.date.today().isoformat())
        print(f"wrote {len(paths)} SGF files to {sgf_dir}", flush=True)
    return 0


def _arena_env(args, given: dict | None = None) -> Env:
    options = dict(given or {})
    for item in args.game_option:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--game-option expects KEY=VALUE, got {item!r}")
        try:
            options[key] = float(value) if "." in value else int(value)
        except ValueError:
            options[key] = value  # not a number: a word, such as go's ko=simple
    if args.game:
        return envs.make(args.game, **options)
    env = player_specs.game_of([args.player_a, args.player_b])
    if env is None:
        raise ValueError("neither player names a run directory; say which game with --game")
    if options:
        raise ValueError(f"{GAME_OPTIONS_FLAG} comes with --game: the game of a run or agent "
                         "file is the one it was trained on")
    return env


if __name__ == "__main__":
    run_script(main)
