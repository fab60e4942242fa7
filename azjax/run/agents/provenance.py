"""Where an agent came from: the azjax version and git commit of the code that trained
it, the command that trained it, its game and preset, its budget (iterations, self-play
games and positions, wall time) and the date it was exported.

An agent file carries a `Provenance` as JSON beside its config (`azjax.run.agents.agent_file`);
`Agent.provenance` holds it and `azjax info AGENT` prints it (`lines`). A fact nobody
recorded is None, shown as "not recorded": every fact of a file written before azjax
recorded provenance, and the CPU time of any run (metrics.jsonl records wall time only).
What a fact rests on is said in `notes`: the records the training processes wrote
(provenance.jsonl), or for a run from before them a command rebuilt from its config and a
commit that is the exporting checkout's; facts written in from the docs.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

NOT_RECORDED = "not recorded"
"""How a fact that was not recorded is shown."""

_TYPES: dict[str, tuple[type, ...]] = {
    "azjax_version": (str,), "commit": (str,), "command": (str,), "game": (str,),
    "preset": (str,), "iterations": (int,), "games": (int,), "positions": (int,),
    "wall_minutes": (int, float), "exported": (str,),
}
"""The JSON types of each fact besides `notes` (None is always allowed)."""


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where an agent came from, as far as it was recorded (None: not recorded).

    Attributes:
      azjax_version: the azjax version of the code that trained it, e.g. '0.1.0'.
      commit: the git commit of that code: a full hash, one followed by ' with
        uncommitted changes', a bound in words where only one is known ('... at or
        before <hash>'), or 'unknown' where the code was not a git checkout. Of a run
        trained at several commits, each with the iteration its code started from:
        '<hash> (from iteration 0); <hash> (from iteration 40)' (the version likewise).
      command: the command that trained it (`azjax train GAME ...`); of a run resumed,
        each process's with the iteration it started from, as the commit.
      game: the game, with its options ('go (size=7, komi=9.0)').
      preset: the recipe's variant it trained with ('cpu' or 'gpu'; '' for a game of no
        recipe).
      iterations: training iterations of the exported checkpoint.
      games: self-play games played up to it.
      positions: self-play positions played up to it.
      wall_minutes: minutes of training wall time up to it (resumes add up).
      exported: the date the agent file was written (ISO, UTC).
      notes: what the facts rest on, and anything else a reader needs to weigh them.
    """

    azjax_version: str | None = None
    commit: str | None = None
    command: str | None = None
    game: str | None = None
    preset: str | None = None
    iterations: int | None = None
    games: int | None = None
    positions: int | None = None
    wall_minutes: float | None = None
    exported: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def recorded(self) -> bool:
        """Whether anything at all was recorded (False for a file from before provenance)."""
        return self != Provenance()

    def to_json(self) -> str:
        """The provenance as the JSON an agent file stores.

        Returns:
          A JSON object with every field (None as null, `notes` as a list).
        """
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Provenance":
        """The provenance an agent file stores.

        Args:
          text: a JSON object as `to_json` writes it. Fields this azjax does not know
            (recorded by a newer one) are left out; fields missing are not recorded.

        Returns:
          The provenance.

        Raises:
          ValueError: for text that is not a JSON object, or a fact of the wrong type.
        """
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            data = None
        if not isinstance(data, dict):
            raise ValueError("its provenance is not a JSON object")
        facts: dict[str, Any] = {}
        for name, kinds in _TYPES.items():
            value = data.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, kinds)):
                raise ValueError(f"its provenance's {name} is {value!r}, not a "
                                 f"{' or '.join(k.__name__ for k in kinds)}")
            facts[name] = value
        notes = data.get("notes") or []
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise ValueError("its provenance's notes are not a list of strings")
        return cls(**facts, notes=tuple(notes))

    def lines(self) -> list[str]:
        """The provenance for a person to read, one fact a line (`azjax info`).

        Returns:
          'name: value' lines, "not recorded" for a fact nobody recorded, a 'note:' line
          per note; the one line 'provenance: not recorded' where nothing was.
        """
        if not self.recorded:
            return [f"provenance: {NOT_RECORDED}"]
        facts = [
            ("azjax version", self.azjax_version), ("commit", self.commit),
            ("command", self.command), ("game", self.game), ("preset", self.preset),
            ("iterations", _count(self.iterations)),
            ("self-play games", _count(self.games)),
            ("positions", _count(self.positions)),
            ("wall time", None if self.wall_minutes is None else minutes_text(self.wall_minutes)),
            ("exported", self.exported),
        ]
        out = [f"{name}: {NOT_RECORDED if value is None else value}" for name, value in facts]
        return out + [f"note: {note}" for note in self.notes]


def _count(value: int | None) -> str | None:
    return None if value is None else f"{value:,}"


def minutes_text(minutes: float) -> str:
    """A wall time as a person reads it.

    Args:
      minutes: the time in minutes.

    Returns:
      Seconds under a minute ('25 s'), else minutes with one decimal where it has one
      ('45 min', '12.5 min').
    """
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    return f"{minutes:,.1f}".removesuffix(".0") + " min"
