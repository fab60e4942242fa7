"""The analysis board: the search's view of a position (`Agent.analyse`'s Q, prior and
principal variation; `analyse_position`), the right moves the game knows (tic-tac-toe's
solver against plain-Python negamax, Connect Four's solved positions against a
plain-Python solver), and the picture drawn from them, checked against a search run and
walked apart from the call that draws it."""

from __future__ import annotations

import functools
import json
import xml.etree.ElementTree as ET

import jax
import numpy as np
import pytest
import ttt_reference as ref
from test_search import best_by_visits_prior_q
from test_serve import CONFIG

import envs
from azjax import Agent
from azjax.core.networks import init_params
from azjax.core.search import deterministic, make_search_fn, principal_variation, visit_counts
from azjax.run.browser.analysis_board import (
    CHOSEN,
    RIGHT,
    SHARE,
    analyse_position,
    analysis_board,
    known_right_moves,
)
from envs import connect_four

SVG = "{http://www.w3.org/2000/svg}"


@functools.cache
def agent() -> Agent:
    """test_serve's tic-tac-toe agent (its config, a network initialised from key 0), the
    initialisation compiled as one program (cheaper than its operations one by one)."""
    env = CONFIG.make_env()
    init = jax.jit(functools.partial(init_params, env, CONFIG.program.network))
    return Agent(env, CONFIG.program, init(jax.random.key(0)))


@functools.cache
def jitted_step(env):
    """`env.step` compiled once (eagerly, each of its operations would compile alone)."""
    return jax.jit(env.step)


def ttt_position(moves: list[int]):
    """The tic-tac-toe state and plain-Python board after cell indices `moves`."""
    env = agent().env
    state, board = env.init(jax.random.key(0)), (-1,) * 9
    for m in moves:
        state, board = jitted_step(env)(state, m), ref.play(board, m)
    return state, board


@functools.cache
def strong():
    """The tic-tac-toe agent with a 64-simulation PUCT search (one compiled analysis for
    the tests that use it)."""
    return agent().with_search(policy="puct", num_simulations=64)


def test_the_search_view_adds_up_and_its_line_is_playable():
    for moves in ([], [4], [0, 4, 8], [0, 3, 1]):
        state, board = ttt_position(moves)
        found = analyse_position(strong(), state, jax.random.key(len(moves)))
        legal = np.asarray(state.legal_action_mask)
        assert found.visits.sum() == 64 and np.allclose(found.share.sum(), 1.0)
        assert np.all(found.visits[~legal] == 0) and np.all(found.q[found.visits == 0] == 0)
        assert np.allclose(found.prior.sum(), 1.0, atol=1e-5) and np.all(found.prior[~legal] == 0)
        # PUCT plays the most visited move; of several, the one of highest prior
        top = found.visits == found.visits.max()
        assert top[found.action] and found.prior[found.action] == found.prior[top].max()
        line = found.principal_variation
        assert line[0] == found.action and 1 <= len(line) <= 8
        for move in line:  # each move of the line is legal where it is played
            assert move in ref.legal_moves(board)
            board = ref.play(board, move)
        assert all(isinstance(m, int) for m in line)


def test_q_of_a_winning_move_is_a_win_and_the_solver_marks_the_right_moves():
    # X: a1 (6), b1 (7); O: a3 (0), b3 (1): X to move wins at c1 (8) at once.
    state, board = ttt_position([6, 0, 7, 1])
    found = analyse_position(strong(), state, jax.random.key(0))
    # A deterministic fact of this network (the one initialised from key 0): the greedy
    # PUCT search draws nothing at random, so whether it tries the win is fixed, not a
    # statistical outcome. Once tried, the win's Q is exactly 1 whatever the network.
    assert found.visits[8] > 0 and found.q[8] == pytest.approx(1.0)
    right, source = known_right_moves(strong().env, state)
    expected = [m for m in ref.legal_moves(board) if -ref.negamax(ref.play(board, m))
                == ref.negamax(board)]
    assert source == "solver" and list(np.flatnonzero(right)) == expected and 8 in expected
    assert found.right_moves_from == "solver"
    assert list(np.flatnonzero(found.right_moves)) == expected


# --- a plain-Python Connect Four solver (independent of envs/ and of the solved set) -----

C4_ROWS, C4_COLS = 6, 7
C4_CELLS = C4_ROWS * C4_COLS
CENTRE_FIRST = (3, 2, 4, 1, 5, 0, 6)


def _top(col):
    return 1 << (C4_ROWS - 1 + col * (C4_ROWS + 1))


