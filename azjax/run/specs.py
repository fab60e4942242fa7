"""The grammar of player specs: short strings that name a player on the command line.

    kind[:arg][,key=value ...]

`azjax.evaluation.player_specs.make_player` turns a spec into a player; this module only parses, so
configs can check their specs without loading anything.
"""

from __future__ import annotations

import dataclasses

KINDS = ("random", "solver", "mcts", "alphabeta", "gnugo", "network", "alphazero", "alphago")
RUN_KINDS = ("network", "alphazero", "alphago")
"""Kinds whose argument is a training run directory (or an exported agent file)."""


@dataclasses.dataclass(frozen=True)
class PlayerSpec:
    """A parsed player spec: `kind`, its `arg` (None when absent), its `key=value`
    options, and the spec's own text."""

    kind: str
    arg: str | None
    options: dict[str, str]
    text: str


def parse_spec(text: str) -> PlayerSpec:
    """Splits a spec string (ValueError naming the problem for a malformed one)."""
    head, *rest = [part.strip() for part in text.strip().split(",")]
    kind, _, arg = head.partition(":")
    if kind not in KINDS:
        raise ValueError(f"unknown player {text!r}: the kind must be one of {', '.join(KINDS)}")
    options = {}
    for part in rest:
        key, eq, value = part.partition("=")
        if not eq or not key or not value:
            raise ValueError(f"player {text!r}: expected key=value after the comma, got {part!r}")
        if key in options:
            raise ValueError(f"player {text!r}: option {key!r} given twice")
        options[key] = value
    if kind in RUN_KINDS + ("mcts", "alphabeta", "gnugo") and not arg:
        raise ValueError(f"player {text!r}: '{kind}' needs an argument ('{kind}:...')")
    if kind == "gnugo" and not (arg.isascii() and arg.isdigit() and 0 <= int(arg) <= 10):
        raise ValueError(f"player {text!r}: GNU Go's level must be an integer from 0 to 10 "
                         f"('gnugo:LEVEL'), got {arg!r}")
    if kind in ("random", "solver") and arg:
        raise ValueError(f"player {text!r}: '{kind}' takes no argument")
    return PlayerSpec(kind, arg or None, options, text.strip())


def split_specs(text: str) -> list[str]:
    """Splits a comma-separated list of player specs, keeping `key=value` options (which
    follow a comma) with the spec before them: 'mcts:100,c=2,random' -> 2 specs."""
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "=" in part and specs:
            specs[-1] += "," + part
        else:
            specs.append(part)
    return specs
