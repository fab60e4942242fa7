"""Player kinds and the grammar of player specs: short strings that name a player on the
command line, in configs and in the league.

    kind[:arg][,key=value ...]

A player kind (`random`, `mcts`, `gnugo`, `alphazero`, ...) is a `PlayerKind`: its name,
how to read its argument and options, its help line and how to build the player. Each is
defined and registered (`register_player`) by one module, in the layer its player needs
(`azjax.evaluation.baselines`, `azjax.go.gnugo_kind`, ...); the registry lives here, low
in the layers, so that `parse_spec` checks a spec completely (unknown kind, bad argument
or option: one-line ValueError) without building anything, e.g. for
`RunConfig.validate`. `azjax.evaluation.player_specs` imports every kind azjax ships
(so they are registered whenever `azjax` is imported) and builds players
(`make_player`).

Adding a baseline is one file: its player, its `PlayerKind` and a `register_player` call
(see docs/evaluation.md).

A host player that cannot give a move raises `PlayerFailed` (GNU Go's `GnuGoFailed` is
one); `azjax.evaluation.match.play_match` adds the game's number to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from azjax.core.players import Player
from envs import Env

RUN_KINDS = ("network", "alphazero", "alphago")
"""Kinds whose argument is a training run directory (or an exported agent file)."""

Reader = Callable[[str], Any]
"""Reads an argument or option value from its text: the value, or a ValueError whose
message is the reason alone (`c must be a number, got 'x'`); the spec's text is added."""


class PlayerFailed(ValueError):
    """A player could not give a move (a program it drives died, stayed silent or
    answered what is not a legal move): one line naming the player, the game (once the
    match that plays it adds it, `in_game`) and move, and why.

    Attributes:
      player: the player's name.
      move: the game's move number (from 1) it failed at.
      why: what went wrong.
      batch_index: where the failed game is in the batch the player was given.
      game: the match's game number (from 1), or None.
    """

    def __init__(self, player: str, move: int, why: str, batch_index: int = 0,
                 game: int | None = None):
        self.player, self.move, self.why = player, move, why
        self.batch_index, self.game = batch_index, game
        where = f"in game {game} at move {move}" if game is not None else f"at move {move}"
        super().__init__(f"{player} failed {where}: {why}")

    def in_game(self, game: int) -> PlayerFailed:
        """The same failure (of the same class) naming `game`, the match's game number.

        Args:
          game: the game's number in the match, from 1.

        Returns:
          A new exception of this one's class.
        """
        return type(self)(self.player, self.move, self.why, self.batch_index, game)


@dataclasses.dataclass(frozen=True)
class PlayerSpec:
    """A parsed player spec.

    Attributes:
      kind: the player kind's name.
      arg: the argument's text (None when absent).
      options: the `key=value` options' texts.
      text: the spec's own text.
      value: the argument as the kind reads it (None when absent).
      values: the options given, as the kind reads them (defaults are the builder's).
    """

    kind: str
    arg: str | None
    options: dict[str, str]
    text: str
    value: Any = None
    values: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, eq=False)
class PlayerKind:
    """One kind of player: its name in specs, their grammar, its help and its builder.

    Attributes:
      name: the spec's kind (`mcts` in `mcts:100,c=2`).
      usage: the spec's form for the help, e.g. `mcts:N[,c=C]`.
      help: one line saying what the player is.
      build: `build(spec, env, name) -> Player` from a parsed spec (ValueError for an
        env or argument it cannot play with).
      arg: reads the argument after the colon, which the kind then needs; None: the kind
        takes no argument.
      options: the options it takes, each with its reader.
      check: `check(spec)`, ValueError for options that do not go together or a needed
        one left out (after each was read).
      simulations: `simulations(spec)`, the simulations per move of a searching kind (for
        the arena's and league's memory check); None: it does not search.
    """

    name: str
    usage: str
    help: str
    build: Callable[[PlayerSpec, Env, str], Player]
    arg: Reader | None = None
    options: Mapping[str, Reader] = dataclasses.field(default_factory=dict)
    check: Callable[[PlayerSpec], None] | None = None
    simulations: Callable[[PlayerSpec], int] | None = None


_KINDS: dict[str, PlayerKind] = {}