def _bottom(col):
    return 1 << (col * (C4_ROWS + 1))


def _column(col):
    return ((1 << C4_ROWS) - 1) << (col * (C4_ROWS + 1))


def _four(discs):
    """Whether a bitboard (a column per 7 bits, bottom first) holds four in a line."""
    for shift in (1, C4_ROWS + 1, C4_ROWS, C4_ROWS + 2):
        pairs = discs & (discs >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def _negamax(mine, taken, plies, alpha, beta):
    """The exact score for the player to move (alpha-beta): a win with its k-th disc
    scores 22 - k, a loss the negative of the winner's, a draw 0."""
    if plies == C4_CELLS:
        return 0
    for col in range(C4_COLS):
        if not taken & _top(col) and _four(mine | ((taken + _bottom(col)) & _column(col))):
            return (C4_CELLS + 1 - plies) // 2
    beta = min(beta, (C4_CELLS - 1 - plies) // 2)
    if alpha >= beta:
        return beta
    for col in CENTRE_FIRST:
        if not taken & _top(col):
            score = -_negamax(mine ^ taken, taken | (taken + _bottom(col)), plies + 1,
                              -beta, -alpha)
            if score >= beta:
                return score
            alpha = max(alpha, score)
    return alpha


def connect_four_position(moves: str) -> tuple[int, int]:
    """The bitboards (the player to move's discs, all discs) after `moves` (columns
    "1".."7")."""
    mine = taken = 0
    for digit in moves:
        mine ^= taken
        taken |= taken + _bottom(int(digit) - 1)
    return mine, taken


def connect_four_best_moves(moves: str) -> list[int]:
    """The columns (0-6) with the best exact score after `moves`."""
    mine, taken = connect_four_position(moves)
    scores = {}
    for col in range(C4_COLS):
        if taken & _top(col):
            continue
        if _four(mine | ((taken + _bottom(col)) & _column(col))):
            scores[col] = (C4_CELLS + 1 - len(moves)) // 2
        else:
            scores[col] = -_negamax(mine ^ taken, taken | (taken + _bottom(col)),
                                    len(moves) + 1, -C4_CELLS, C4_CELLS)
    best = max(scores.values())
    return sorted(col for col, score in scores.items() if score == best)


# Positions of the solved set the game reads (envs/data/connect4/dev_set.jsonl), late
# enough for the plain-Python solver: several right moves, a full column, a losing move
# among drawn or won ones, and two wins told apart by their speed alone.
C4_SOLVED = ("4672337771663175642624123247", "72763751565545166564764211734",
             "5325222113466723713621557563777")


def test_connect_four_right_moves_come_from_its_solved_positions():
    env = envs.make("connect_four")
    expected = [connect_four_best_moves(moves) for moves in C4_SOLVED]
    assert expected == [[0, 1, 2, 3, 5], [2, 3], [2, 3, 4]]
    for moves, best in zip(C4_SOLVED, expected):
        state = env.init(jax.random.key(0))
        for digit in moves:  # the position reached by the game's own moves
            state = jitted_step(env)(state, int(digit) - 1)
        right, source = known_right_moves(env, state)
        assert source == "ground truth"
        assert list(np.flatnonzero(right)) == best
    # A position the solved set does not hold (no game of its file reaches that board):
    # nothing known.
    solved = [json.loads(line)["moves"] for line in
              (connect_four.DATA_DIR / "dev_set.jsonl").read_text().splitlines() if line]
    assert len(solved) == 1000 and all(moves in solved for moves in C4_SOLVED)
    assert connect_four_position("1111777") not in {connect_four_position(m) for m in solved}
    state = env.init(jax.random.key(0))
    for column in (0, 0, 0, 0, 6, 6, 6):
        state = jitted_step(env)(state, column)
    assert known_right_moves(env, state) == (None, "")


def walk_line(output, b: int, first: int, length: int, taken=()) -> list[int]:
    """Search tree b's line from its root, walked in plain Python: `first`, then the most
    visited child of each node, of those the highest prior, then the highest Q
    (`best_by_visits_prior_q`), while the move was explored. Where a tie is left, the move
    of `taken` (the line under test) if it is one of the tied moves."""
    visits = np.asarray(output.search_tree.children_visits[b])
    index = np.asarray(output.search_tree.children_index[b])
    node, line = 0, []
    for ply in range(length):
        if ply == 0:
            move = first
        else:
            tied = np.flatnonzero(best_by_visits_prior_q(output, node)[b])
            move = int(taken[ply]) if ply < len(taken) and taken[ply] in tied else int(tied[0])
        if node < 0 or visits[node, move] == 0:
            break
        line.append(move)
        node = int(index[node, move])
    return line


def plain_search(ttt, states, key):
    """The agent's greedy search run directly (not through `Agent.analyse`)."""
    search_fn = jax.jit(make_search_fn(ttt.env, ttt.network.apply, ttt.search_config))
    return search_fn(ttt.params, deterministic(ttt.search_config.as_arrays()), key, states)


@pytest.mark.parametrize("searcher", ["gumbel", "puct"])
def test_the_board_draws_the_search_on_the_moves_spots(searcher):
    """The agent's own Gumbel search (4 simulations: its move need not be the most
    visited, its line is one move) and the 64-simulation PUCT one (a longer line)."""
    ttt = agent() if searcher == "gumbel" else strong()
    env = ttt.env
    assert ttt.search_config.policy == searcher
    state, board = ttt_position([4])
    picture = analysis_board(ttt, state, last_move=4)  # with jax.random.key(0)
    # What the picture must show, found apart from the call that draws it: the search
    # run directly with the key the analysis searches with, its greedy move (Gumbel's
    # choice, PUCT's most visited: here no tie), its line walked in plain Python, the
    # right moves from plain negamax.
    search_key = jax.random.split(jax.random.key(0), 3)[0]
    output = plain_search(ttt, jax.tree.map(lambda x: x[None], state), search_key)
    visits = np.asarray(visit_counts(output))[0]
    best = np.flatnonzero(best_by_visits_prior_q(output, 0)[0])
    assert searcher == "gumbel" or len(best) == 1
    action = int(output.action[0]) if searcher == "gumbel" else int(best[0])
    line = walk_line(output, 0, action, min(8, ttt.search_config.num_simulations))
    right = [m for m in ref.legal_moves(board)
             if -ref.negamax(ref.play(board, m)) == ref.negamax(board)]
    assert visits.sum() == ttt.search_config.num_simulations
    assert len(line) >= (1 if searcher == "gumbel" else 2)
    assert 0 < len(right) < len(ref.legal_moves(board))

    root = ET.fromstring(picture.svg())
    circles = list(root.iter(f"{SVG}circle"))

    def centres(stroke=None, fill=None):
        return sorted((round(float(c.get("cx")), 1), round(float(c.get("cy")), 1))
                      for c in circles if (stroke is None or c.get("stroke") == stroke)
                      and (fill is None or c.get("fill") == fill))

    def spots(moves):
        return sorted((round(picture.spots[m][0], 1), round(picture.spots[m][1], 1))
                      for m in moves)

    assert centres(fill=SHARE) == spots(np.flatnonzero(visits))
    assert centres(stroke=CHOSEN) == spots([action])
    assert centres(stroke=RIGHT) == spots(right)
    text = [t.text or "" for t in root.iter(f"{SVG}text")]
    for move in np.flatnonzero(visits):  # each disc's share, in %
        assert str(round(100 * visits[move] / visits.sum())) in text
    text = " ".join(text)
    assert f"plays {env.format_move(action)}" in text
    assert f"line: {' '.join(env.format_move(a) for a in line)}" in text
    assert f"right moves (solver): {' '.join(env.format_move(a) for a in right)}" in text
    with pytest.raises(ValueError, match="game is over"):
        analyse_position(ttt, ttt_position([0, 3, 1, 4, 2])[0], jax.random.key(0))


def test_the_principal_variation_walks_the_most_visited_children():
    """`principal_variation` against a plain walk of the same search tree."""
    ttt = agent().with_search(policy="puct", num_simulations=48)
    env = ttt.env
    states = jax.jit(lambda keys, moves: jax.vmap(env.step)(jax.vmap(env.init)(keys), moves))(
        jax.random.split(jax.random.key(0), 3), jax.numpy.array([4, 0, 8]))
    output = plain_search(ttt, states, jax.random.key(1))
    visits = np.asarray(output.search_tree.children_visits)
    # The first move is the caller's (Gumbel's choice need not be the most visited): here
    # the most visited root child, and the second most visited one for the last position.
    order = np.argsort(-visits[:, 0], axis=1, kind="stable")
    first = np.array([order[0, 0], order[1, 0], order[2, 1]])
    lines = np.asarray(principal_variation(output, jax.numpy.asarray(first), 6,
                                           jax.random.key(2)))
    for b in range(3):
        expected = walk_line(output, b, int(first[b]), 6, taken=lines[b])
        assert list(lines[b]) == expected + [-1] * (6 - len(expected))
        assert len(expected) >= 2  # 48 simulations reach beyond the root's children
