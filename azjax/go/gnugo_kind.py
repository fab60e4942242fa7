"""The player kind `gnugo:LEVEL[,seed=S][,timeout=T]`: GNU Go (`azjax.go.gnugo`) as a
player spec, registered with `azjax.run.grammar.specs`."""

from __future__ import annotations

from azjax.go.gnugo import GnuGoPlayer, gnugo_player
from azjax.go.gtp_client import GNUGO_LEVELS
from azjax.run.grammar.specs import PlayerKind, PlayerSpec, number, register_player
from envs import Env


def _level(text: str) -> int:
    low, high = GNUGO_LEVELS
    if not (text.isascii() and text.isdigit() and low <= int(text) <= high):
        raise ValueError(f"GNU Go's level must be an integer from {low} to {high} "
                         f"('gnugo:LEVEL'), got {text!r}")
    return int(text)


def _seed(text: str) -> int:
    seed = number("seed", int)(text)
    if not 0 <= seed < 2**31:
        raise ValueError(f"seed must be from 0 to {2**31 - 1}")
    return seed


def _timeout(text: str) -> float:
    timeout = number("timeout")(text)
    if not 0 < timeout < float("inf"):
        raise ValueError("timeout must be a positive number")
    return timeout


def _build(spec: PlayerSpec, env: Env, name: str) -> GnuGoPlayer:
    return gnugo_player(env, spec.value, name=name, **spec.values)  # seed=, timeout=


GNUGO = register_player(PlayerKind(
    "gnugo", "gnugo:LEVEL[,seed=S][,timeout=T]",
    "GNU Go at level 0-10 (Go only; host; needs the `gnugo` program, or `$AZJAX_GNUGO`; "
    "T: seconds to wait for a move, default 120)",
    _build, arg=_level, options={"seed": _seed, "timeout": _timeout}))
"""The `gnugo` kind."""