def register_player(kind: PlayerKind) -> PlayerKind:
    """Makes `kind` known to `parse_spec` and `make_player`.

    Args:
      kind: the kind; its name must be new (or this same kind registered again).

    Returns:
      `kind`.

    Raises:
      ValueError: for a name already taken by another kind, or one that a spec cannot
        spell (empty, or with ':', ',', '=' or spaces).
    """
    if not kind.name or any(c in kind.name for c in ":,= \t"):
        raise ValueError(f"a player kind's name cannot be {kind.name!r}")
    if _KINDS.get(kind.name, kind) is not kind:
        raise ValueError(f"player kind {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister_player(name: str) -> None:
    """Forgets the kind named `name` (a test's own, say); nothing if there is none.

    Args:
      name: the kind's name.
    """
    _KINDS.pop(name, None)


def kinds() -> tuple[str, ...]:
    """The registered kinds' names, sorted.

    Returns:
      The names.
    """
    return tuple(sorted(_KINDS))


def player_kind(name: str) -> PlayerKind:
    """The registered kind named `name`.

    Args:
      name: the kind's name.

    Returns:
      The `PlayerKind`.

    Raises:
      KeyError: when no kind has that name.
    """
    return _KINDS[name]


def _in_spec(text: str, read: Callable[[Any], Any], raw: Any) -> Any:
    """`read(raw)`, its ValueError's reason prefixed with the spec."""
    try:
        return read(raw)
    except ValueError as err:
        raise ValueError(f"player {text!r}: {err}") from None


def parse_spec(text: str) -> PlayerSpec:
    """Splits and checks a spec string against its registered kind.

    Args:
      text: e.g. `mcts:100,c=2`.

    Returns:
      The `PlayerSpec`, its argument and options read by the kind's readers.

    Raises:
      ValueError: one line naming the problem: an unknown kind, a missing or unwanted
        argument, an option that is not `key=value`, given twice, unknown to the kind or
        with a bad value.
    """
    head, *rest = [part.strip() for part in text.strip().split(",")]
    name, _, arg = head.partition(":")
    text = text.strip()
    if name not in _KINDS:
        raise ValueError(f"unknown player {text!r}: the kind must be one of "
                         f"{', '.join(kinds())}")
    kind = _KINDS[name]
    options = {}
    for part in rest:
        key, eq, value = part.partition("=")
        if not eq or not key or not value:
            raise ValueError(f"player {text!r}: expected key=value after the comma, got {part!r}")
        if key in options:
            raise ValueError(f"player {text!r}: option {key!r} given twice")
        options[key] = value
    if kind.arg is not None and not arg:
        raise ValueError(f"player {text!r}: '{name}' needs an argument ('{name}:...')")
    if kind.arg is None and arg:
        raise ValueError(f"player {text!r}: '{name}' takes no argument")
    unknown = sorted(set(options) - set(kind.options))
    if unknown:
        raise ValueError(f"player {text!r}: unknown option(s) {unknown}; '{name}' takes "
                         f"{list(kind.options) or 'none'}")
    value = None if kind.arg is None else _in_spec(text, kind.arg, arg)
    values = {key: _in_spec(text, kind.options[key], raw) for key, raw in options.items()}
    spec = PlayerSpec(name, arg or None, options, text, value, values)
    if kind.check is not None:
        _in_spec(text, kind.check, spec)
    return spec


def split_specs(text: str) -> list[str]:
    """Splits a comma-separated list of player specs, keeping `key=value` options (which
    follow a comma) with the spec before them: 'mcts:100,c=2,random' -> 2 specs.

    Args:
      text: the list.

    Returns:
      The specs' texts.
    """
    specs: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "=" in part and specs:
            specs[-1] += "," + part
        else:
            specs.append(part)
    return specs


def players_help() -> str:
    """The registered kinds as a Markdown table (spec form and help line), sorted by
    name, for command-line help and docs.

    Returns:
      The table's lines, the grammar first.
    """
    def cell(text: str) -> str:  # a '|' of the text would end the table's cell
        return text.replace("|", "\\|")

    rows = [f"| `{cell(kind.usage)}` | {cell(kind.help)} |" for kind in map(_KINDS.get, kinds())]
    return "\n".join(["Grammar: `kind[:arg][,key=value ...]`:", "", "| spec | player |",
                      "| --- | --- |", *rows])


# Readers for the kinds' arguments and options.

def number(what: str, cast: Callable[[str], Any] = float) -> Reader:
    """A reader of a number.

    Args:
      what: the value's name in the error (`c`, `the depth`).
      cast: `int` or `float`.

    Returns:
      The reader: `cast(text)`, or ValueError `{what} must be a number, got '...'`.
    """

    def read(text: str) -> Any:
        try:
            return cast(text)
        except ValueError:
            raise ValueError(f"{what} must be a number, got {text!r}") from None

    return read


def choice(what: str, values: Mapping[str, Any], said: str | None = None) -> Reader:
    """A reader of one of a few words (any case).

    Args:
      what: the option's name in the error.
      values: each word (lower case) and the value it reads as.
      said: how the error lists the words (default `a or b`).

    Returns:
      The reader: `values[text.lower()]`, or ValueError `{what} must be {said}, got '...'`.
    """

    def read(text: str) -> Any:
        if text.lower() not in values:
            raise ValueError(f"{what} must be {said or ' or '.join(values)}, got "
                             f"{text.lower()!r}")
        return values[text.lower()]

    return read
