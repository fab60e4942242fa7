"""`azjax COMMAND [options]` (also `python -m azjax COMMAND`): every command of azjax.

    azjax train tictactoe                  # train (resumes runs/tictactoe)
    azjax sweep tictactoe --param policy=puct,gumbel --seeds 3
    azjax arena alphazero:runs/tictactoe random --games 100
    azjax COMMAND --help                   # each command's options

Each command is also `python -m azjax.<command>` (`azjax.commands.<command>` for train and
sweep) and keeps its own exit statuses.
"""

from __future__ import annotations

import gc
import importlib
import sys

COMMANDS = {
    "train": ("azjax.commands.train", "train an agent on a game, resuming its run"),
    "sweep": ("azjax.commands.sweep", "an ablation sweep: a grid of settings x seeds"),
    "arena": ("azjax.arena", "games between two players, with confidence intervals"),
    "league": ("azjax.league", "a round robin over a run's checkpoints and baselines"),
    "play": ("azjax.play", "play a trained agent in the terminal"),
    "serve": ("azjax.serve", "play a trained agent in the browser"),
    "export": ("azjax.export", "export a run's agent to one file"),
    "gtp": ("azjax.gtp", "a trained Go agent as a GTP engine (Sabaki, GoGui, ...)"),
    "gtp-referee": ("azjax.gtp_referee", "games between two GTP engines, refereed"),
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
      The command's exit status; 2 for a missing or unknown command.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), end="")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(usage(), end="", file=sys.stderr)
        print(f"error: unknown command {name!r}; commands: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    # Only the command chosen is imported (serve, play, gtp and the rest load what they need).
    module = importlib.import_module(COMMANDS[name][0])
    sys.argv = [f"azjax {name}", *rest]
    return module.main(rest)


def entry_point() -> None:
    """The `azjax` console script. The objects the imports made are frozen (`gc.freeze`)
    once the command is done, so that the collector never walks JAX's modules at exit."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry_point()
