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

Actions are pgx's action ids, which are also the human notation (`parse_move`,
`format_move`). Steps after the end and illegal actions follow `envs.core`
(pgx's step is only relied on for legal actions on live states). Games with chance inside
`step` (backgammon, 2048) and games with other than two players are refused. The
imperfect-information games kuhn_poker and leduc_holdem are accepted (their chance is in
`init`), but a search on the state would see the hidden cards.
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env, State, Symmetries

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
        """Our state for one (unbatched) pgx state."""
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

    @property
    def symmetries(self) -> Symmetries:
        """Identity only (G = 1); pgx games are wrapped without their symmetries."""
        h, w, _ = self.observation_shape
        actions = jnp.arange(self.num_actions, dtype=jnp.int32)[None]
        return Symmetries(
            cell_perm=jnp.arange(h * w, dtype=jnp.int32)[None],
            action_perm=actions,
            inverse_action_perm=actions,
        )

    def transform_state(self, state: PgxState, g: chex.Array) -> PgxState:
        """The identity (the only symmetry)."""
        del g
        return state

    def parse_move(self, text: str) -> int:
        """A pgx action id typed as a number, e.g. `"4"` (ValueError on anything else)."""
        t = text.strip()
        if not (t.isascii() and t.isdigit()) or not 0 <= int(t) < self.num_actions:
            raise ValueError(
                f"expected an action number 0-{self.num_actions - 1} (pgx's action ids), "
                f"got {text!r}"
            )
        return int(t)

    def format_move(self, action: int) -> str:
        """An action as its pgx action id."""
        action = int(action)
        if not 0 <= action < self.num_actions:
            raise ValueError(f"{self.name} actions are 0-{self.num_actions - 1}, got {action}")
        return str(action)

    def render(self, state: PgxState) -> str:
        """A header line, then (for board games) observation planes 0 and 1 as X and O.

        In most pgx board games planes 0 and 1 are the pieces of the player to move and of
        the opponent (in chess-like games, only their pawns and knights).
        """
        state = jax.device_get(state)
        player, ply = int(state.current_player), int(state.step_count)
        header = f"{self.name}: player {player} to move, ply {ply}"
        if bool(state.terminated):
            header = f"{self.name}: game over after {ply} plies, rewards {state.rewards.tolist()}"
        h, w, c = self.observation_shape
        if h * w == 1:
            return header
        obs = np.asarray(state.observation) != 0
        rows = []
        for r in range(h):
            cells = []
            for col in range(w):
                mark = "."
                if obs[r, col, 0]:
                    mark = "X"
                elif c > 1 and obs[r, col, 1]:
                    mark = "O"
                cells.append(mark)
            rows.append(" ".join(cells))
        return "\n".join([header, *rows, "(X: plane 0, the mover's; O: plane 1)"])

    def __repr__(self) -> str:
        return f"PgxEnv({self.env_id!r})"


def make_pgx(env_id: str, **kwargs) -> PgxEnv:
    """Wraps the two-player deterministic pgx game `env_id` (see `pgx.available_envs()`).

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
