"""Connect Four (7 columns x 6 rows) as a pure JAX state machine.

Player 0 (X) moves first. Action = column, 0 = leftmost (7 actions); a full column is
illegal. Four or more in a row (horizontal, vertical or diagonal) wins; a full board
without one is a draw.

The observation is [6, 7, 3] bool from the mover's point of view: the mover's discs,
the opponent's discs, and a plane that is all True when player 0 is to move. Row 0 of
the observation is the TOP row, so `observation[..., 0]` looks like the board.

Internally the discs are bitboards: `discs[i, c]` is column `c` as a 6-bit mask (bit
`r` = row `r` counted from the bottom), `i = 0` for the player to move and `i = 1` for
the opponent. Dropping a disc sets bit `height`, which for a bottom-filled column is
`occupied + 1`; the four-in-a-row test is a handful of shifts and ANDs across columns.

Training scores the network on positions solved exactly (`ground_truth`, from the data
in `envs/data/connect4`); alpha-beta evaluates with the open-line heuristic.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env
from envs.ground_truth import GroundTruth, GroundTruthSource
from envs.lines import line_count_eval
from envs.picture import Grid, Picture, disc, piece_class, status
from envs.state import State
from envs.symmetries import Symmetries

ROWS = 6
COLS = 7
DISC_COLOURS = ("#d62d20", "#ffd300")
"""Player 0's (X, red) and player 1's (O, yellow) discs in `ConnectFour.picture`."""
TOP_BIT = 1 << (ROWS - 1)
# Shift that brings observation row i (0 = top) to bit 0 of a column mask.
_ROW_SHIFTS = np.arange(ROWS - 1, -1, -1, dtype=np.int32)


@struct.dataclass
class ConnectFourState(State):
    """Connect Four state.

    `discs` int32 [2, 7]: column bitmasks (bit r = row r from the bottom) of the player
    to move (index 0) and of the opponent (index 1).
    """

    discs: chex.Array = None


def _has_four(p):
    """Whether column bitmasks `p` [..., 7] (jax or numpy) hold four in a row."""
    v = p & (p >> 1)
    vertical = v & (v >> 2)
    h = p[..., :-1] & p[..., 1:]
    horizontal = h[..., :-2] & h[..., 2:]
    d = p[..., :-1] & (p[..., 1:] >> 1)
    rising = d[..., :-2] & (d[..., 2:] >> 2)
    a = p[..., :-1] & (p[..., 1:] << 1)
    falling = a[..., :-2] & (a[..., 2:] << 2)
    return (
        (vertical != 0).any(-1)
        | (horizontal != 0).any(-1)
        | (rising != 0).any(-1)
        | (falling != 0).any(-1)
    )


def _observation(discs: chex.Array, player: chex.Array) -> chex.Array:
    bits = (discs.T[None, :, :] >> _ROW_SHIFTS[:, None, None]) & 1  # [6, 7, 2]
    side = jnp.broadcast_to(player == 0, (ROWS, COLS, 1))
    return jnp.concatenate([bits.astype(jnp.bool_), side], axis=-1)


def board_array(state: ConnectFourState) -> np.ndarray:
    """The board of a (batched or not) state as int8 [..., 6, 7], row 0 = top row:
    -1 empty, else the id of the player whose disc it is.

    Args:
      state: a `ConnectFourState`, unbatched or with leading batch axes (...).

    Returns:
      (..., 6, 7) int8, on the host.
    """
    discs = np.asarray(jax.device_get(state.discs))
    player = np.asarray(jax.device_get(state.current_player))[..., None, None]
    by_id = np.where(player == 0, discs, discs[..., ::-1, :])  # [..., 2, 7]
    bits = (by_id[..., None, :] >> _ROW_SHIFTS[:, None]) & 1  # [..., 2, 6, 7]
    board = np.full(bits.shape[:-3] + (ROWS, COLS), -1, np.int8)
    board[bits[..., 0, :, :] == 1] = 0
    board[bits[..., 1, :, :] == 1] = 1
    return board


def _state_from_discs(discs_by_id: chex.Array) -> ConnectFourState:
    """The state with these discs (int32 [2, 7] indexed by player id)."""
    discs_by_id = jnp.asarray(discs_by_id, jnp.int32)
    count = jnp.sum(jax.lax.population_count(discs_by_id)).astype(jnp.int32)
    player = count % 2
    won0 = _has_four(discs_by_id[0])
    won1 = _has_four(discs_by_id[1])
    terminated = won0 | won1 | (count == ROWS * COLS)
    rewards = jnp.where(
        won0,
        jnp.array([1.0, -1.0], jnp.float32),
        jnp.where(won1, jnp.array([-1.0, 1.0], jnp.float32), jnp.zeros(2, jnp.float32)),
    )
    discs = jnp.where(player == 0, discs_by_id, discs_by_id[::-1])
    occupied = discs[0] | discs[1]
    return ConnectFourState(
        current_player=player,
        observation=_observation(discs, player),
        legal_action_mask=((occupied & TOP_BIT) == 0) & ~terminated,
        rewards=rewards,
        terminated=terminated,
        step_count=count,
        discs=discs,
    )


_states_from_discs = jax.jit(jax.vmap(_state_from_discs))


def boards_from_moves(moves: Sequence[str]) -> ConnectFourState:
    """Batched states reached by playing each string of 1-based column digits ("4453").

    The boards are built in numpy and turned into states by one jitted, vmapped call.
    A string may end with the game's final move; anything else illegal raises ValueError.

    Args:
      moves: N strings of column digits 1-7 (empty: the empty board).

    Returns:
      A `ConnectFourState` batched (N,): every field has a leading (N,) axis.

    Raises:
      ValueError: no strings, a string that is not column digits or is too long, or an
        illegal move.
    """
    moves = [m.strip() for m in moves]
    n = len(moves)
    if n == 0:
        raise ValueError("boards_from_moves needs at least one move sequence")
    length = max(len(m) for m in moves)
    if length > ROWS * COLS:
        raise ValueError(f"a Connect Four game has at most {ROWS * COLS} moves")
    cols = np.full((n, length), -1, np.int64)
    for i, m in enumerate(moves):
        if m and not (m.isdigit() and all("1" <= ch <= str(COLS) for ch in m)):
            raise ValueError(f"moves must be column digits 1-{COLS}, got {m!r}")
        cols[i, : len(m)] = np.frombuffer(m.encode(), np.uint8) - ord("1")
    discs = np.zeros((n, 2, COLS), np.int64)  # by player id
    over = np.zeros(n, bool)
    rows = np.arange(n)
    for ply in range(length):
        col = cols[:, ply]
        playing = col >= 0
        safe = np.maximum(col, 0)
        occupied = discs[rows, 0, safe] | discs[rows, 1, safe]
        bad = playing & (over | ((occupied & TOP_BIT) != 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            why = "the game is already over" if over[i] else "the column is full"
            raise ValueError(f"illegal move {ply + 1} in {moves[i]!r}: {why}")
        mover = ply % 2
        discs[rows[playing], mover, col[playing]] |= occupied[playing] + 1
        over |= playing & _has_four(discs[:, mover])
    return _states_from_discs(jnp.asarray(discs, jnp.int32))


def state_from_moves(moves: str) -> ConnectFourState:
    """The (unbatched) state reached by playing 1-based column digits, e.g. "4453".

    Args:
      moves: column digits 1-7 ('' for the empty board).

    Returns:
      The unbatched `ConnectFourState`.

    Raises:
      ValueError: as `boards_from_moves`.
    """
    return jax.tree.map(lambda x: x[0], boards_from_moves([moves]))


def parse_move(text: str) -> int:
    """A human column "1".."7" as an action 0..6 (ValueError on anything else).

    Args:
      text: what the human typed.

    Returns:
      The action id, 0-6.

    Raises:
      ValueError: `text` is not a column number 1-7.
    """
    stripped = text.strip()
    if len(stripped) != 1 or not ("1" <= stripped <= str(COLS)):
        raise ValueError(f"expected a column number 1-{COLS}, got {text!r}")
    return int(stripped) - 1


def format_move(action: int) -> str:
    """An action 0..6 as the human column "1".."7".

    Args:
      action: the action id, 0-6.

    Returns:
      The column, "1"-"7".

    Raises:
      ValueError: `action` is outside 0-6.
    """
    if not 0 <= int(action) < COLS:
        raise ValueError(f"Connect Four actions are 0-{COLS - 1}, got {action!r}")
    return str(int(action) + 1)


class ConnectFour(Env):
    """Connect Four (7x6, four or more in a row wins, full board draws)."""

    name = "connect_four"
    num_actions = COLS
    observation_shape = (ROWS, COLS, 3)
    max_plies = ROWS * COLS
    player_marks = ("X", "O")
    line_length = 4
    move_notation = f"a column number 1-{COLS}"

    def _init(self, key: chex.PRNGKey) -> ConnectFourState:
        del key
        return _state_from_discs(jnp.zeros((2, COLS), jnp.int32))

    def _step(self, state: ConnectFourState, action: chex.Array) -> ConnectFourState:
        own, opp = state.discs[0], state.discs[1]
        occupied = own | opp
        own = own | jnp.where(jnp.arange(COLS) == action, occupied + 1, 0)
        won = _has_four(own)
        terminated = won | (state.step_count + 1 == ROWS * COLS)
        mover = state.current_player
        # +1 for the mover and -1 for the other on a win, without a scatter (slow under vmap).
        sign = jnp.where(mover == 0, 1.0, -1.0) * jnp.array([1.0, -1.0], jnp.float32)
        rewards = jnp.where(won, sign, 0.0).astype(jnp.float32)
        next_player = 1 - mover
        discs = jnp.stack([opp, own])
        return state.replace(
            current_player=next_player,
            observation=_observation(discs, next_player),
            legal_action_mask=(((own | opp) & TOP_BIT) == 0) & ~terminated,
            rewards=rewards,
            terminated=terminated,
            step_count=state.step_count + 1,
            discs=discs,
        )

    @property
    def symmetries(self) -> Symmetries:
        """Identity and the left-right mirror."""
        grid = np.arange(ROWS * COLS).reshape(ROWS, COLS)
        cell_perm = np.stack([grid.reshape(-1), grid[:, ::-1].reshape(-1)])
        action_perm = np.stack([np.arange(COLS), np.arange(COLS)[::-1]])
        return Symmetries(
            cell_perm=jnp.asarray(cell_perm, jnp.int32),
            action_perm=jnp.asarray(action_perm, jnp.int32),
            inverse_action_perm=jnp.asarray(action_perm, jnp.int32),  # mirrors are involutions
        )

    def transform_state(self, state: ConnectFourState, g: chex.Array) -> ConnectFourState:
        """Applies symmetry `g` (0 identity, 1 mirror) to the discs, observation and legal moves.

        Args:
          state: an unbatched `ConnectFourState`.
          g: () int32, 0 or 1.

        Returns:
          The transformed `ConnectFourState`.
        """
        sym = self.symmetries
        return state.replace(
            discs=state.discs[:, sym.action_perm[g]],
            observation=sym.observation(state.observation, g),
            legal_action_mask=sym.policy(state.legal_action_mask, g),
        )

    def parse_move(self, text: str) -> int:
        """A human column "1".."7" as an action (ValueError on bad input).

        Args:
          text: what the human typed.

        Returns:
          The action id, 0-6.
        """
        return parse_move(text)

    def format_move(self, action: int) -> str:
        """An action as the human column "1".."7".

        Args:
          action: the action id, 0-6.

        Returns:
          The column, "1"-"7".
        """
        return format_move(action)

    def render(self, state: ConnectFourState) -> str:
        """The board as text: X, O and `.`, the top row first, columns numbered 1-7 below.

        Args:
          state: an unbatched `ConnectFourState`.

        Returns:
          Seven lines of text.
        """
        board = board_array(state)
        marks = {-1: ".", 0: "X", 1: "O"}
        rows = [" ".join(marks[int(v)] for v in row) for row in board]
        return "\n".join(rows + [" ".join(str(c + 1) for c in range(COLS))])

    def picture(self, state: ConnectFourState, last_move: int | None = None) -> Picture:
        """The upright board: X's red and O's yellow discs fallen to the bottom, columns
        1-7 as `format_move` writes them. The spot of a column is the cell where a disc
        dropped there lands (its top cell when the column is full); the last move is
        marked on the top disc of its column.

        Args:
          state: an unbatched `ConnectFourState`.
          last_move: the column (action id) of the last move, to mark; or None.

        Returns:
          The `envs.picture.Picture`.
        """
        state = jax.device_get(state)
        board = board_array(state)
        grid = Grid(ROWS, COLS, cell=48.0)
        out = grid.picture(status(state, ("X (red)", "O (yellow)")), board_fill="#1d5fbf",
                           column_labels=[str(c + 1) for c in range(COLS)], lines=False)
        for r in range(ROWS):
            for c in range(COLS):
                player = int(board[r, c])
                fill = "#ffffff" if player < 0 else DISC_COLOURS[player]
                out = out.add(disc(*grid.centre(r, c), grid.cell * 0.4, fill, stroke="#153f80",
                                   width=1.5, cls=None if player < 0 else piece_class(player)))
        empty = board < 0
        tops = {c: grid.centre(int(np.argmin(empty[:, c])), c) for c in range(COLS)
                if not empty[:, c].all()}
        out = dataclasses.replace(out, spots=tops).mark_last_move(last_move)
        lowest = [ROWS - 1 - int(np.argmax(empty[::-1, c])) if empty[:, c].any() else 0
                  for c in range(COLS)]
        return dataclasses.replace(out, spots={c: grid.centre(lowest[c], c)
                                               for c in range(COLS)})

    def ground_truth(self) -> GroundTruthSource:
        """Solver positions: the move accuracy on 1,000 of them, the value sign on 6,000.

        Returns:
          The `GroundTruthSource` (metric `move_accuracy`, subset `hard`, with values).
        """
        return GROUND_TRUTH

    def heuristic(self):
        """The open-line heuristic (`envs.lines`).

        Returns:
          `value(observation) -> () float32` for one (6, 7, 3) observation.
        """
        return line_count_eval(ROWS, COLS, 4)


DATA_DIR = Path(__file__).resolve().parent / "data" / "connect4"
TEST_SETS = ("Test_L1_R1", "Test_L1_R2", "Test_L1_R3", "Test_L2_R1", "Test_L2_R2", "Test_L3_R1")


@dataclass(frozen=True)
class MoveSet:
    """Positions with the exact score of every move."""

    moves: list[str]
    optimal: np.ndarray  # bool [N, 7] the move has the best score
    keeps_result: np.ndarray  # bool [N, 7] the move keeps the position's result (its sign)


@dataclass(frozen=True)
class ValueSet:
    """Positions with their exact value for the side to move."""

    moves: list[str]
    score: np.ndarray  # int [N] > 0 the side to move wins, < 0 it loses, 0 draw


def load_move_set(path: Path = DATA_DIR / "dev_set.jsonl") -> MoveSet:
    """Reads `dev_set.jsonl`.

    Args:
      path: the JSON-lines file: per line `moves`, `optimal`, `scores` and `value`.

    Returns:
      The `MoveSet`: N positions, `optimal` and `keeps_result` (N, 7) bool.
    """
    moves, optimal, keeps = [], [], []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            moves.append(row["moves"])
            best = np.zeros(7, bool)
            best[row["optimal"]] = True
            optimal.append(best)
            keeps.append([s is not None and np.sign(s) == np.sign(row["value"])
                          for s in row["scores"]])
    return MoveSet(moves=moves, optimal=np.stack(optimal), keeps_result=np.array(keeps))


def load_value_set(names: tuple[str, ...] = TEST_SETS, data_dir: Path = DATA_DIR) -> ValueSet:
    """Reads the `Test_L*_R*` files (`<moves> <score>` per line).

    Args:
      names: the files' names.
      data_dir: the folder that holds them.

    Returns:
      The `ValueSet`: N positions and their scores, (N,) int.
    """
    moves, scores = [], []
    for name in names:
        for line in (Path(data_dir) / name).read_text().splitlines():
            if line.strip():
                played, score = line.split()
                moves.append(played)
                scores.append(int(score))
    return ValueSet(moves=moves, score=np.asarray(scores))


def immediate_wins(env: Env, states) -> np.ndarray:
    """bool [N, A]: playing the action wins at once.

    Args:
      env: the game (Connect Four).
      states: a `State` batched (N,).

    Returns:
      (N, A) bool, on the host.
    """

    def wins(state):
        mover = state.current_player
        after = jax.vmap(env.step, in_axes=(None, 0))(state, jnp.arange(env.num_actions))
        return state.legal_action_mask & (after.rewards[:, mover] > 0)

    return np.asarray(jax.jit(jax.vmap(wins))(states))


def _result_shares(move_set: MoveSet, hard: np.ndarray, actions: np.ndarray
                  ) -> dict[str, float]:
    """The share of `actions` [N] that keep their position's result (win, draw or loss:
    AlphaZero.jl's measure of mistakes, blind to how fast a win comes), over all the
    positions and over `hard` ones.

    Args:
      move_set: the N solved positions.
      hard: (N,) bool, the positions of the second share.
      actions: (N,) integer, the move chosen in each position.

    Returns:
      `{"result_kept": ..., "result_kept_hard": ...}`, shares in [0, 1].
    """
    kept = move_set.keeps_result[np.arange(len(actions)), actions]
    return {"result_kept": float(kept.mean()), "result_kept_hard": float(kept[hard].mean())}


def _load_ground_truth(env: Env) -> GroundTruth:
    """The solved `dev_set` positions (with the non-trivial subset `hard`) and the decided
    positions of the public benchmark sets (for the value sign). Its check reports the
    share of result-keeping moves (`_result_shares`), over all positions and over those
    where a legal move changes the result and none wins at once."""
    move_set = load_move_set()
    move_states = boards_from_moves(move_set.moves)
    legal = np.asarray(move_states.legal_action_mask)
    can_win = immediate_wins(env, move_states).any(axis=1)
    result_hard = ~can_win & np.any(legal & ~move_set.keeps_result, axis=1)
    value_set = load_value_set()
    decided = value_set.score != 0
    return GroundTruth(
        states=move_states,
        right_moves=move_set.optimal,
        counted=np.ones(len(move_set.moves), bool),
        subsets={"hard": ~can_win & np.any(legal & ~move_set.optimal, axis=1)},
        value_states=boards_from_moves([m for m, d in zip(value_set.moves, decided) if d]),
        value_sign=np.sign(value_set.score[decided]),
        check_actions=lambda actions: _result_shares(move_set, result_hard, actions),
    )


GROUND_TRUTH = GroundTruthSource(metric="move_accuracy", complete=False, load=_load_ground_truth,
                                subsets=("hard",), values=True)
