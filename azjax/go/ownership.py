"""The network's predicted ownership and score of a Go position, as GTP text: the
engine's `azjax-ownership` command and the second board of its `showboard`.

The network's auxiliary heads (`NetworkConfig.ownership_head`, `score_head`) predict,
from the view of the player to move, who owns each point at the game's end (in [-1, 1])
and the final margin per board point. Here both are turned to Black's view (+1: Black
owns it; a positive score: Black wins by that many points).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np

from envs.go_board import BLACK, COLUMNS

STRONG = 0.5
"""An owner shown as 'X' / 'O' from this predicted ownership (in absolute value) up."""
WEAK = 0.2
"""An owner shown as 'x' / 'o' from this up to `STRONG`; '.' below it."""


class Prediction(NamedTuple):
    """The network's view of a position, from Black's side."""

    ownership: np.ndarray  # float [size, size], row 0 the top line; +1 Black owns it
    score: float | None  # the final margin in points (Black minus White); None: no head


def has_ownership_head(agent) -> bool:
    """Whether the agent's network predicts ownership.

    Args:
      agent: a Go `azjax.run.Agent`.

    Returns:
      True when `program.network.ownership_head` is set.
    """
    return bool(agent.program.network.ownership_head)


def predictor(agent) -> Callable:
    """A function `state -> Prediction` from the agent's network and parameters: one
    jitted call of the network with its auxiliary heads (compiled on first use).
    ValueError if the network has no ownership head.

    Args:
      agent: a Go `azjax.run.Agent` whose network has an ownership head.

    Returns:
      `predict(state) -> Prediction` for one unbatched `GoState`: `ownership` (N, N)
      float64 and `score` a float or None, both from Black's view.

    Raises:
      ValueError: the network has no ownership head.
    """
    if not has_ownership_head(agent):
        raise ValueError("the network has no ownership head")
    network, params, size = agent.network, agent.params, agent.env.size
    apply = jax.jit(lambda params, obs: network.apply(params, obs, aux=True)[2])

    def predict(state) -> Prediction:
        heads = jax.device_get(apply(params, state.observation[None]))
        sign = 1.0 if int(state.current_player) == BLACK else -1.0
        ownership = sign * np.asarray(heads["ownership"][0], np.float64).reshape(size, size)
        score = heads.get("score")
        score = None if score is None else sign * float(score[0]) * size * size
        return Prediction(ownership, score)

    return predict


def _score_text(margin: float) -> str:
    """'score B+3.5' or 'score W+0.7': a predicted margin in points, one decimal.

    Args:
      margin: the predicted margin, Black minus White, in points.

    Returns:
      The text.
    """
    return f"score {'B' if margin >= 0 else 'W'}+{abs(margin):.1f}"


def ownership_lines(prediction: Prediction) -> list[str]:
    """The `azjax-ownership` reply: one line per board line from the top, each point's
    ownership from Black's view with 2 decimals, then the score line (if predicted).

    Args:
      prediction: the network's view of the position (`predictor`).

    Returns:
      N lines of N numbers, then the score line if there is a score.
    """
    lines = [" ".join(f"{round(float(v), 2) + 0.0:5.2f}" for v in row)
             for row in prediction.ownership]
    if prediction.score is not None:
        lines.append(_score_text(prediction.score))
    return lines


def mark(value: float) -> str:
    """A point's mark: 'X' / 'O' for a strong predicted owner, 'x' / 'o' for a weak one,
    '.' for none.

    Args:
      value: the predicted ownership, in [-1, 1], from Black's view.

    Returns:
      One character.
    """
    if abs(value) >= STRONG:
        return "X" if value > 0 else "O"
    if abs(value) >= WEAK:
        return "x" if value > 0 else "o"
    return "."


def ownership_board(prediction: Prediction) -> list[str]:
    """`showboard`'s second board: each point marked by its predicted owner (`mark`),
    framed as the first board, then the score line (if predicted).

    Args:
      prediction: the network's view of the position (`predictor`).

    Returns:
      The lines of text: a title, the framed board, and the score line if there is one.
    """
    size = prediction.ownership.shape[0]
    letters = "   " + " ".join(COLUMNS[:size])
    lines = [f"predicted ownership (X/O {STRONG:g} up, x/o {WEAK:g} up)", letters]
    for r, row in enumerate(prediction.ownership):
        lines.append(f"{size - r:>2} {' '.join(mark(float(v)) for v in row)} {size - r}")
    lines.append(letters)
    if prediction.score is not None:
        lines.append("predicted " + _score_text(prediction.score))
    return lines
