"""The data an exact evaluator scores a player on: positions with their right moves.

A game offers it through `Env.ground_truth` (`envs.core`), which this module does not
import: `GroundTruthSource.load` is called with the env."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from envs.state import State


@dataclasses.dataclass(frozen=True)
class GroundTruth:
    """Positions of one game whose right moves (and values) are known.

    Attributes:
      states: State [N], live positions to choose a move in.
      right_moves: bool [N, A], the moves that keep the position's game value.
      counted: bool [N], the positions the share of right moves is taken over (e.g. only
        the winning ones, where a wrong move loses something).
      subsets: name -> bool [N] (within `counted`): extra shares, reported as
        `<metric>_<name>` (e.g. the non-trivial positions).
      value_states: State [M] positions with a known winner, or None.
      value_sign: int [M], +1 where the player to move wins, -1 where it loses.
      check_actions: optional `check(actions [N]) -> {name: float}`, further figures on
        a whole table of chosen moves: verdicts (1.0 or 0.0, e.g. unbeatable from either
        seat; a complete ground truth's perfect play needs each to be 1) or shares (e.g.
        moves that keep the result), which the game declares (`Env.metric_kinds`).
    """

    states: State
    right_moves: np.ndarray
    counted: np.ndarray
    subsets: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    value_states: State | None = None
    value_sign: np.ndarray | None = None
    check_actions: Callable[[np.ndarray], dict[str, float]] | None = None


@dataclasses.dataclass(frozen=True)
class GroundTruthSource:
    """A game's ground truth before it is loaded.

    Attributes:
      metric: name of the share of right moves ('optimal_share', ...), reported as
        `net_<metric>` and `search_<metric>`.
      complete: the positions are every reachable one, so choosing a right move in all of
        them is perfect play.
      load: `load(env) -> GroundTruth`, called with the game's `envs.Env` (may take
        seconds: called on first use).
      subsets: the names of its subsets.
      values: whether it knows winners (`value_states`).
    """

    metric: str
    complete: bool
    load: Callable[[Any], GroundTruth]
    subsets: tuple[str, ...] = ()
    values: bool = False
