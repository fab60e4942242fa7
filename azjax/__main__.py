"""`azjax COMMAND [options]` (also `python -m azjax COMMAND`): every command of azjax.

    azjax train tictactoe                  # train (resumes runs/tictactoe)
    azjax sweep tictactoe --param policy=puct,gumbel --seeds 3
    azjax arena alphazero:runs/tictactoe random --games 100
    azjax info connect_four                # an agent's game, network, search, provenance
    azjax COMMAND --help                   # each command's options

Every command's code is a module of `azjax.commands` (`COMMANDS`; `check` is
`envs.check`), also run as `python -m azjax.commands.<module>`. Arena, league, play,
serve, export, gtp and gtp_referee are also `python -m azjax.<command>` (entry points at
the top of the package, nothing more); train and sweep are also `python
experiments/train.py` and `experiments/sweep.py`. Each keeps its own exit statuses.
"""

from __future__ import annotations

import importlib
import sys

from azjax.commands.errors import EXIT_ERROR, run_script

COMMANDS = {
    "train": ("azjax.commands.train", "train an agent on a game, resuming its run"),
    "sweep": ("azjax.commands.sweep", "an ablation sweep: a grid of settings x seeds"),
    "arena": ("azjax.commands.arena", "games between two players, with confidence intervals"),
    "league": ("azjax.commands.league", "a round robin over a run's checkpoints and baselines"),
    "play": ("azjax.commands.play", "play a trained agent in the terminal"),
    "serve": ("azjax.commands.serve", "play a trained agent in the browser"),
    "export": ("azjax.commands.export", "export a run's agent to one file"),
    "info": ("azjax.commands.info", "what an agent is and where it came from"),
    "gtp": ("azjax.commands.gtp", "a trained Go agent as a GTP engine (Sabaki, GoGui, ...)"),
    "gtp-referee": ("azjax.commands.gtp_referee", "games between two GTP engines, refereed"),
    "check": ("envs.check", "check a game of your own against the Env protocol"),
}
"""Each command's module (whose `main(argv)` runs it) and its one-line summary."""


def usage() -> str:
    """The text of `azjax --help`."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    return ("usage: azjax COMMAND [options]   (azjax COMMAND --help for its options)\n\n"
            "commands:\n" + "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Runs the command the command line names.

    Args:
      argv: the command line after `azjax` (default: this process's).

    Returns:
      The command's exit status; `EXIT_ERROR` (2) for a missing or unknown command.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), end="")
        return 0 if argv else EXIT_ERROR
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(usage(), end="", file=sys.stderr)
        print(f"error: unknown command {name!r}; commands: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return EXIT_ERROR
    # Only the command chosen is imported (serve, play, gtp and the rest load what they need).
    module = importlib.import_module(COMMANDS[name][0])
    sys.argv = [f"azjax {name}", *rest]
    return module.main(rest)


def entry_point() -> None:
    """The `azjax` console script: `main` run as every command's script is
    (`run_script`)."""
    run_script(main)


if __name__ == "__main__":
    entry_point()
