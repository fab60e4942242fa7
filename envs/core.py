"""The game protocol every env in `envs` follows (pgx-compatible).

A game is a pure state machine: `init(key) -> State` and `step(State, action) -> State`,
both unbatched and jit/vmap-able. `Env.step` fixes, once for every game, what happens
outside the rules:

* A step on a terminated state returns the state unchanged, with zero rewards.
* An illegal action ends the game: the player who made it loses (-1, opponent +1) and
  the board is left as it was. Search and self-play never produce one (they mask
  illegal actions); the rule exists so that a bad action can never corrupt a state.
"""

from __future__ import annotations

import abc
import math
import operator
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

if TYPE_CHECKING:
    from envs.ground_truth import GroundTruthSource


@struct.dataclass
class State:
    """Fields every game's state carries (games subclass it and add their own).

    Attributes:
      current_player: int32 [] id (0 or 1) of the player to move.
      observation: [*observation_shape] bool planes from the mover's point of view.
      legal_action_mask: bool [A] legal moves of the player to move.
      rewards: float32 [2] indexed by player id; non-zero only on the final step.
      terminated: bool [] the game is over.
      step_count: int32 [] plies played so far.
    """

    current_player: chex.Array
    observation: chex.Array
    legal_action_mask: chex.Array
    rewards: chex.Array
    terminated: chex.Array
    step_count: chex.Array


@struct.dataclass
class Symmetries:
    """A game's symmetry group as gather permutations, for data augmentation.

    For symmetry g, the transformed observation is `obs.reshape(cells, C)[cell_perm[g]]`
    and the transformed policy is `pi[action_perm[g]]`; the action `a` maps to
    `inverse_action_perm[g, a]`. Index 0 is always the identity.

    Attributes:
      cell_perm: int32 [G, H*W] spatial gather permutation of observation cells.
      action_perm: int32 [G, A] gather permutation of action-indexed vectors.
      inverse_action_perm: int32 [G, A] where each action goes under the symmetry.
    """

    cell_perm: chex.Array
    action_perm: chex.Array
    inverse_action_perm: chex.Array

    @property
    def size(self) -> int:
        """Number of symmetries (including the identity)."""
        return self.action_perm.shape[0]

    def observation(self, obs: chex.Array, g: chex.Array) -> chex.Array:
        """Applies symmetry `g` to one observation of shape [*cells, C]."""
        c = obs.shape[-1]
        return obs.reshape(-1, c)[self.cell_perm[g]].reshape(obs.shape)

    def policy(self, pi: chex.Array, g: chex.Array) -> chex.Array:
        """Applies symmetry `g` to one action-indexed vector [A]."""
        return pi[self.action_perm[g]]

    def action(self, action: chex.Array, g: chex.Array) -> chex.Array:
        """Maps an action of the original position to the transformed position."""
        return self.inverse_action_perm[g, action]


def identity_symmetries(observation_shape: tuple[int, ...], num_actions: int) -> Symmetries:
    """The trivial group: the identity alone (a game without symmetries)."""
    cells = int(np.prod(observation_shape[:-1], dtype=np.int64))
    actions = jnp.arange(num_actions, dtype=jnp.int32)[None]
    return Symmetries(
        cell_perm=jnp.arange(cells, dtype=jnp.int32)[None],
        action_perm=actions,
        inverse_action_perm=actions,
    )


def _invert(perms: np.ndarray) -> np.ndarray:
    inverse = np.empty_like(perms)
    rows = np.arange(perms.shape[0])[:, None]
    inverse[rows, perms] = np.arange(perms.shape[1])[None, :]
    return inverse


def dihedral_symmetries(height: int, width: int, extra_actions: int = 0) -> Symmetries:
    """The 8 rotations/reflections of a square board (4 would be wrong for non-square).

    Actions `row*width+col` follow the cells; `extra_actions` trailing actions (Go's pass)
    are fixed points.
    """
    if height != width:
        raise ValueError("dihedral symmetries need a square board")
    grid = np.arange(height * width).reshape(height, width)
    perms = []
    for k in range(4):
        rotated = np.rot90(grid, k)
        perms.append(rotated.reshape(-1))
        perms.append(np.fliplr(rotated).reshape(-1))
    return from_cell_permutations(np.stack(perms), extra_actions)


