"""Two-player board games as pure JAX state machines (pgx-compatible protocol).

    import envs
    env = envs.make("tictactoe")           # or a registered name, pgx:<id>, module:Class
    state = env.init(key)
    state = env.step(state, action)
    envs.check_env(env)                    # does a game keep the protocol?

A game of your own subclasses `envs.Env` in your own file; `envs.register` gives it a
name, or any command line takes its import path (`--game my_module:MyGame`).
"""

from __future__ import annotations

from envs.conformance import CheckReport, EnvCheckError, check_env
from envs.core import Env
from envs.ground_truth import GroundTruth, GroundTruthSource
from envs.registry import PGX_PREFIX, make, register, registered_games, spec_of
from envs.state import State
from envs.symmetries import (
    Symmetries,
    dihedral_symmetries,
    from_cell_permutations,
    identity_symmetries,
)

__all__ = [
    "CheckReport",
    "Env",
    "EnvCheckError",
    "GroundTruth",
    "GroundTruthSource",
    "PGX_PREFIX",
    "State",
    "Symmetries",
    "check_env",
    "dihedral_symmetries",
    "from_cell_permutations",
    "identity_symmetries",
    "make",
    "register",
    "registered_games",
    "spec_of",
]
