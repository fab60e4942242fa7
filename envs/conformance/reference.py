"""The "reference" property of `envs.check_env`: the random games replayed, move by move,
in an independent implementation of the same rules, which must agree at every ply.

A reference speaks the state API of OpenSpiel (so an OpenSpiel game serves as one as it
is, where its action ids are the game's): `reference.new_initial_state()` gives a state
with `current_player()`, `legal_actions()`, `apply_action(a)`, `is_terminal()` and
`returns()` (player 0's and player 1's rewards of a finished game). A plain-Python
reference of a few dozen lines is enough (`examples/hex_reference.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.conformance.games import Games
from envs.conformance.rules import EnvCheckError, format_moves

_METHODS = ("current_player", "legal_actions", "apply_action", "is_terminal", "returns")


class _Mismatch(Exception):
    def __init__(self, ply: int, text: str, moves: int):
        super().__init__(text)
        self.ply, self.text, self.moves = ply, text, moves


def check_reference_api(reference: Any) -> None:
    """Raises ValueError unless `reference` has `new_initial_state()` giving a state with
    the methods the check calls.

    Args:
      reference: the object given as `check_env(reference=...)`.

    Raises:
      ValueError: it lacks `new_initial_state()` or its state lacks a method.
    """
    if not callable(getattr(reference, "new_initial_state", None)):
        raise ValueError(f"reference {reference!r} has no new_initial_state() (a reference "
                         "speaks OpenSpiel's state API: see envs.conformance.reference)")
    state = reference.new_initial_state()
    missing = [m for m in _METHODS if not callable(getattr(state, m, None))]
    if missing:
        raise ValueError(f"the states of reference {reference!r} lack {', '.join(missing)}() "
                         "(see envs.conformance.reference)")


def _ids(actions: Any) -> list[int]:
    return sorted(int(a) for a in actions)


def _replay(g: Games, reference: Any, game: int) -> int:
    """Plays game `game` in the reference; raises _Mismatch; returns the plies compared."""
    rec = g.rec
    state = reference.new_initial_state()
    for t in range(rec["live"].shape[0]):
        if not rec["live"][t, game]:
            return t
        if state.is_terminal():
            raise _Mismatch(t, f"after {t} plies the reference's game is over (returns "
                               f"{list(state.returns())}) but the env's is not", t)
        player = int(state.current_player())
        if player != int(rec["player"][t, game]):
            raise _Mismatch(t, f"after {t} plies the reference has player {player} to move, "
                               f"the env player {int(rec['player'][t, game])}", t)
        ours = np.flatnonzero(rec["mask"][t, game]).tolist()
        theirs = _ids(state.legal_actions())
        if ours != theirs:
            only_ours = sorted(set(ours) - set(theirs))
            only_theirs = sorted(set(theirs) - set(ours))
            raise _Mismatch(t, f"after {t} plies the legal moves differ: the env alone allows "
                               f"{_named(g.env, only_ours)}, the reference alone "
                               f"{_named(g.env, only_theirs)}", t)
        move = int(rec["move"][t, game])
        state.apply_action(move)
        if rec["ended"][t, game]:
            ours_r = [float(x) for x in rec["rewards"][t, game]]
            if not state.is_terminal():
                raise _Mismatch(t, f"the env ends the game with ply {t + 1} (rewards {ours_r}) "
                                   "but the reference goes on", t + 1)
            theirs_r = [float(x) for x in state.returns()]
            if ours_r != theirs_r:
                raise _Mismatch(t, f"the game ends with ply {t + 1}; the env's rewards are "
                                   f"{ours_r}, the reference's {theirs_r}", t + 1)
        elif state.is_terminal():
            raise _Mismatch(t, f"the reference ends the game with ply {t + 1} (returns "
                               f"{list(state.returns())}) but the env goes on", t + 1)
    return rec["live"].shape[0]


def _named(env, actions: list[int]) -> str:
    if not actions:
        return "nothing more"
    return ", ".join(f"{text} ({a})" for text, a in zip(format_moves(env, actions), actions))


def check_reference(g: Games, reference: Any) -> int:
    """Replays every recorded game in `reference`; raises EnvCheckError ("reference") for
    the shortest game on which they disagree; returns the plies compared.

    Args:
      g: the recorded random games (played with `masks=True`).
      reference: an OpenSpiel-style implementation of the same rules.

    Returns:
      The number of plies compared, over all games.

    Raises:
      EnvCheckError: the env and the reference disagree, or the reference raised.
    """
    worst: _Mismatch | None = None
    where = 0
    plies = 0
    for game in range(g.num_games):
        try:
            plies += _replay(g, reference, game)
        except _Mismatch as found:
            if worst is None or found.ply < worst.ply:
                worst, where = found, game
        except Exception as err:  # noqa: BLE001 - the reference's own failure, in one line
            raise EnvCheckError("reference", f"the reference raised {type(err).__name__}: "
                                             f"{err} replaying game {game}") from err
    if worst is not None:
        actions = g.rec["move"][:worst.moves, where].tolist()
        raise EnvCheckError("reference", worst.text, actions, env=g.env, seed=g.seed,
                            num_games=g.num_games, game=where, ply=worst.ply)
    return plies