def from_cell_permutations(cell_perm: np.ndarray, extra_actions: int = 0) -> Symmetries:
    """Builds `Symmetries` from gather permutations of board cells (actions = cells)."""
    cell_perm = np.asarray(cell_perm, dtype=np.int32)
    num_cells = cell_perm.shape[1]
    fixed = np.broadcast_to(
        np.arange(num_cells, num_cells + extra_actions, dtype=np.int32),
        (cell_perm.shape[0], extra_actions),
    )
    action_perm = np.concatenate([cell_perm, fixed], axis=1)
    return Symmetries(
        cell_perm=jnp.asarray(cell_perm),
        action_perm=jnp.asarray(action_perm),
        inverse_action_perm=jnp.asarray(_invert(action_perm)),
    )


class Env(abc.ABC):
    """A two-player, zero-sum, perfect-information game.

    A game implements `_init` and `_step` (a legal action on a live state) and states
    `name`, `num_actions`, `observation_shape` and `max_plies`; `init` and `step` are the
    public, pure, jit/vmap-able API. Everything else a game knows about itself is a hook
    with a default, which the framework reads instead of switching on the game's name:

    * `parse_move`, `format_move`, `move_notation`, `player_marks`: how humans type and
      read moves (default: action ids) and name the sides;
    * `render`, `result_text`: text pictures of a state and of a finished game;
    * `score_margin`: the points by which a finished game was won (default: none);
    * `symmetries`, `transform_state`: the symmetry group used for augmentation
      (default: the identity alone);
    * `ground_truth`: positions with known right moves, which the training-time evaluator
      scores on (default: none, so training reports the score against random play);
    * `solver`: exact right moves, for the `solver` player (default: none);
    * `heuristic`, `line_length`: alpha-beta's evaluation of live positions (default:
      zero) and the k of a k-in-a-row game (for the `lines` evaluation).

    `envs.check_env(env)` checks that a game keeps the protocol.
    """

    name: str
    num_actions: int
    observation_shape: tuple[int, ...]
    num_players: int = 2
    max_plies: int | None = None
    """Every game ends within this many plies (`envs.check_env` checks it)."""
    player_marks: tuple[str, str] | None = None
    """How `render` marks the two players' pieces, by player id (e.g. `("X", "O")`)."""
    line_length: int | None = None
    """The k of a k-in-a-row game (the `lines` alpha-beta evaluation), else None."""

    def __new__(cls, *args, **kwargs):
        env = super().__new__(cls)
        # What the game was built with, so that `envs.spec_of` can name it for a later
        # process (a run directory records it).
        env._constructor_args = (args, kwargs)
        return env

    def __init__(self) -> None:
        """A game without options (games with options define their own constructor)."""

    def init(self, key: chex.PRNGKey) -> State:
        """A new game. The key is consumed (games without chance may ignore it)."""
        return self._init(key)

    def step(self, state: State, action: chex.Array) -> State:
        """Plays `action` for the player to move (see module docstring for edge cases)."""
        action = jnp.asarray(action, dtype=jnp.int32)
        chex.assert_shape(action, ())
        safe_action = jnp.clip(action, 0, self.num_actions - 1)
        # `action` in range and legal, as a one-hot test (a gather is slow under vmap).
        actions = jnp.arange(self.num_actions, dtype=jnp.int32)
        legal = jnp.any(state.legal_action_mask & (actions == action))
        played = self._step(state, safe_action)
        mover = state.current_player
        # -1 for the mover, +1 for the other; arithmetic instead of scatters (slow under vmap).
        forfeit_rewards = jnp.where(jnp.arange(2) == mover, -1.0, 1.0).astype(jnp.float32)
        # One select per leaf: the played state on a legal move of a live game, else the
        # state as it was; then the three fields where forfeit and after-the-end differ.
        live = ~state.terminated
        use_played = live & legal
        out = tree_where(use_played, played, state)
        return out.replace(
            terminated=use_played & played.terminated | ~use_played,
            rewards=jnp.where(use_played, played.rewards, jnp.where(live, forfeit_rewards, 0.0)),
            legal_action_mask=jnp.where(
                use_played,
                played.legal_action_mask,
                state.legal_action_mask & state.terminated,
            ),
        )

    @abc.abstractmethod
    def _init(self, key: chex.PRNGKey) -> State:
        """The initial state."""

    @abc.abstractmethod
    def _step(self, state: State, action: chex.Array) -> State:
        """Plays a legal action on a non-terminated state."""

    # ----------------------------------------------------------------------------------
    # Hooks with defaults
    # ----------------------------------------------------------------------------------

    @property
    def symmetries(self) -> Symmetries:
        """The game's symmetries, for augmentation (default: the identity alone)."""
        return identity_symmetries(self.observation_shape, self.num_actions)

    def transform_state(self, state: State, g: chex.Array) -> State:
        """Applies symmetry `g` to a whole state (used to check equivariance).

        The default is right only for the identity: a game that declares more symmetries
        overrides it.
        """
        if self.symmetries.size > 1:
            raise NotImplementedError(
                f"{type(self).__name__} declares {self.symmetries.size} symmetries but does "
                "not override transform_state"
            )
        del g
        return state

    @property
    def move_notation(self) -> str:
        """What a human types as a move, for `help` in `python -m azjax.play`."""
        return f"an action number 0-{self.num_actions - 1}"

    def parse_move(self, text: str) -> int:
        """A move typed by a human, as an action id (default: the id itself).

        Raises:
          ValueError: for text that names no action.
        """
        t = text.strip()
        if not (t.isascii() and t.isdigit()) or not 0 <= int(t) < self.num_actions:
            raise ValueError(f"expected {self.move_notation}, got {text!r}")
        return int(t)

    def format_move(self, action: int) -> str:
        """An action id as humans read it; `parse_move` reads it back (default: the id)."""
        action = int(action)
        if not 0 <= action < self.num_actions:
            raise ValueError(f"{self.name} actions are 0-{self.num_actions - 1}, got {action}")
        return str(action)

    def render(self, state: State) -> str:
        """A text picture of one (unbatched) state for humans.

        The default shows a header line and, for [H, W, C] observations, planes 0 and 1
        (in most games the pieces of the player to move and of the opponent).
        """
        state = jax.device_get(state)
        player, ply = int(state.current_player), int(state.step_count)
        header = f"{self.name}: player {player} to move, ply {ply}"
        if bool(state.terminated):
            header = f"{self.name}: game over after {ply} plies, rewards {state.rewards.tolist()}"
        obs = np.asarray(state.observation) != 0
        if obs.ndim != 3 or obs.shape[0] * obs.shape[1] == 1:
            return header
        own, other = "XO" if player == 0 else "OX"
        if self.player_marks is not None:
            own, other = self.player_marks[player], self.player_marks[1 - player]
        rows = []
        for r in range(obs.shape[0]):
            cells = [own if obs[r, c, 0] else other if obs.shape[2] > 1 and obs[r, c, 1] else "."
                     for c in range(obs.shape[1])]
            rows.append(" ".join(cells))
        return "\n".join([header, *rows])

    def result_text(self, state: State) -> str | None:
        """A line on how a finished game was decided beyond who won (Go: the area count),
        or None."""
        del state
        return None

    def score_margin(self) -> "Callable[[State], chex.Array] | None":
        """For a game decided by points: a function from one finished state to player 0's
        points minus player 1's (Go: Black's area minus White's, komi included; jit/vmap-
        able), which matches report as margins; None (the default): win or loss only."""
        return None

    def ground_truth(self) -> "GroundTruthSource | None":
        """Positions with known right moves that training scores the network on
        (`envs.ground_truth`); None (the default): training scores against random play."""
        return None

    def solver(self) -> "Callable[[State], chex.Array] | None":
        """Exact play: a function from one live state to its right moves (bool [A],
        jit/vmap-able), for the `solver` player; None (the default) if the game has none."""
        return None

    def heuristic(self) -> "Callable[[chex.Array], chex.Array] | None":
        """Alpha-beta's evaluation of a live position: observation -> value for the player
        to move, inside (-0.5, 0.5); None (the default): zero."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


# ----------------------------------------------------------------------------------------
# Option checks and memory, shared by the games' constructors (and `azjax.memory`)
# ----------------------------------------------------------------------------------------

INT32_MAX = 2**31 - 1


def check_option(name: str, value: Any, kind: type, low: float | None = None,
                 high: float | None = None, *, above: float | None = None) -> Any:
    """`value` as `kind` (int or float) if it is one, finite, and `low <= value <= high`,
    `value > above` (bounds left None are not checked).

    Raises:
      ValueError: one line naming the option, for a bool or a str, a float where an int
        is wanted (2.5, and 7.0 too), NaN, an infinity ("komi must be a finite number,
        got nan") or a value out of range ("size must be in [3, 19], got 25").
    """
    number = _as_int(value) if kind is int else _as_float(value)
    bounds = _bounds(low, high, above)
    if number is None:
        noun = "an integer" if kind is int else "a finite number"
        raise ValueError(f"{name} must be {' '.join([noun, *bounds])}, got {value!r}")
    if ((low is not None and number < low) or (above is not None and number <= above)
            or (high is not None and number > high)):
        raise ValueError(f"{name} must be {' '.join(bounds)}, got {value!r}")
    return number


def _as_int(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _show(bound: float) -> str:
    if bound == INT32_MAX:
        return "2**31 - 1"
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _bounds(low: float | None, high: float | None, above: float | None) -> list[str]:
    if low is not None and high is not None:
        return [f"in [{_show(low)}, {_show(high)}]"]
    parts = [f"{sign} {_show(bound)}" for sign, bound in ((">=", low), (">", above), ("<=", high))
             if bound is not None]
    return [" and ".join(parts)] if parts else []


def available_bytes() -> int:
    """Memory the default JAX device can hold: an accelerator's `bytes_limit`, else the
    machine's RAM (or the container's limit, where lower)."""
    device = jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if stats.get("bytes_limit"):
            return int(stats["bytes_limit"])
    return _host_bytes()


def _host_bytes() -> int:
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = int(Path(path).read_text().strip())
        except (OSError, ValueError):  # no such file, or "max" (no limit)
            continue
        if 0 < limit < physical:
            return limit
    return physical


def format_bytes(n: float) -> str:
    """A byte count for humans, in powers of 1000: "512 B", "3.1 MB", "22.4 GB"."""
    units = ("B", "kB", "MB", "GB", "TB", "PB")
    n, unit = float(n), 0
    while n >= 1000 and unit < len(units) - 1:
        n, unit = n / 1000, unit + 1
    return f"{n:.0f} B" if unit == 0 else f"{n:.1f} {units[unit]}"


def check_fits(what: str, needed: int, detail: str = "") -> None:
    """Raises ValueError (one line) when `needed` bytes exceed `available_bytes()`:
    "<what> would need 22.4 GB (<detail>), more than the 16.0 GB of memory here"."""
    available = available_bytes()
    if needed > available:
        detail = f" ({detail})" if detail else ""
        raise ValueError(f"{what} would need {format_bytes(needed)}{detail}, more than the "
                         f"{format_bytes(available)} of memory here")


def tree_where(pred: chex.Array, on_true: Any, on_false: Any) -> Any:
    """Per-leaf `jnp.where` over two pytrees of the same structure (scalar pred)."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)
