"""The words of GTP version 2 that engines and referees share: colours, scores, the
package's name and version, and the failure a command answers with `? message`."""

from __future__ import annotations

import math
from importlib import metadata

from envs.go_board import BLACK, WHITE

PROTOCOL_VERSION = "2"


NAME = "azjax"


def package_version() -> str:
    """The installed azjax package's version, for GTP's `version` command.

    Returns:
      The version, or "unknown" when azjax is not installed as a package.
    """
    try:
        return metadata.version("azjax")
    except metadata.PackageNotFoundError:
        return "unknown"


class GtpFailure(Exception):
    """A command that fails: the engine answers `? <message>`."""


def parse_colour(text: str) -> int:
    """GTP colour ('b', 'w', 'black', 'white', any case) as BLACK or WHITE.

    Args:
      text: the colour word.

    Returns:
      `BLACK` (0) or `WHITE` (1).

    Raises:
      GtpFailure: `text` names no colour.
    """
    colour = {"b": BLACK, "black": BLACK, "w": WHITE, "white": WHITE}.get(text.lower())
    if colour is None:
        raise GtpFailure(f"syntax error: invalid color {text!r}")
    return colour


def colour_name(colour: int) -> str:
    """GTP's name of a colour.

    Args:
      colour: `BLACK` (0) or `WHITE` (1).

    Returns:
      "black" or "white".
    """
    return "black" if colour == BLACK else "white"


def parse_score(text: str) -> float:
    """GTP's `B+3.5`, `W+0.5`, `0` (also `B+R`: +inf) as a Black-minus-White margin
    (ValueError for anything else).

    Args:
      text: the score as GTP's `final_score` writes it.

    Returns:
      The margin, positive when Black wins; +-inf for a resignation.

    Raises:
      ValueError: `text` is not a score.
    """
    t = text.strip().upper()
    if t in ("0", "DRAW", "JIGO"):
        return 0.0
    if len(t) >= 3 and t[0] in "BW" and t[1] == "+":
        rest = t[2:]
        value = math.inf if rest in ("R", "RESIGN") else float(rest)
        if not math.isfinite(value) and rest not in ("R", "RESIGN"):
            raise ValueError(f"not a score: {text!r}")
        return value if t[0] == "B" else -value
    raise ValueError(f"not a score: {text!r}")


def command_words(line: str) -> tuple[str, list[str]] | None:
    """An engine's input line as its id ('' if none) and its words (control characters
    and the comment after '#' dropped, tabs as spaces); None for a line GTP ignores.

    Args:
      line: one line of the engine's input.

    Returns:
      `(ident, words)`: the command id and the command's words (its name first), or None.
    """
    line = "".join(c if c >= " " or c in "\t\n" else "" for c in line.replace("\x7f", ""))
    words = line.split("#", 1)[0].replace("\t", " ").split()
    if not words:
        return None
    ident = words.pop(0) if words[0].isascii() and words[0].isdigit() else ""
    return ident, words


def success(ident: str, text: str) -> str:
    """The reply `=id text` to a command that succeeded, ending in a blank line (a blank
    line inside `text` would end it early, so those are dropped).

    Args:
      ident: the command's id ('' if none).
      text: the reply's text, possibly several lines.

    Returns:
      The whole reply, ready to write.
    """
    if "\n" in text:
        first, *rest = text.split("\n")
        text = "\n".join([first, *(part for part in rest if part.strip())])
    return f"={ident} {text}\n\n" if text else f"={ident}\n\n"
