"""The trained agents that ship inside the package, playable without training: their
names, what made each, how strong each measured, and each name's agent file.

    azjax serve --agent tictactoe
    azjax play --agent connect_four
    azjax gtp --agent go7x7
    azjax arena alphazero:go7x7 gnugo:1 --games 100

A shipped agent's name goes wherever an agent file does (`Agent.load("go7x7")`,
`--agent NAME`, the player spec `alphazero:NAME`): `resolve` turns it into the file's
path, and a path that exists wins over a name. The files are `azjax/agents/*.azjax`
(package data, so a wheel holds them), each exported by `azjax export` from a run of
the game's recipe; docs/results.md ("Shipped agents") has the measurements and the
commands that made them. `azjax/agents/SHA256SUMS` records each file's SHA-256 (as
`sha256sum *.azjax` writes it, so `sha256sum -c SHA256SUMS` checks them too), and
`shipped_path` refuses a file that does not match: what loads by a name is the file
that was measured. Each file records its provenance (`Agent.provenance`, `azjax info
NAME`): the code, command and budget that trained it, written in from docs/results.md
and the git history since the run directories were not kept.
"""

from __future__ import annotations

import dataclasses
import os
from importlib import resources
from pathlib import Path

from azjax.run.files import sha256_digest

FOLDER = "agents"
"""The folder of the package (`azjax/agents/`) that holds the files."""

MANIFEST = "SHA256SUMS"
"""The file of that folder that records each shipped file's SHA-256."""


@dataclasses.dataclass(frozen=True)
class ShippedAgent:
    """One agent that ships with azjax.

    Attributes:
      name: what `Agent.load` and `--agent` take.
      game: the game it plays, as `azjax train` names it.
      made_by: the commands that trained and exported it, and the budget they had.
      strength: its measured strength in one line (docs/results.md, "Shipped agents",
        has the commands, the date and the intervals).
    """

    name: str
    game: str
    made_by: str
    strength: str

    @property
    def file(self) -> str:
        """The file's name in `azjax/agents/`."""
        return f"{self.name}.azjax"


SHIPPED: dict[str, ShippedAgent] = {agent.name: agent for agent in (
    ShippedAgent(
        "tictactoe", "tictactoe",
        "azjax train tictactoe: stopped at perfect play, iteration 22, 6,619 games, 25 s on "
        "a 2-core CPU; azjax export",
        "perfect: the network alone picks an optimal move in all 4,520 live positions and "
        "loses from neither seat; 1,000 games against the solver, all drawn"),
    ShippedAgent(
        "connect_four", "connect_four",
        "azjax train connect_four --max-minutes 45: 198 iterations, 15,741 games, sharing "
        "a 2-core CPU with the go7x7 run; azjax export",
        "optimal moves on the 1,000 solved positions: 72.4% network alone, 86.6% with its "
        "32-simulation search; 56.5% against alphabeta:4 and 97.0% against mcts:100 "
        "(100 games each)"),
    ShippedAgent(
        "go7x7", "go (size 7, komi 9)",
        "azjax train go7x7 --max-minutes 45, resumed with --max-minutes 75: 1,201 "
        "iterations, 19,013 games, on a 2-core CPU shared with other jobs; azjax export",
        "66.5% against gnugo:1 and 60.5% against gnugo:10 (100 games each, 2 random "
        "opening plies; mean margins -9.6 and -13.8 points)"),
)}
"""Every shipped agent, by name."""


def names() -> tuple[str, ...]:
    """The shipped agents' names.

    Returns:
      The names, in the order of `SHIPPED`.
    """
    return tuple(SHIPPED)


def listed() -> str:
    """The shipped agents' names for a message or a command's help.

    Returns:
      e.g. `tictactoe, connect_four, go7x7`.
    """
    return ", ".join(SHIPPED)


AGENT_HELP = f"an agent file (azjax export) or a shipped agent: {listed()}"
"""The help of the commands' `--agent` option."""


def checksums() -> dict[str, str]:
    """The SHA-256 of each shipped file, as the package's manifest records it.

    Returns:
      {file name: hex digest}, read from `azjax/agents/SHA256SUMS`.
    """
    text = (resources.files("azjax") / FOLDER / MANIFEST).read_text()
    recorded = {}
    for line in text.splitlines():
        digest, _, name = line.partition(" ")
        recorded[name.strip().lstrip("*")] = digest  # sha256sum marks binary mode with *
    return recorded


def shipped_path(name: str) -> Path:
    """The agent file of a shipped agent, checked against the package's manifest.

    Args:
      name: a shipped agent's name (`names()`).

    Returns:
      The file's path inside the installed package.

    Raises:
      ValueError: one line naming the shipped agents, for any other name; one line
        saying the file is missing or not the one the package records (a damaged or
        changed install).
    """
    if name not in SHIPPED:
        raise ValueError(f"no shipped agent is called {name!r}; the shipped agents are "
                         f"{listed()}")
    path = Path(os.fspath(resources.files("azjax") / FOLDER / SHIPPED[name].file))
    try:
        matches = sha256_digest(path) == checksums().get(path.name)
    except OSError as err:
        raise ValueError(f"the shipped agent {name!r} cannot be read ({err.strerror}: "
                         f"{err.filename}); reinstall azjax") from None
    if not matches:
        raise ValueError(f"the shipped agent file {str(path)!r} is not the one azjax "
                         f"records ({FOLDER}/{MANIFEST}): it was damaged or changed; "
                         "reinstall azjax")
    return path


def resolve(path: str | os.PathLike) -> Path:
    """What an agent argument names: the path itself when it exists (a run directory or
    an agent file), else the shipped agent of that name, else the path unchanged (for
    the caller's own "does not exist" error).

    Args:
      path: a run directory, an agent file or a shipped agent's name.

    Returns:
      The path to load.
    """
    path = Path(path)
    if not path.exists() and str(path) in SHIPPED:
        return shipped_path(str(path))
    return path
