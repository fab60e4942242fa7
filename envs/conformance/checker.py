"""Does a game keep the protocol of `envs.core`? `check_env(env)` plays random games and
checks, for every step, the rules that every game must follow (see `RULES`).

    import envs
    report = envs.check_env(envs.make("tictactoe"))   # raises envs.EnvCheckError
    print(report)

From the shell: `python -m envs.check GAME` (`envs/check.py`). The checks that need no
game played are in `envs.conformance.static`; the rules and the error in
`envs.conformance.rules`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from envs.conformance.endings import endings_reached
from envs.conformance.games import POLICIES, play_games
from envs.conformance.reference import check_reference, check_reference_api
from envs.conformance.rules import PROPERTIES, RULES, EnvCheckError
from envs.conformance.static import (
    check_declarations,
    check_init_deterministic,
    check_notation,
    check_symmetry_group,
    check_tracing_and_types,
    init_keys,
)
from envs.conformance.verdicts import check_games, check_pictures, check_replay
from envs.core import Env

__all__ = ["ONLY_A_REFERENCE", "PROPERTIES", "RULES", "CheckReport", "EnvCheckError", "check_env",
           "init_keys"]

ONLY_A_REFERENCE = (
    "a wrong rule keeps the protocol (a wrong winner, a missed line, a game that ends a ply "
    "early or late, a wrong legal move): give a second implementation of the rules with "
    "--reference module:NAME (check_env(env, reference=...)), speaking OpenSpiel's state "
    "API (new_initial_state(); an OpenSpiel game serves as it is)"
)
"""The line a report without a reference ends with: the bugs only a reference catches."""


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """What `check_env` checked, with figures from its random games.

    Attributes:
      game: the game's name.
      properties: the names of the properties checked (all held).
      games: random games played; finished: how many ended within max_plies.
      plies: moves played in all games (steps on live states with a legal move).
      longest: plies of the longest game; max_plies: the limit checked.
      wins: games won by player 0, by player 1, and drawn.
      forfeits: illegal or out-of-range actions checked on live states.
      after_end: steps of finished games checked to change nothing.
      symmetries: the size G of the symmetry group; symmetry_pairs: (state, g) pairs on
        which step and the symmetry were checked to commute.
      seed: the seed of the random games; seconds: the check's wall time.
      reference_plies: plies on which the reference agreed (None: no reference given).
      policies: (name, games) for each policy the random games were played by
        (`envs.conformance.policies.POLICIES`).
      endings: (kind, games, shortest, longest) for each kind of ending the games
        reached, most often first: the result for the player who made the last move, and
        whether a side lost every piece (`envs.conformance.endings.ENDINGS`), how many
        games ended so and the plies of the shortest and the longest.
    """

    game: str
    properties: tuple[str, ...]
    games: int
    finished: int
    plies: int
    longest: int
    max_plies: int
    wins: tuple[int, int, int]
    forfeits: int
    after_end: int
    symmetries: int
    symmetry_pairs: int
    seed: int
    seconds: float
    reference_plies: int | None = None
    policies: tuple[tuple[str, int], ...] = ()
    endings: tuple[tuple[str, int, int, int], ...] = ()

    def __str__(self) -> str:
        p0, p1, draws = self.wins
        played = ", ".join(f"{count} {name}" for name, count in self.policies if count)
        endings = "; ".join(f"{games} {kind} ({low}-{high} plies)" if low < high else
                            f"{games} {kind} ({low} plies)"
                            for kind, games, low, high in self.endings)
        return "\n".join([
            f"{self.game}: all {len(self.properties)} properties hold",
            (f"  games      {self.games} random games (seed {self.seed}"
             f"{'; ' + played if played else ''}), {self.finished} finished; {p0} won by "
             f"player 0, {p1} by player 1, {draws} drawn"),
            f"  endings    {endings or 'none (no game finished)'}",
            (f"  plies      {self.plies} moves played, longest game {self.longest} plies "
             f"(max_plies {self.max_plies})"),
            (f"  edge cases {self.forfeits} illegal or out-of-range actions, {self.after_end} "
             "steps after the end"),
            (f"  symmetries {self.symmetries} (a group; {self.symmetry_pairs} state-symmetry "
             "pairs commute with step)"),
            *([] if self.reference_plies is None else [
                f"  reference  agreed on all {self.reference_plies} plies of the {self.games} "
                "games"]),
            f"  checked    {', '.join(self.properties)}",
            f"  time       {self.seconds:.1f} s",
            *([f"  unchecked  {ONLY_A_REFERENCE}"] if self.reference_plies is None else []),
        ])


def check_env(env: Env, num_games: int = 64, seed: int = 0,
              max_plies: int | None = None, reference: Any = None) -> CheckReport:
    """Checks that `env` keeps the game protocol; raises EnvCheckError on the first
    property it breaks (see `RULES` for each property and what a correct game does).

    Plays `num_games` random games in one jitted, vmapped scan of `max_plies + 1` plies
    (`max_plies` defaults to `env.max_plies`): a quarter of uniformly random legal moves,
    the others biased, one ply ahead, towards moves that end the game, change the
    material, keep the game going, take material and keep the game going, or reach what
    the batch has seen least, so as to reach endings that uniform play seldom does
    (`envs.conformance.policies`); the report counts the kinds of ending reached
    (`CheckReport.endings`). It steps every state also with a bad action and
    every sampled live state under every symmetry, and draws
    three states of game 0 with `env.picture` (no compiling: on the host). Game i
    starts from `env.init(init_keys(seed, num_games)[i])`; a failure gives the actions
    of the shortest game found that shows it (`EnvCheckError.actions`).

    `reference`: an independent implementation of the same rules (OpenSpiel's state API:
    `new_initial_state()`, see `envs.conformance.reference`), in which every random game
    is replayed move by move and must agree at every ply ("reference"). A protocol check
    cannot tell a wrong rule from a right one (a missing direction, the wrong winner);
    a reference can.

    Args:
      env: the game (an `envs.Env`).
      num_games: how many random games to play, at least 1.
      seed: the seed of the random games.
      max_plies: the ply limit to check (None: `env.max_plies`).
      reference: an OpenSpiel-style implementation of the same rules, or None.

    Returns:
      The `CheckReport` of what was played and checked.

    Raises:
      EnvCheckError: the first property the game breaks, with a shortest game that shows it.
      ValueError: `num_games` is not a positive int.
    """
    if not (isinstance(num_games, (int, np.integer)) and not isinstance(num_games, bool)
            and num_games > 0):
        raise ValueError(f"num_games must be a positive int, got {num_games!r}")
    if reference is not None:
        check_reference_api(reference)
    start = time.perf_counter()
    limit = check_declarations(env, max_plies)
    check_notation(env)
    size = check_symmetry_group(env)
    check_tracing_and_types(env)
    keys = init_keys(seed, num_games)
    check_init_deterministic(env, keys[0])
    games = play_games(env, num_games, seed, limit, masks=reference is not None)
    check_games(games)
    check_pictures(games)
    check_replay(games, keys)
    agreed = None if reference is None else check_reference(games, reference)
    rec = games.rec
    live = rec["live"]
    results = rec["rewards"][:, :, 0][rec["ended"]]
    return CheckReport(
        game=getattr(env, "name", type(env).__name__),
        properties=PROPERTIES if reference is not None else tuple(
            p for p in PROPERTIES if p != "reference"),
        games=num_games,
        finished=int((~live[limit]).sum()),
        plies=int(live.sum()),
        longest=int(live.sum(axis=0).max()),
        max_plies=limit,
        wins=(int((results > 0).sum()), int((results < 0).sum()), int((results == 0).sum())),
        forfeits=int(live.sum()),
        after_end=int(2 * (~live).sum()),
        symmetries=size,
        symmetry_pairs=int(rec["sample_live"].sum() * size),
        seed=seed,
        seconds=time.perf_counter() - start,
        reference_plies=agreed,
        policies=tuple((name, int((games.policies == p).sum()))
                       for p, name in enumerate(POLICIES)),
        endings=endings_reached(rec["end_kind"], live),
    )
