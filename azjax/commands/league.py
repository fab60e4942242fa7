"""The league command: a round robin over a run's checkpoints and baseline players, rated
by Elo; the league itself is `azjax.evaluation.league`.

    python -m azjax.league --run-dir runs/tictactoe --baselines random,mcts:100 --games 40
    python -m azjax.league --run-dir oth6.azjax --baselines random,alphazero:other.azjax

It prints the table, then writes `league.csv`, `league.md`, `league.json` and
`league.png` into the run directory (and, for Go with `--sgf DIR`, every game as SGF).
`--run-dir` also takes an agent file (`python -m azjax.export`): then that agent plays the
baselines, which may name agent files too (`alphazero:FILE`), and the league files go
next to it (or into `--out DIR`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax

from azjax.commands.errors import one_line_errors, run_script
from azjax.core.memory import check_match_fits
from azjax.evaluation.league import (
    DEFAULT_OPENING_PLIES,
    FILES,
    PLAYER_KINDS,
    Entrant,
    League,
    check_outputs,
    fit_league,
    round_robin,
    run_league,
)
from azjax.evaluation.player_specs import make_player, search_simulations
from azjax.go import sgf
from azjax.run.agents.agent_source import load_agent
from azjax.run.config import check_seed
from azjax.run.directory.run_dir import RunDir
from azjax.run.grammar.specs import split_specs


def _int_list(text: str | None, what: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"{what} must be comma-separated integers, got {text!r}") from None


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.league --run-dir DIR [--baselines ...] [--steps ...] [--games N] ...`;
    prints the table, then writes the league files; exit status 2 with one `error:` line
    for a bad argument or run, or files that cannot be written (checked before playing)."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.league",
        description="Round robin of a run's checkpoints and baseline players, rated by Elo; "
                    "writes league.csv/.md/.json/.png into the run directory.",
    )
    parser.add_argument("--run-dir", required=True,
                        help="training run directory, or an exported agent file")
    parser.add_argument("--out", metavar="DIR", help="where the league files go (default: "
                        "the run directory, or the agent file's directory)")
    parser.add_argument("--baselines", default="random",
                        help="comma-separated player specs, e.g. random,mcts:100,alphabeta:2 "
                             "(default: random)")
    parser.add_argument("--steps", help="checkpoint steps, e.g. 100,200 (default: all)")
    parser.add_argument("--games", type=int, default=40, help="games per pair (default 40)")
    parser.add_argument("--simulations", type=int,
                        help="search simulations of the checkpoints (default: the run's)")
    parser.add_argument("--kind", default="alphazero", choices=PLAYER_KINDS,
                        help="checkpoints as network + search or the network alone")
    parser.add_argument("--openings", type=int, default=DEFAULT_OPENING_PLIES, metavar="K",
                        help=f"random plies before the players take over "
                             f"(default {DEFAULT_OPENING_PLIES})")
    parser.add_argument("--anchor", default="random", help="player fixed at 0 Elo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sgf", metavar="DIR",
                        help="Go only: also save every game as DIR/<a>-vs-<b>/game-0001.sgf, "
                             "... (SGF, random opening moves included)")
    args = parser.parse_args(argv)
    check_seed(args.seed)
    show = lambda league: print(league.markdown(), flush=True)  # noqa: E731
    if Path(args.run_dir).is_file():
        out = Path(args.out) if args.out else Path(args.run_dir).parent
        league = _agent_league(args, out, show)
    else:
        if args.out:
            raise ValueError("--out is for an agent file's league; a run's league files "
                             "go into its run directory")
        out = Path(args.run_dir)
        league = run_league(RunDir.open(args.run_dir), split_specs(args.baselines),
                            _int_list(args.steps, "--steps"), args.games, args.simulations,
                            args.kind, args.openings, args.anchor, args.seed, progress=print,
                            show=show, sgf_dir=args.sgf)
    for name in FILES:
        print(f"wrote {out / name}")
    if args.sgf is not None:
        games = sum(m.num_games for m in league.matches)
        print(f"wrote {games} SGF files under {args.sgf}")
    return 0


def _agent_league(args, out: Path, show) -> League:
    """The league of the agent file `args.run_dir` (a player named by the file's stem)
    and the baselines, written into `out`; everything is checked before the first game."""
    if args.steps is not None:
        raise ValueError("--steps is for a run directory: an agent file has no steps")
    if args.games < 1 or args.openings < 0:
        raise ValueError("--games must be >= 1 and --openings >= 0")
    if args.simulations is not None and args.kind != "alphazero":
        raise ValueError("--simulations applies only to --kind alphazero")
    agent = load_agent(None, args.run_dir, args.simulations)
    env, name = agent.env, Path(args.run_dir).stem
    baselines = split_specs(args.baselines)
    names = [name, *baselines]
    if len(set(names)) != len(names):
        raise ValueError(f"player names must be unique, got {names}")
    if args.anchor not in names:
        raise ValueError(f"the anchor {args.anchor!r} is not among the players {names}; "
                         "add it to the baselines or pick another anchor")
    sgf_dir = None if args.sgf is None else sgf.check_sgf_dir(env, args.sgf)
    out.mkdir(parents=True, exist_ok=True)  # --out DIR may be new
    check_outputs(out)
    players = [agent.player(args.kind, name), *(make_player(s, env, s) for s in baselines)]
    searches = [(p.name, search_simulations(spec, p))
                for spec, p in zip([None, *baselines], players)]
    check_match_fits(env, args.games, sorted(searches, key=lambda s: -s[1])[:2])
    print(f"league of {len(players)} players on {env.name}: {', '.join(names)}; "
          f"{args.games} games per pair")
    matches = round_robin(env, players, jax.random.key(args.seed), args.games, args.openings,
                          print, sgf_dir)
    league = League(env.name, [Entrant(n, "baseline") for n in names], matches,
                    fit_league(names, matches, args.anchor))
    show(league)
    league.write(out)
    return league


if __name__ == "__main__":
    run_script(main)
