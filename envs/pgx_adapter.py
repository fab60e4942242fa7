"""Two-player deterministic pgx games in the `envs` protocol: `envs.make("pgx:othello")`.

The wrapped state keeps pgx's state in the field `pgx_state` and mirrors it in our fields:

* `current_player`: pgx's, as int32. pgx's `init` may draw who moves first from the key
  (tic_tac_toe, connect_four, othello, chess, ... map player ids to colours at random);
  that is kept: rewards stay indexed by pgx's player ids.
* `observation`: pgx's observation of the player to move. pgx gives bool planes for most
  games (kept bool) and float32 for a few (chess, gardner_chess, animal_shogi: counters
  and ratios, kept float32; the networks cast observations to float). Observations that
  are not [H, W, C] are reshaped: [N] -> [1, 1, N], [H, W] -> [H, W, 1].
* `legal_action_mask`: pgx's, all False once the game is over (pgx sets it all True).
* `rewards`: pgx's (float32 [2]); `terminated`: pgx's `terminated | truncated` (pgx
  truncates some games after a maximum number of plies, as a draw); `step_count`: pgx's
  ply counter.

Actions are pgx's action ids, which are also the human notation (the `Env` defaults of
`parse_move` and `format_move`); the symmetries are the identity alone (the default).
Steps after the end and illegal actions follow `envs.core`
(pgx's step is only relied on for legal actions on live states). Games with chance inside
`step` (backgammon, 2048) and games with other than two players are refused. The
imperfect-information games kuhn_poker and leduc_holdem are accepted (their chance is in
`init`), but a search on the state would see the hidden cards.
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env
from envs.picture import HEADER_CHAR, Picture, place, rect, status, text
from envs.state import State

_STOCHASTIC = ("2048", "backgammon")


@struct.dataclass
class PgxState(State):
    """Our state fields plus the wrapped pgx state (`pgx_state`)."""

    pgx_state: Any = None


def _observation_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(shape) == 1:
        return (1, 1, shape[0])
    if len(shape) == 2:
        return (shape[0], shape[1], 1)
    if len(shape) == 3:
        return tuple(shape)
    raise ValueError(f"cannot use a pgx observation of shape {shape}")


class PgxEnv(Env):
    """A pgx game behind the `Env` protocol (build it with `make_pgx`)."""

    def __init__(self, env_id: str, pgx_env: Any):
        self.env_id = env_id
        self.name = f"pgx:{env_id}"
        self.pgx_env = pgx_env
        spec = jax.eval_shape(pgx_env.init, jax.random.key(0))
        self.num_actions = int(spec.legal_action_mask.shape[0])
        self.pgx_observation_shape = tuple(spec.observation.shape)
        self.observation_shape = _observation_shape(self.pgx_observation_shape)
        self.observation_dtype = np.dtype(spec.observation.dtype)

    def wrap(self, pgx_state: Any) -> PgxState:
        """Our state for one (unbatched) pgx state.

        Args:
          pgx_state: an unbatched pgx `State` of this game.

        Returns:
          The unbatched `PgxState`: `observation` of shape `observation_shape`,
          `legal_action_mask` (A,) bool, `rewards` (2,) float32.
        """
        terminated = pgx_state.terminated | pgx_state.truncated
        observation = pgx_state.observation.reshape(self.observation_shape)
        return PgxState(
            current_player=pgx_state.current_player.astype(jnp.int32),
            observation=observation,
            legal_action_mask=pgx_state.legal_action_mask & ~terminated,
            rewards=pgx_state.rewards.astype(jnp.float32),
            terminated=terminated,
            step_count=pgx_state._step_count.astype(jnp.int32),
            pgx_state=pgx_state,
        )

    def _init(self, key: chex.PRNGKey) -> PgxState:
        return self.wrap(self.pgx_env.init(key))

    def _step(self, state: PgxState, action: chex.Array) -> PgxState:
        return self.wrap(self.pgx_env.step(state.pgx_state, action))

    def picture(self, state: PgxState, last_move: int | None = None) -> Picture:
        """pgx's own drawing of the wrapped state (`State.to_svg`) below a header line,
        with no spots (pgx's geometry is its own); the default picture where pgx cannot
        draw the state.

        Args:
          state: an unbatched `PgxState`.
          last_move: the action id to name in the header, or None.

        Returns:
          The `envs.picture.Picture`.
        """
        state = jax.device_get(state)
        try:
            svg = state.pgx_state.to_svg()
            root = ElementTree.fromstring(svg)
            w, h = float(root.get("width")), float(root.get("height"))
        except Exception:  # noqa: BLE001 - pgx could not draw it: the default picture
            return super().picture(state, last_move)
        header = status(state, ("player 0", "player 1"))
        if last_move is not None:
            header += f", last move {self.format_move(last_move)}"
        width = max(w, HEADER_CHAR * len(header) + 20)
        drawn = Picture(w, h, (svg[svg.index("<svg"):],))
        return Picture(width, h + 30).add(rect(0, 0, width, h + 30, "#ffffff"),
                                          text(10, 21, header, 14, anchor="start"),
                                          place(drawn, 0, 30))

    @property
    def move_notation(self) -> str:
        """Action ids, as pgx numbers them."""
        return f"an action number 0-{self.num_actions - 1} (pgx's action ids)"

    def __repr__(self) -> str:
        return f"PgxEnv({self.env_id!r})"


def make_pgx(env_id: str, **kwargs) -> PgxEnv:
    """Wraps the two-player deterministic pgx game `env_id` (see `pgx.available_envs()`).

    Args:
      env_id: the pgx id, e.g. "othello".
      **kwargs: must be empty.

    Returns:
      The `PgxEnv`.

    Raises:
      ValueError: pgx is not installed, the id is unknown, the game is not a two-player
        game without chance in its steps, or options were given (pgx games take none).
    """
    try:
        import pgx
    except ImportError:
        raise ValueError(
            f"pgx:{env_id} needs the pgx package; install it with `pip install pgx`"
        ) from None
    available = tuple(pgx.available_envs())
    if env_id not in available:
        raise ValueError(f"unknown pgx game {env_id!r}; available: {', '.join(available)}")
    if kwargs:
        raise ValueError(f"pgx:{env_id} takes no options, got {kwargs}")
    pgx_env = pgx.make(env_id)
    if pgx_env.num_players != 2:
        raise ValueError(f"pgx:{env_id} has {pgx_env.num_players} players; only 2 are supported")
    if env_id in _STOCHASTIC or type(pgx_env).step is not pgx.Env.step:
        raise ValueError(f"pgx:{env_id} has chance in its steps (its step needs a key)")
    return PgxEnv(env_id, pgx_env)
