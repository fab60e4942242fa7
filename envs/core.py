"""The game protocol every env in `envs` follows (pgx-compatible).

A game is a pure state machine: `init(key) -> State` and `step(State, action) -> State`,
both unbatched and jit/vmap-able. `Env.step` fixes, once for every game, what happens
outside the rules:

* A step on a terminated state returns the state unchanged, with zero rewards.
* An illegal action ends the game: the player who made it loses (-1, opponent +1) and
  the board is left as it was. Search and self-play never produce one (they mask
  illegal actions); the rule exists so that a bad action can never corrupt a state.

The state a game carries is `envs.state.State`, its symmetry group
`envs.symmetries.Symmetries`; both are importable from here too
(`from envs.core import Env, State`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np

from envs.ground_truth import GroundTruthSource
from envs.picture import Picture, default_picture
from envs.state import State, tree_where
from envs.symmetries import Symmetries, identity_symmetries

__all__ = ["Env", "State", "Symmetries"]


class Env(abc.ABC):
    """A two-player, zero-sum, perfect-information game.

    A game implements `_init` and `_step` (a legal action on a live state) and states
    `name`, `num_actions`, `observation_shape` and `max_plies`; `init` and `step` are the
    public, pure, jit/vmap-able API. Everything else a game knows about itself is a hook
    with a default, which the framework reads instead of switching on the game's name:

    * `parse_move`, `format_move`, `move_notation`, `player_marks`: how humans type and
      read moves (default: action ids) and name the sides;
    * `render`, `result_text`: text pictures of a state and of a finished game;
    * `picture` (and `render_svg`, its text): an SVG picture of a state, with the spot
      where each move is drawn (default: a grid from the observation, `envs.picture`);
    * `score_margin`: the points by which a finished game was won (default: none);
    * `ownership`: who owns each cell of a finished game's board, a territory game's
      auxiliary training target beside the score (default: none);
    * `symmetries`, `transform_state`: the symmetry group used for augmentation
      (default: the identity alone);
    * `ground_truth`: positions with known right moves, which the training-time evaluator
      scores on (default: none, so training reports the score against random play);
    * `metric_kinds`: the unit and direction of the figures of the game's own that its
      evaluation reports (default: none, so they are shown as plain numbers);
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
        """A new game. The key is consumed (games without chance may ignore it).

        Args:
          key: a PRNG key, () key or (2,) uint32; batch it with `jax.vmap`.

        Returns:
          The initial `State`, unbatched: `legal_action_mask` (A,) bool, `rewards` (2,)
          float32, `current_player`, `terminated` and `step_count` () scalars.
        """
        return self._init(key)

    def step(self, state: State, action: chex.Array) -> State:
        """Plays `action` for the player to move (see module docstring for edge cases).

        Args:
          state: a `State`, unbatched (`jax.vmap` batches it: every field gains a
            leading (B,) axis).
          action: () int32, the action id for the player to move; an out-of-range or
            illegal id forfeits the game.

        Returns:
          The next `State`, of the same structure and shapes as `state`.
        """
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

        Args:
          state: a `State`, unbatched.
          g: () int32, an element of `symmetries`, in [0, symmetries.size).

        Returns:
          The transformed `State`, of the same structure and shapes as `state`.

        Raises:
          NotImplementedError: the game declares more than the identity but does not
            override this method.
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

        Args:
          text: what the human typed.

        Returns:
          The action id, in [0, num_actions).

        Raises:
          ValueError: for text that names no action.
        """
        t = text.strip()
        if not (t.isascii() and t.isdigit()) or not 0 <= int(t) < self.num_actions:
            raise ValueError(f"expected {self.move_notation}, got {text!r}")
        return int(t)

    def format_move(self, action: int) -> str:
        """An action id as humans read it; `parse_move` reads it back (default: the id).

        Args:
          action: an action id, a Python int or a () integer array.

        Returns:
          The move as text.

        Raises:
          ValueError: `action` is outside [0, num_actions).
        """
        action = int(action)
        if not 0 <= action < self.num_actions:
            raise ValueError(f"{self.name} actions are 0-{self.num_actions - 1}, got {action}")
        return str(action)

    def render(self, state: State) -> str:
        """A text picture of one (unbatched) state for humans.

        The default shows a header line and, for [H, W, C] observations, planes 0 and 1
        (in most games the pieces of the player to move and of the opponent).

        Args:
          state: a `State`, unbatched (on device or host).

        Returns:
          Lines of text joined by newlines.
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

    def picture(self, state: State, last_move: int | None = None) -> Picture:
        """An SVG picture of one (unbatched) state: the pieces, coordinates, the last move
        marked when it is given, and the spot where each move is drawn (the analysis board
        writes on spots; the browser page clicks them). A notebook shows the returned
        `envs.picture.Picture` inline.

        The default draws [H, W, C] observations as a grid: planes 0 and 1 are the pieces
        of the player to move and of the other (`envs.picture.default_picture`).

        Args:
          state: a `State`, unbatched.
          last_move: the action id of the move that led to `state`, to mark; None for
            no mark.

        Returns:
          The `envs.picture.Picture`.
        """
        return default_picture(self, state, last_move)

    def render_svg(self, state: State, last_move: int | None = None) -> str:
        """The text of a standalone SVG file of `picture(state, last_move)`.

        Args:
          state: a `State`, unbatched.
          last_move: the action id to mark, or None.

        Returns:
          The SVG document as text.
        """
        return self.picture(state, last_move).svg()

    def result_text(self, state: State) -> str | None:
        """A line on how a finished game was decided beyond who won (Go: the area count),
        or None.

        Args:
          state: a finished `State`, unbatched.

        Returns:
          The line, or None when the winner says everything.
        """
        del state
        return None

    def score_margin(self) -> "Callable[[State], chex.Array] | None":
        """For a game decided by points: a function from one finished state to player 0's
        points minus player 1's (Go: Black's area minus White's, komi included; jit/vmap-
        able), which matches report as margins; None (the default): win or loss only.

        Returns:
          `margin(state) -> () float32` for an unbatched finished state, or None.
        """
        return None

    def ownership(self) -> "Callable[[State], chex.Array] | None":
        """For a territory game: a function from one finished state to who owns each cell
        of its board, from player 0's view (int8 [cells]: +1 player 0, -1 player 1, 0
        neither; cells in the order of the observation's [H, W] cells; jit/vmap-able).
        Training can learn it as an auxiliary target (`network.ownership_head`). None
        (the default): no such target.

        Returns:
          `owner(state) -> (H * W,) int8` for an unbatched finished state, or None.
        """
        return None

    def futile_moves(self) -> "Callable[[State], chex.Array] | None":
        """Moves that never help the mover, which a search may leave out
        (`search.skip_futile`): a function from one live state to bool [A] (Go: filling
        one of the mover's own true eyes; jit/vmap-able), never flagging every legal move;
        None (the default): none.

        Returns:
          `futile(state) -> (A,) bool` for an unbatched live state, or None.
        """
        return None

    def ground_truth(self) -> "GroundTruthSource | None":
        """Positions with known right moves that training scores the network on
        (`envs.ground_truth`); None (the default): training scores against random play.

        Returns:
          An `envs.ground_truth.GroundTruthSource`, or None.
        """
        return None

    def metric_kinds(self) -> dict[str, tuple[str, str]]:
        """What the figures of the game's own are (those of its ground truth's
        `check_actions`, say, which azjax's metric schema does not know): name -> (unit,
        better), for the keys `net_<name>` and `search_<name>` of a run's records.

        unit: "share" (in [0, 1]: shown in percent, with a bootstrap interval over a
        sweep's seeds), "0/1" (a verdict: the same) or another ("points", "" for none: a
        t-interval); better: "higher", "lower" or "none". A figure declared neither here
        nor by the schema is shown as a plain number: no interval, no best configuration.
        The share of right moves a ground truth names (`GroundTruthSource.metric`, and its
        subsets) needs no declaration. Default: none.

        Returns:
          A dict, e.g. `{"regret": ("", "lower")}`.
        """
        return {}

    def solver(self) -> "Callable[[State], chex.Array] | None":
        """Exact play: a function from one live state to its right moves (bool [A],
        jit/vmap-able), for the `solver` player; None (the default) if the game has none.

        Returns:
          `right_moves(state) -> (A,) bool` for an unbatched live state, or None.
        """
        return None

    def heuristic(self) -> "Callable[[chex.Array], chex.Array] | None":
        """Alpha-beta's evaluation of a live position: observation -> value for the player
        to move, inside (-0.5, 0.5); None (the default): zero.

        Returns:
          `value(observation) -> () float32` for one unbatched observation of shape
          `observation_shape`, or None.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
