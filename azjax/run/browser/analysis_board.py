"""The analysis board: a position drawn with the agent's search on top of it.

`analyse_position(agent, state, key)` runs the agent's greedy search on one position and
brings its view to the host (`PositionAnalysis`): per move the visit share, the search's
value Q and the network's prior, the move chosen, the principal variation, and the right
moves where the game knows them (`known_right_moves`: the game's solver, else a position
of its ground truth). `analysis_picture` draws it on the game's picture (`Env.picture`)
with a table beside it; `analysis_board` does both in one call.
"""

from __future__ import annotations

import dataclasses
from html import escape

import chex
import jax
import numpy as np

from azjax.core.identity import cache_by_identity
from azjax.run.agents.agent import Agent
from envs import Env, State
from envs.picture import INK, Picture, disc, place, rect, ring, text

SHARE = "#2f6fde"
CHOSEN = "#f08a00"
RIGHT = "#1e9e48"
PANEL_WIDTH = 300.0
CHAR_WIDTH = 7.3  # of the panel's 12-pixel monospace font
LINE = 17.0


@dataclasses.dataclass(frozen=True)
class PositionAnalysis:
    """The agent's search from one live position, on the host. Values are from the point
    of view of the player to move, in [-1, 1].

    Attributes:
      state: the position (unbatched).
      action: the move the agent plays.
      visits: int [A] root visit counts; `share` float [A] the same as fractions.
      q: float [A] the search's value of each move (0 where not visited).
      prior: float [A] the network's policy over the legal moves.
      value, network_value: the search's and the network's value of the position.
      principal_variation: the expected line of play, first the agent's move.
      right_moves: bool [A] the moves that keep the game's value, or None if unknown.
      right_moves_from: where `right_moves` came from ('solver', 'ground truth', 'given').
    """

    state: State
    action: int
    visits: np.ndarray
    share: np.ndarray
    q: np.ndarray
    prior: np.ndarray
    value: float
    network_value: float
    principal_variation: tuple[int, ...]
    right_moves: np.ndarray | None = None
    right_moves_from: str = ""


@cache_by_identity(maxsize=8)
def _solver(env: Env):
    solver = env.solver()
    return None if solver is None else jax.jit(solver)


@cache_by_identity(maxsize=4)
def _ground_truth(env: Env) -> tuple[dict[bytes, int], np.ndarray] | None:
    source = env.ground_truth()
    if source is None:
        return None
    truth = source.load(env)
    states = jax.device_get(truth.states)
    index = {_position_key(np.asarray(obs), np.asarray(mask)): i for i, (obs, mask) in
             enumerate(zip(states.observation, states.legal_action_mask))}
    return index, np.asarray(truth.right_moves)


def _position_key(observation: np.ndarray, legal: np.ndarray) -> bytes:
    return np.packbits(observation != 0).tobytes() + np.packbits(legal).tobytes()


def known_right_moves(env: Env, state: State) -> tuple[np.ndarray | None, str]:
    """The right moves of one live position where the game knows them: its solver
    (`Env.solver`), else the position found in its ground truth (`Env.ground_truth`, by
    observation and legal moves); (None, '') otherwise."""
    solver = _solver(env)
    if solver is not None:
        return np.asarray(jax.device_get(solver(state))), "solver"
    truth = _ground_truth(env)
    if truth is not None:
        index, right_moves = truth
        state = jax.device_get(state)
        found = index.get(_position_key(np.asarray(state.observation),
                                        np.asarray(state.legal_action_mask)))
        if found is not None:
            return right_moves[found], "ground truth"
    return None, ""


def analyse_position(agent: Agent, state: State, key: chex.PRNGKey,
                     right_moves: np.ndarray | None = None) -> PositionAnalysis:
    """The agent's greedy search on one unbatched live state, on the host. `right_moves`
    (bool [A]) overrides what the game knows (`known_right_moves`). The key is consumed."""
    chex.assert_rank(state.legal_action_mask, 1)
    if bool(state.terminated):
        raise ValueError("analyse_position needs a live position; this game is over")
    found = jax.device_get(agent.analyse(jax.tree.map(lambda x: x[None], state), key))
    visits = np.asarray(found.visits[0]).astype(np.int64)
    source = "given"
    if right_moves is None:
        right_moves, source = known_right_moves(agent.env, state)
    else:
        right_moves = np.asarray(right_moves, bool)
        chex.assert_shape(right_moves, (agent.env.num_actions,))
    pv = tuple(int(a) for a in np.asarray(found.principal_variation[0]) if a >= 0)
    return PositionAnalysis(
        state=jax.device_get(state), action=int(found.action[0]), visits=visits,
        share=visits / max(1, visits.sum()), q=np.asarray(found.q[0], np.float64),
        prior=np.asarray(found.prior[0], np.float64), value=float(found.value[0]),
        network_value=float(found.network_value[0]), principal_variation=pv,
        right_moves=right_moves, right_moves_from=source if right_moves is not None else "")


