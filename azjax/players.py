"""Players: batched move choosers with one interface, `act(states, key) -> actions [B]`.

A `Player` wraps any way of choosing moves (random, the network alone, network + search,
pure rollout MCTS, AlphaGo-style mixed leaves, alpha-beta, exact solvers) so the arena,
the league and training-time evaluation treat them alike. `jittable` players run inside
one on-device `lax.while_loop` match; the others (alpha-beta on the host) are driven by a
host loop over plies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import chex

from envs import State

ActFn = Callable[[State, chex.PRNGKey], chex.Array]


@dataclasses.dataclass(frozen=True)
class Player:
    """A named batched policy: `act(states [B], key) -> int32 actions [B]`.

    `act` must return a legal action for every live state; what it returns for a
    finished game is ignored. `jittable=False` marks host-side players.
    """

    name: str
    act: ActFn
    jittable: bool = True
