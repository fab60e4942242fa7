"""The analysis board: the search's view of a position (`Agent.analyse`'s Q, prior and
principal variation; `analyse_position`), the right moves the game knows (tic-tac-toe's
solver against plain-Python negamax, Connect Four's solved positions), and the picture
drawn from them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import numpy as np
import pytest
import ttt_reference as ref
from test_serve import agent

from azjax.core.search import deterministic, make_search_fn, principal_variation
from azjax.run.analysis_board import (
    CHOSEN,
    RIGHT,
    SHARE,
    analyse_position,
    analysis_board,
    known_right_moves,
)

SVG = "{http://www.w3.org/2000/svg}"


def ttt_position(moves: list[int]):
    """The tic-tac-toe state and plain-Python board after cell indices `moves`."""
    env = agent().env
    state, board = env.init(jax.random.key(0)), (-1,) * 9
    for m in moves:
        state, board = env.step(state, m), ref.play(board, m)
    return state, board


def test_the_search_view_adds_up_and_its_line_is_playable():
    strong = agent().with_search(policy="puct", num_simulations=64)
    env = strong.env
    for moves in ([], [4], [0, 4, 8], [0, 3, 1]):
        state, board = ttt_position(moves)
        found = analyse_position(strong, state, jax.random.key(len(moves)))
        legal = np.asarray(state.legal_action_mask)
        assert found.visits.sum() == 64 and np.allclose(found.share.sum(), 1.0)
        assert np.all(found.visits[~legal] == 0) and np.all(found.q[found.visits == 0] == 0)
        assert np.allclose(found.prior.sum(), 1.0, atol=1e-5) and np.all(found.prior[~legal] == 0)
        assert found.action == np.argmax(found.visits)  # PUCT plays the most visited move
        line = found.principal_variation
        assert line[0] == found.action and 1 <= len(line) <= 8
        for move in line:  # each move of the line is legal where it is played
            assert move in ref.legal_moves(board)
            board = ref.play(board, move)
        assert all(isinstance(m, int) for m in line)
    del env


def test_q_of_a_winning_move_is_a_win_and_the_solver_marks_the_right_moves():
    # X: a1 (6), b1 (7); O: a3 (0), b3 (1): X to move wins at c1 (8) at once.
    state, board = ttt_position([6, 0, 7, 1])
    strong = agent().with_search(policy="puct", num_simulations=64)
    found = analyse_position(strong, state, jax.random.key(0))
    assert found.visits[8] > 0 and found.q[8] == pytest.approx(1.0)
    right, source = known_right_moves(strong.env, state)
    expected = [m for m in ref.legal_moves(board) if -ref.negamax(ref.play(board, m))
                == ref.negamax(board)]
    assert source == "solver" and list(np.flatnonzero(right)) == expected and 8 in expected
    assert found.right_moves_from == "solver"
    assert list(np.flatnonzero(found.right_moves)) == expected


def test_connect_four_right_moves_come_from_its_solved_positions():
    c4 = agent("connect_four")
    env = c4.env
    truth = env.ground_truth().load(env)
    for i in (0, 17, 400):
        position = jax.tree.map(lambda x, i=i: x[i], truth.states)
        right, source = known_right_moves(env, position)
        assert source == "ground truth"
        assert np.array_equal(right, truth.right_moves[i])
    # A position the solved set does not hold: nothing known.
    state = env.init(jax.random.key(0))
    seen = {np.asarray(o).tobytes() for o in jax.device_get(truth.states.observation)}
    for column in (0, 0, 0, 0, 6, 6, 6):
        state = env.step(state, column)
    assert np.asarray(jax.device_get(state.observation)).tobytes() not in seen
    assert known_right_moves(env, state) == (None, "")


def test_the_board_draws_the_search_on_the_moves_spots():
    ttt = agent()
    state, _ = ttt_position([4])
    picture = analysis_board(ttt, state, last_move=4)
    found = analyse_position(ttt, state, jax.random.key(0))
    root = ET.fromstring(picture.svg())
    circles = [e for e in root.iter(f"{SVG}circle")]
    shares = [c for c in circles if c.get("fill") == SHARE]
    assert len(shares) == int(np.count_nonzero(found.visits))
    chosen = [c for c in circles if c.get("stroke") == CHOSEN]
    assert len(chosen) == 1
    x, y = picture.spots[found.action]
    assert (float(chosen[0].get("cx")), float(chosen[0].get("cy"))) == pytest.approx((x, y), abs=0.1)
    right = [c for c in circles if c.get("stroke") == RIGHT]
    assert len(right) == int(np.count_nonzero(found.right_moves))
    text = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert f"plays {ttt.env.format_move(found.action)}" in text
    line = " ".join(ttt.env.format_move(a) for a in found.principal_variation)
    assert f"line: {line}" in text and "right moves (solver)" in text
    with pytest.raises(ValueError, match="game is over"):
        analyse_position(ttt, ttt_position([0, 3, 1, 4, 2])[0], jax.random.key(0))


def test_the_principal_variation_walks_the_most_visited_children():
    """`principal_variation` against a plain walk of the same search tree."""
    ttt = agent().with_search(policy="puct", num_simulations=48)
    env, config = ttt.env, ttt.search_config
    search_fn = make_search_fn(env, ttt.network.apply, config)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(0), 3))
    states = jax.vmap(env.step)(states, jax.numpy.array([4, 0, 8]))
    output = search_fn(ttt.params, deterministic(config.as_arrays()), jax.random.key(1),
                       states)
    index = np.asarray(output.search_tree.children_index)
    visits = np.asarray(output.search_tree.children_visits)
    # The first move is the caller's (Gumbel's choice need not be the most visited): here
    # the most visited root child, and the second most visited one for the last position.
    order = np.argsort(-visits[:, 0], axis=1, kind="stable")
    first = np.array([order[0, 0], order[1, 0], order[2, 1]])
    lines = np.asarray(principal_variation(output, jax.numpy.asarray(first), 6))
    for b in range(3):
        node, expected = 0, []
        for ply in range(6):
            move = int(first[b]) if ply == 0 else int(np.argmax(visits[b, node]))
            if node < 0 or visits[b, node, move] == 0:
                break
            expected.append(move)
            node = int(index[b, node, move])
        assert list(lines[b]) == expected + [-1] * (6 - len(expected))
        assert len(expected) >= 2  # 48 simulations reach beyond the root's children