def _line_of_play(env: Env, moves: tuple[int, ...]) -> str:
    return " ".join(env.format_move(a) for a in moves) or "-"


def analysis_picture(env: Env, analysis: PositionAnalysis, last_move: int | None = None,
                     top: int = 8) -> Picture:
    """The position's picture with the search on its spots (a blue disc sized by the
    visit share with the share in %, the chosen move ringed in orange, right moves
    ringed in green) and a panel beside it: the values, the `top` moves by visits with
    their share, Q and prior, and the principal variation."""
    board = env.picture(analysis.state, last_move=last_move)
    size = board.spot_size
    legal = np.asarray(analysis.state.legal_action_mask)
    marks = []
    for action, (x, y) in sorted(board.spots.items()):
        if not legal[action]:
            continue
        share = float(analysis.share[action])
        if share > 0:
            radius = size * (0.12 + 0.33 * np.sqrt(share))
            marks.append(disc(x, y, radius, SHARE, stroke="none", opacity=0.55))
            marks.append(text(x, y + size * 0.12, f"{round(100 * share)}", size * 0.32,
                              "white" if share > 0.25 else INK, weight="bold"))
        if analysis.right_moves is not None and analysis.right_moves[action]:
            marks.append(ring(x, y, size * 0.46, RIGHT, width=2.5))
        if action == analysis.action:
            marks.append(ring(x, y, size * 0.40, CHOSEN, width=3.5))
    board = board.add(*marks)

    lines = [
        (f"search value {analysis.value:+.2f}, network {analysis.network_value:+.2f}", INK),
        (f"plays {env.format_move(analysis.action)} "
         f"({int(analysis.visits.sum())} root visits)", CHOSEN),
        ("move   visits     Q    prior", "#555"),
    ]
    order = np.argsort(-analysis.visits, kind="stable")
    shown = [a for a in order[:top] if legal[a] and (analysis.visits[a] > 0 or a == order[0])]
    for a in shown:
        right = " right" if analysis.right_moves is not None and analysis.right_moves[a] else ""
        lines.append((f"{env.format_move(a):>5} {100 * analysis.share[a]:6.1f}% "
                      f"{analysis.q[a]:+6.2f} {100 * analysis.prior[a]:6.1f}%{right}",
                      RIGHT if right else INK))
    lines.append((f"line: {_line_of_play(env, analysis.principal_variation)}", INK))
    if analysis.right_moves is not None:
        right = [env.format_move(a) for a in np.flatnonzero(analysis.right_moves & legal)]
        lines.append((f"right moves ({analysis.right_moves_from}): "
                      f"{' '.join(right) or 'none'}", RIGHT))
    lines.append(("blue: visit share (%); ring: orange chosen, green right", "#777"))

    height = max(board.height, LINE * len(lines) + 24)
    panel = max(PANEL_WIDTH, CHAR_WIDTH * max(len(s) for s, _ in lines) + 20)
    out = Picture(board.width + panel, height, spots=board.spots, spot_size=size)
    out = out.add(rect(0, 0, out.width, height, "#ffffff"), place(board, 0, 0))
    x = board.width + 10
    for i, (s, colour) in enumerate(lines):
        out = out.add(f'<text x="{x:.0f}" y="{24 + i * LINE:.0f}" font-size="12" '
                      f'font-family="DejaVu Sans Mono, Menlo, monospace" fill="{colour}" '
                      f'xml:space="preserve">{escape(s)}</text>')
    return out


def analysis_board(agent: Agent, state: State, key: chex.PRNGKey | None = None,
                   last_move: int | None = None, right_moves: np.ndarray | None = None,
                   top: int = 8) -> Picture:
    """`analysis_picture` of `analyse_position` in one call (key: `jax.random.key(0)`
    when not given; the greedy search uses it only for its Gumbel or rollout draws)."""
    key = jax.random.key(0) if key is None else key
    found = analyse_position(agent, state, key, right_moves)
    return analysis_picture(agent.env, found, last_move=last_move, top=top)
