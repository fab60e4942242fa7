"""The GTP engine's predicted ownership: `azjax-ownership` and `showboard`'s second board,
on a 5x5 network whose ownership and score heads are set to known outputs."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from test_games_training import TINY
from test_gtp import fails, ok

from azjax import Agent
from azjax.core.networks import NetworkConfig, abstract_params
from azjax.go import ownership
from azjax.go.gtp_engine import Engine
from envs.go_board import COLUMNS, parse_move

SIZE = 5
OWNER_BIAS = 1.0  # every point's predicted ownership, mover's view: tanh(1) = 0.76
SCORE_BIAS = 0.1  # the predicted margin per point, mover's view: 2.5 points on 5x5
HEADS = NetworkConfig(channels=8, num_blocks=0, policy_filters=2, value_hidden=8,
                      ownership_head=True, score_head=True)


def agent_with(network: NetworkConfig, owner_bias: float = OWNER_BIAS) -> Agent:
    """A 5x5 agent with random weights (drawn with NumPy: nothing to compile) and, where
    it has the heads, their kernels zero and their biases set: known outputs."""
    config = TINY.replace(game="go", game_options={"size": SIZE, "komi": 0.5, "history": 2},
                          network=network)
    env = config.make_env()
    rng = np.random.default_rng(0)

    def leaf(path, shape):
        names = [getattr(key, "key", None) for key in path]
        for head, bias in (("ownership", owner_bias), ("score", SCORE_BIAS)):
            if head in names:
                value = bias if names[-1] == "bias" else 0.0
                return np.full(shape.shape, value, shape.dtype)
        return rng.normal(0, 0.3, shape.shape).astype(shape.dtype)

    params = jax.tree_util.tree_map_with_path(leaf, abstract_params(env, network))
    return Agent(env, config.program, params)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(agent_with(HEADS))


def numbers(text: str) -> tuple[np.ndarray, str]:
    """An `azjax-ownership` reply's rows of numbers and its score line."""
    lines = text.split("\n")
    assert lines[0] == ""  # the first line is empty, as showboard's
    return np.array([[float(v) for v in line.split()] for line in lines[1:-1]]), lines[-1]


def test_the_heads_are_where_the_test_sets_them():
    assert {"ownership", "score"} <= set(agent_with(HEADS).params["params"])


def test_ownership_is_listed_and_known(engine):
    assert "azjax-ownership" in ok(engine, "list_commands").split("\n")
    assert ok(engine, "known_command azjax-ownership") == "true"


def test_ownership_numbers_are_from_blacks_view(engine):
    ok(engine, "clear_board")
    expected = round(float(np.tanh(OWNER_BIAS)), 2)
    rows, score = numbers(ok(engine, "azjax-ownership"))  # Black to move
    assert rows.shape == (SIZE, SIZE)
    np.testing.assert_array_equal(rows, expected)
    assert score == f"score B+{SCORE_BIAS * SIZE * SIZE:.1f}" == "score B+2.5"
    ok(engine, "play black C3")  # White to move: the mover's view turns over
    rows, score = numbers(ok(engine, "azjax-ownership"))
    np.testing.assert_array_equal(rows, -expected)
    assert score == "score W+2.5"
    assert ok(engine, "azjax-ownership extra words") == ok(engine, "azjax-ownership")
    ok(engine, "clear_board")


def test_the_reply_has_two_decimals_and_no_negative_zero():
    prediction = ownership.Prediction(np.array([[0.756, -0.001], [-1.0, 0.2]]), -0.04)
    assert ownership.ownership_lines(prediction) == [" 0.76  0.00", "-1.00  0.20",
                                                     "score W+0.0"]
    assert ownership.ownership_lines(prediction._replace(score=None)) == [" 0.76  0.00",
                                                                         "-1.00  0.20"]


def test_marks_by_strength():
    assert [ownership.mark(v) for v in (0.9, 0.5, 0.3, 0.2, 0.1, 0.0, -0.19, -0.2, -0.49,
                                        -0.5, -1.0)] == list("XXxx...ooOO")


def test_showboard_adds_the_ownership_board(engine):
    ok(engine, "clear_board")
    ok(engine, "play black C3")
    lines = ok(engine, "showboard").split("\n")
    first = lines.index("move 1, komi 0.5, area: Black 25, White 0")
    assert lines[first + 1].startswith("predicted ownership")
    board = lines[first + 2:]
    assert board[0] == board[SIZE + 1] == "   A B C D E"
    assert board[1:SIZE + 1] == [f"{n:>2} O O O O O {n}" for n in range(SIZE, 0, -1)]
    assert board[SIZE + 2:] == ["predicted score W+2.5"]
    ok(engine, "clear_board")


def test_weak_owners_show_in_lower_case():
    engine = Engine(agent_with(HEADS, owner_bias=0.3))  # tanh(0.3) = 0.29
    lines = ok(engine, "showboard").split("\n")
    assert " 3 x x x x x 3" in lines
    assert "predicted score B+2.5" in lines


def test_a_network_without_the_head():
    engine = Engine(agent_with(NetworkConfig(channels=8, num_blocks=0, policy_filters=2,
                                             value_hidden=8)))
    assert fails(engine, "azjax-ownership") == "the network has no ownership head"
    assert engine.handle("azjax-ownership") == "? the network has no ownership head\n\n"
    lines = ok(engine, "showboard").split("\n")
    assert lines[-1] == "move 0, komi 0.5, area: Black 0, White 0"
    assert not any("predicted" in line for line in lines)


def test_no_score_line_without_a_score_head():
    engine = Engine(agent_with(NetworkConfig(channels=8, num_blocks=0, policy_filters=2,
                                             value_hidden=8, ownership_head=True)))
    rows, last = numbers(ok(engine, "azjax-ownership") + "\n")
    assert last == ""
    np.testing.assert_array_equal(rows, round(float(np.tanh(OWNER_BIAS)), 2))
    assert not any("score" in line for line in ok(engine, "showboard").split("\n"))


# Slow: compiles the network and its search on three board sizes.
@pytest.mark.slow
def test_a_network_with_pooled_heads_plays_every_board_size():
    """`boardsize N` for weights that fit every board: the game, the search and the
    ownership board follow the new size; back to the first size, all as before."""
    engine = Engine(agent_with(dataclasses.replace(HEADS, pooled_heads=True)))
    for size, bad_vertex in ((7, "H8"), (SIZE, "F5"), (9, "K9")):
        assert ok(engine, f"boardsize {size}") == ""
        rows, score = numbers(ok(engine, "azjax-ownership"))
        assert rows.shape == (size, size)
        assert score == f"score B+{SCORE_BIAS * size * size:.1f}"
        corner = f"{COLUMNS[size - 1]}{size}"  # the top right point
        ok(engine, f"play black {corner}")
        assert fails(engine, f"play white {bad_vertex}").startswith("syntax error")
        top_row = f"{size:>2} " + " ".join(["."] * (size - 1) + ["X"]) + f" {size}"
        assert top_row in ok(engine, "showboard").split("\n")
        move = ok(engine, "genmove white")
        assert move == "pass" or 0 <= parse_move(move, size) < size * size
        assert move != corner and engine.state.board.shape == (size * size,)
    for size in (1, 20):
        assert fails(engine, f"boardsize {size}") == "unacceptable size"
    assert engine.env.size == 9


def test_a_network_with_flat_heads_keeps_its_size():
    engine = Engine(agent_with(HEADS))
    assert fails(engine, "boardsize 7") == "unacceptable size"
    assert ok(engine, f"boardsize {SIZE}") == "" and engine.env.size == SIZE
