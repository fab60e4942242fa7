"""The league command: a round robin over a run's checkpoints and baseline players, rated
by Elo; the league itself is `azjax.evaluation.league`.

    python -m azjax.league --run-dir runs/tictactoe --baselines random,mcts:100 --games 40

It prints the table, then writes `league.csv`, `league.md`, `league.json` and
`league.png` into the run directory (and, for Go with `--sgf DIR`, every game as SGF).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from azjax.cli import one_line_errors, run_script
from azjax.evaluation.league import DEFAULT_OPENING_PLIES, FILES, PLAYER_KINDS, run_league
from azjax.run.config import check_seed
from azjax.run.specs import split_specs


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
    parser.add_argument("--run-dir", required=True, help="training run directory")
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
    league = run_league(args.run_dir, split_specs(args.baselines),
                        _int_list(args.steps, "--steps"), args.games, args.simulations,
                        args.kind, args.openings, args.anchor, args.seed, progress=print,
                        show=lambda league: print(league.markdown(), flush=True),
                        sgf_dir=args.sgf)
    for name in FILES:
        print(f"wrote {Path(args.run_dir) / name}")
    if args.sgf is not None:
        games = sum(m.num_games for m in league.matches)
        print(f"wrote {games} SGF files under {args.sgf}")
    return 0


if __name__ == "__main__":
    run_script(main)
