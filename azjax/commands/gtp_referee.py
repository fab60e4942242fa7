"""The referee command: games between two GTP engines, every move checked with azjax's Go
rules and scored by Tromp-Taylor area (the rules of a game are in `azjax.go.referee`).

    python -m azjax.gtp_referee --black "python -m azjax.gtp --agent go9.azjax" \\
        --white "gnugo --mode gtp --level 0 --chinese-rules --capture-all-dead" \\
        --games 10 --alternate --sgf games/ --json result.json

Engine A is `--black`, engine B `--white`; with `--alternate` they swap colours every
other game. Exit status 0 when every game was played, 2 (one `error:` line) for bad
arguments or an engine that cannot start or be restarted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from azjax.commands.errors import one_line_errors, run_script
from azjax.go.referee import referee, summary_lines
from azjax.run.files import check_output_dir, check_output_path, write_atomic


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.gtp_referee",
        description="Play games between two GTP engines, checking every move with azjax's "
        "Go rules and scoring by Tromp-Taylor area.")
    parser.add_argument("--black", required=True, metavar="CMD",
                        help="engine A's command line (black in the first game)")
    parser.add_argument("--white", required=True, metavar="CMD",
                        help="engine B's command line (white in the first game)")
    parser.add_argument("--games", type=int, default=1)
    parser.add_argument("--size", type=int, default=9)
    parser.add_argument("--komi", type=float, default=7.5)
    parser.add_argument("--max-moves", type=int, metavar="M",
                        help="plies after which a game is stopped and scored "
                        "(default 4 * size * size)")
    parser.add_argument("--alternate", action="store_true",
                        help="swap the engines' colours every other game")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for one reply of an engine")
    parser.add_argument("--sgf", metavar="DIR", help="write each game as DIR/game-NNN.sgf")
    parser.add_argument("--json", metavar="FILE", help="write the games and summary as JSON")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout:g}")
    out = check_output_path(args.json, "--json") if args.json is not None else None
    sgf_dir = check_output_dir(args.sgf, "--sgf") if args.sgf is not None else None
    if sgf_dir is not None:
        sgf_dir.mkdir(parents=True, exist_ok=True)
    records, summary = referee(args.black, args.white, args.games, args.size, args.komi,
                               args.max_moves, args.alternate, sgf_dir, args.timeout)
    for line in summary_lines(summary):
        print(line)
    if out is not None:
        data = {"summary": summary, "games": [dataclasses.asdict(r) for r in records]}
        write_atomic(out, json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run_script(main)
