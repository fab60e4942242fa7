"""Connect Four against the exact solver benchmark positions shipped in `azjax/data/connect4`.

* Move accuracy: on the 1,000 `dev_set.jsonl` positions (random play, 4-36 plies, each
  move's exact score), the share where the agent picks a move with the best score; also
  on the non-trivial ones (no immediate win exists and at least one legal move is not
  optimal), since random play makes about half of them easy.
* Value accuracy: on the 6,000 positions of the public `Test_L*_R*` sets, the share of
  decided positions (score != 0) where the sign of the network's value is right.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np

from azjax.players import network_player, search_player
from azjax.search import SearchConfig
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


class ConnectFourEvaluator:
    """Scores a Connect Four network (alone and with search) on solved positions."""

    def __init__(self, env: Env, apply_fn, search_config: SearchConfig):
        move_set = load_move_set()
        self.move_states = boards_from_moves(move_set.moves)
        self.optimal = move_set.optimal
        legal = np.asarray(self.move_states.legal_action_mask)
        can_win = immediate_wins(env, self.move_states).any(axis=1)
        self.hard = ~can_win & np.any(legal & ~self.optimal, axis=1)

        value_set = load_value_set()
        decided = value_set.score != 0
        self.value_states = boards_from_moves([m for m, d in zip(value_set.moves, decided) if d])
        self.value_sign = np.sign(value_set.score[decided])

        self._network = jax.jit(
            lambda params: network_player(apply_fn, params).act(self.move_states, None)
        )
        self._value = jax.jit(lambda params: apply_fn(params, self.value_states.observation)[1])
        self._search = jax.jit(
            lambda params, key: search_player(env, apply_fn, params, search_config).act(
                self.move_states, key
            )
        )

    def score(self, actions: np.ndarray, prefix: str) -> dict[str, float]:
        """Share of positions (all, and the non-trivial ones) where `actions` are optimal."""
        actions = np.asarray(actions)
        right = self.optimal[np.arange(len(actions)), actions]
        return {
            f"{prefix}move_accuracy": float(right.mean()),
            f"{prefix}move_accuracy_hard": float(right[self.hard].mean()),
        }

    def network_metrics(self, params) -> dict[str, float]:
        """Move accuracy of the policy head's argmax and value-sign accuracy."""
        metrics = self.score(jax.device_get(self._network(params)), "net_")
        value = np.asarray(jax.device_get(self._value(params)))
        metrics["net_value_accuracy"] = float(np.mean(np.sign(value) == self.value_sign))
        metrics["perfect"] = 0.0
        return metrics

    def search_metrics(self, params, key: chex.PRNGKey) -> dict[str, float]:
        """Move accuracy of network + search at the training budget, noise off."""
        return self.score(jax.device_get(self._search(params, key)), "search_")
