"""Connect Four against the exact solver benchmark positions shipped in `azjax/data/connect4`.

* Move accuracy (`move_accuracy`): on the 1,000 `dev_set.jsonl` positions (random play,
  4-36 plies, each move's exact score), the share where the agent picks a move with the
  best score; also on the non-trivial ones (no immediate win exists and at least one
  legal move is not optimal: `move_accuracy_hard`), since random play makes about half
  of them easy.
* Value accuracy: on the 6,000 positions of the public `Test_L*_R*` sets, the share of
  decided positions (score != 0) where the sign of the network's value is right.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax.evaluators.ground_truth import GroundTruth, GroundTruthSource
from envs import Env
from envs.connect_four import boards_from_moves

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "connect4"
TEST_SETS = ("Test_L1_R1", "Test_L1_R2", "Test_L1_R3", "Test_L2_R1", "Test_L2_R2", "Test_L3_R1")


@dataclass(frozen=True)
class MoveSet:
    """Positions with the exact score of every move."""

    moves: list[str]
    optimal: np.ndarray  # bool [N, 7] the move has the best score


@dataclass(frozen=True)
class ValueSet:
    """Positions with their exact value for the side to move."""

    moves: list[str]
    score: np.ndarray  # int [N] > 0 the side to move wins, < 0 it loses, 0 draw


def load_move_set(path: Path = DATA_DIR / "dev_set.jsonl") -> MoveSet:
    """Reads `dev_set.jsonl`."""
    moves, optimal = [], []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            moves.append(row["moves"])
            best = np.zeros(7, bool)
            best[row["optimal"]] = True
            optimal.append(best)
    return MoveSet(moves=moves, optimal=np.stack(optimal))


def load_value_set(names: tuple[str, ...] = TEST_SETS, data_dir: Path = DATA_DIR) -> ValueSet:
    """Reads the `Test_L*_R*` files (`<moves> <score>` per line)."""
    moves, scores = [], []
    for name in names:
        for line in (Path(data_dir) / name).read_text().splitlines():
            if line.strip():
                played, score = line.split()
                moves.append(played)
                scores.append(int(score))
    return ValueSet(moves=moves, score=np.asarray(scores))


def immediate_wins(env: Env, states) -> np.ndarray:
    """bool [N, A]: playing the action wins at once."""

    def wins(state):
        mover = state.current_player
        after = jax.vmap(env.step, in_axes=(None, 0))(state, jnp.arange(env.num_actions))
        return state.legal_action_mask & (after.rewards[:, mover] > 0)

    return np.asarray(jax.jit(jax.vmap(wins))(states))


def load(env: Env) -> GroundTruth:
    """The solved `dev_set` positions (with the non-trivial subset `hard`) and the decided
    positions of the public benchmark sets (for the value sign)."""
    move_set = load_move_set()
    move_states = boards_from_moves(move_set.moves)
    legal = np.asarray(move_states.legal_action_mask)
    can_win = immediate_wins(env, move_states).any(axis=1)
    value_set = load_value_set()
    decided = value_set.score != 0
    return GroundTruth(
        states=move_states,
        right_moves=move_set.optimal,
        counted=np.ones(len(move_set.moves), bool),
        subsets={"hard": ~can_win & np.any(legal & ~move_set.optimal, axis=1)},
        value_states=boards_from_moves([m for m, d in zip(value_set.moves, decided) if d]),
        value_sign=np.sign(value_set.score[decided]),
    )


SOURCE = GroundTruthSource(metric="move_accuracy", complete=False, load=load,
                           subsets=("hard",), values=True)
