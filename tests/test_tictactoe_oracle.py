"""The tic-tac-toe oracle checked against a solver written differently: the package's
solver (`envs.tictactoe_minimax`), the evaluator's ground truth, and the evaluator's
verdicts on a perfect player and on players with known flaws.

The solver here shares no code with the package's (nor with `ttt_reference`): a position
is a pair of 9-bit masks (X's stones, O's stones), the winning lines are generated from
the grid's geometry, every reachable position is enumerated breadth-first level by level
(level k = k stones), and game values are propagated backwards from level 9 down to
level 0 (retrograde analysis: no recursion, no memoised search). Values are from X's
side: +1 X wins, -1 O wins, 0 draw.

Optimal moves follow the package's definition ("moves that keep the game value"): every
move whose resulting position has the position's own value, so equal-valued moves are
all optimal (a slow win is as optimal as a quick one) and a terminal position has none.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from azjax.core.players import network_player
from azjax.evaluation.evaluators import PositionEvaluator, make_evaluator
from envs import tictactoe_minimax as minimax
from envs.tictactoe import SeatCheck

FULL = (1 << 9) - 1
X, O = 0, 1
LIVE = 4520


def share(right: int):
    """A share of right moves out of the 4,520 live positions, to float precision."""
    return pytest.approx(right / LIVE, rel=0, abs=1e-12)


def _line_masks() -> tuple[int, ...]:
    """Every run of 3 cells in a straight line (row, column, diagonal) of the 3x3 grid."""
    masks = []
    for row in range(3):
        for col in range(3):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(row + i * dr, col + i * dc) for i in range(3)]
                if all(0 <= r < 3 and 0 <= c < 3 for r, c in cells):
                    masks.append(sum(1 << (3 * r + c) for r, c in cells))
    return tuple(masks)


LINE_MASKS = _line_masks()


def has_line(stones: int) -> bool:
    return any(stones & mask == mask for mask in LINE_MASKS)


def mover(pos: tuple[int, int]) -> int:
    return (pos[0] | pos[1]).bit_count() % 2


def is_terminal(pos: tuple[int, int]) -> bool:
    return has_line(pos[0]) or has_line(pos[1]) or (pos[0] | pos[1]) == FULL


def children(pos: tuple[int, int]) -> list[tuple[int, tuple[int, int]]]:
    """(move, position after it) for each empty cell of a live position."""
    if is_terminal(pos):
        return []
    x, o = pos
    empty = FULL & ~(x | o)
    turn = mover(pos)
    return [(m, (x | 1 << m, o) if turn == X else (x, o | 1 << m))
            for m in range(9) if empty >> m & 1]


class Retrograde:
    """Every reachable position by level, with its value (X's side) and optimal moves."""

    def __init__(self):
        self.levels: list[list[tuple[int, int]]] = [[(0, 0)]]
        for _ in range(9):
            following = {child for pos in self.levels[-1] for _, child in children(pos)}
            self.levels.append(sorted(following))
        self.value: dict[tuple[int, int], int] = {}
        for k in range(9, -1, -1):
            for pos in self.levels[k]:
                if has_line(pos[0]):
                    self.value[pos] = 1
                elif has_line(pos[1]):
                    self.value[pos] = -1
                elif k == 9:
                    self.value[pos] = 0
                else:
                    below = [self.value[child] for _, child in children(pos)]
                    self.value[pos] = max(below) if k % 2 == 0 else min(below)
        self.live = [p for level in self.levels for p in level if not is_terminal(p)]
        self.optimal = {p: frozenset(m for m, child in children(p)
                                     if self.value[child] == self.value[p])
                        for p in self.live}

    def mover_value(self, pos) -> int:
        """The value for the player to move (the package's convention)."""
        return self.value[pos] if mover(pos) == X else -self.value[pos]


SOLVED = Retrograde()
PERFECT = {p: min(moves) for p, moves in SOLVED.optimal.items()}


def from_board(board) -> tuple[int, int]:
    """A package board (-1 empty, 0 X, 1 O; 9 cells) as (X's mask, O's mask)."""
    cells = [int(v) for v in board]
    return (sum(1 << i for i, v in enumerate(cells) if v == 0),
            sum(1 << i for i, v in enumerate(cells) if v == 1))


def mask(moves) -> np.ndarray:
    return np.isin(np.arange(9), list(moves))


def reached(policy, seat: int, replies) -> set:
    """Positions met when `seat` plays `policy` and the opponent any of `replies(pos)`."""
    seen, frontier = {(0, 0)}, [(0, 0)]
    while frontier:
        pos = frontier.pop()
        if is_terminal(pos):
            continue
        moves = {policy[pos]} if mover(pos) == seat else replies(pos)
        for m, child in children(pos):
            if m in moves and child not in seen:
                seen.add(child)
                frontier.append(child)
    return seen


def any_reply(pos):
    return set(range(9))


def optimal_reply(pos):
    return SOLVED.optimal[pos]


def guaranteed(policy, seat: int) -> int:
    """The outcome (X's side) of `seat` playing `policy` against the opponent's best,
    by the same backward pass over levels."""
    outcome = {}
    for k in range(9, -1, -1):
        for pos in SOLVED.levels[k]:
            if is_terminal(pos):
                outcome[pos] = SOLVED.value[pos]
                continue
            below = {m: outcome[child] for m, child in children(pos)}
            if mover(pos) == seat:
                outcome[pos] = below[policy[pos]]
            else:
                outcome[pos] = min(below.values()) if seat == X else max(below.values())
    return outcome[(0, 0)]


def count_losing_lines(policy, seat: int) -> int:
    """How many games `seat` loses playing `policy` against every opponent reply (paths
    counted forward, level by level)."""
    paths = {(0, 0): 1}
    losses = 0
    for level in SOLVED.levels:
        for pos in level:
            n = paths.get(pos, 0)
            if not n:
                continue
            if has_line(pos[1 - seat]):
                losses += n
            for m, child in children(pos):
                if mover(pos) != seat or m == policy[pos]:
                    paths[child] = paths.get(child, 0) + n
    return losses


def replay(line) -> list[tuple[int, int]]:
    """The positions of a game from the empty board (each move legal by these rules)."""
    positions = [(0, 0)]
    for move in line:
        after = dict(children(positions[-1]))
        assert move in after, f"illegal move {move} in {positions[-1]}"
        positions.append(after[move])
    return positions


def choose(policy):
    """A `losing_lines` player: the policy's move on a package board."""
    return lambda board: policy[from_board(board)]


def table_network(policy):
    """A fake `apply_fn` playing `policy`: it reads the position off the observation
    (the mover's stones, the opponent's, a plane all 1 when X moves) and looks its move
    up; an observation against that convention gets no preference."""
    table = np.zeros((1 << 18, 9), np.float32)
    for (x, o), move in policy.items():
        table[x | o << 9, move] = 1.0
    table = jnp.asarray(table)
    bits = jnp.asarray(1 << np.arange(9), jnp.int32)

    def apply_fn(params, obs):
        del params
        cells = obs.reshape(obs.shape[0], 9, 3).astype(jnp.int32)
        own, theirs = cells[..., 0], cells[..., 1]
        x_turn = own.sum(1, keepdims=True) == theirs.sum(1, keepdims=True)
        xs, os = jnp.where(x_turn, own, theirs), jnp.where(x_turn, theirs, own)
        code = (xs * bits).sum(1) | ((os * bits).sum(1) << 9)
        side_plane_right = jnp.all(cells[..., 2] == x_turn, axis=1, keepdims=True)
        return table[code] * side_plane_right, jnp.zeros(obs.shape[0])

    return apply_fn


def with_moves(changes):
    policy = dict(PERFECT)
    policy.update(changes)
    return policy


def first_flaw(positions, seat: int, bad_value: int):
    """The first position (in order) among `positions` where `seat` moves and has a move
    to a position of value `bad_value`; with that move."""
    for pos in sorted(positions):
        if not is_terminal(pos) and mover(pos) == seat:
            for m, child in children(pos):
                if SOLVED.value[child] == bad_value:
                    return pos, m
    raise AssertionError(f"no position with a move of value {bad_value} for seat {seat}")


def losing_move_reached_by_perfect_play(seat: int):
    """A losing move in a position the seat's perfect table reaches against a perfect
    opponent (so a perfect opponent punishes it)."""
    return first_flaw(reached(PERFECT, seat, optimal_reply), seat, -1 if seat == X else 1)


@pytest.fixture(scope="module")
def evaluator() -> PositionEvaluator:
    return make_evaluator(envs.make("tictactoe"))


@pytest.fixture(scope="module")
def truth_positions(evaluator):
    """The evaluator's positions, in its order, as (X's mask, O's mask)."""
    return [from_board(b) for b in np.asarray(evaluator.truth.states.board)]


def net_metrics(evaluator, policy, truth_positions):
    """The evaluator's metrics of a network playing `policy` (checked to play it)."""
    player = network_player(table_network(policy))
    np.testing.assert_array_equal(evaluator.actions(player),
                                  [policy[p] for p in truth_positions])
    return evaluator.network_metrics(player)


# ------------------------------------------------------------------- position counts


def test_retrograde_counts_match_the_known_values():
    """5,478 reachable positions (1, 9, 72, 252, 756, 1,260, 1,520, 1,140, 390, 78 by
    stones), 4,520 live; 958 terminal: X wins 626, O wins 316, draws 16; a draw."""
    assert [len(level) for level in SOLVED.levels] == [
        1, 9, 72, 252, 756, 1260, 1520, 1140, 390, 78]
    positions = [p for level in SOLVED.levels for p in level]
    assert len(positions) == len(set(positions)) == 5478
    assert len(SOLVED.live) == 4520
    ended = [p for p in positions if is_terminal(p)]
    assert len(ended) == 958
    assert sum(has_line(x) for x, _ in ended) == 626
    assert sum(has_line(o) for _, o in ended) == 316
    assert sum(not has_line(x) and not has_line(o) for x, o in ended) == 16
    assert SOLVED.value[(0, 0)] == 0
    assert len(LINE_MASKS) == 8


def test_package_enumerates_the_same_positions():
    solution = minimax.solution()
    boards = [tuple(int(v) for v in b) for b in solution.boards]
    assert len(boards) == 5478 and solution.terminal.sum() == 958
    assert len(solution.live) == 4520
    assert {from_board(b) for b in boards} == {p for level in SOLVED.levels for p in level}
    winners = [minimax.winner(b) for b, t in zip(boards, solution.terminal) if t]
    assert (winners.count(0), winners.count(1), winners.count(None)) == (626, 316, 16)
    assert minimax.value((minimax.EMPTY,) * 9) == 0
    for b, t in zip(boards, solution.terminal):
        assert t == is_terminal(from_board(b))


def test_evaluator_ground_truth_has_every_live_position_once(evaluator, truth_positions):
    truth = evaluator.truth
    assert evaluator.can_be_perfect
    assert len(truth_positions) == len(set(truth_positions)) == 4520
    assert set(truth_positions) == set(SOLVED.live)


# ------------------------------------------------------------ agreement, every position


def test_package_solver_agrees_on_every_value_and_optimal_move_set():
    solution = minimax.solution()
    for row, board in enumerate(solution.boards):
        board = tuple(int(v) for v in board)
        pos = from_board(board)
        assert minimax.value(board) == solution.values[row] == SOLVED.mover_value(pos), board
        expected = SOLVED.optimal.get(pos, frozenset())
        assert set(minimax.optimal_moves(board)) == expected, board
        np.testing.assert_array_equal(solution.optimal[row], mask(expected), err_msg=str(board))
        assert set(minimax.legal_moves(board)) == {m for m, _ in children(pos)}, board


def test_ground_truth_right_moves_are_the_optimal_moves(evaluator, truth_positions):
    truth = evaluator.truth
    expected = np.array([mask(SOLVED.optimal[p]) for p in truth_positions])
    np.testing.assert_array_equal(truth.right_moves, expected)
    assert truth.counted.dtype == bool and truth.counted.all()
    legal = np.array([mask(m for m, _ in children(p)) for p in truth_positions])
    np.testing.assert_array_equal(np.asarray(truth.states.legal_action_mask), legal)
    # The `solver` player's lookup table says the same.
    solver = jax.vmap(envs.make("tictactoe").solver())(truth.states)
    np.testing.assert_array_equal(np.asarray(solver), expected)


# ------------------------------------------------------------------ the evaluator


def test_oracle_network_from_the_retrograde_solver_is_perfect(evaluator, truth_positions):
    metrics = net_metrics(evaluator, PERFECT, truth_positions)
    assert metrics == {"net_optimal_share": 1.0, "net_unbeatable_first": 1.0,
                       "net_unbeatable_second": 1.0, "net_unbeatable": 1.0, "perfect": 1.0}


@pytest.mark.parametrize("seat", [X, O])
def test_one_losing_move_from_one_seat_is_caught_for_that_seat_only(
        evaluator, truth_positions, seat):
    pos, move = losing_move_reached_by_perfect_play(seat)
    flawed = with_moves({pos: move})
    assert guaranteed(flawed, seat) == (-1 if seat == X else 1)  # a perfect opponent wins
    assert guaranteed(flawed, 1 - seat) == 0
    metrics = net_metrics(evaluator, flawed, truth_positions)
    assert metrics == {"net_optimal_share": share(LIVE - 1),
                       "net_unbeatable_first": float(seat != X),
                       "net_unbeatable_second": float(seat != O),
                       "net_unbeatable": 0.0, "perfect": 0.0}


def test_missed_wins_cost_optimal_share_but_not_unbeatability(evaluator, truth_positions):
    """X draws instead of winning in every position its perfect table reaches where it
    could: not optimal there, yet it never loses."""
    reach = reached(PERFECT, X, any_reply)
    misses = {}
    for pos in sorted(reach):
        if not is_terminal(pos) and mover(pos) == X and SOLVED.value[pos] == 1:
            draws = [m for m, child in children(pos) if SOLVED.value[child] == 0]
            if draws:
                misses[pos] = draws[0]
    assert len(misses) > 1
    flawed = with_moves(misses)
    assert guaranteed(flawed, X) == 0 and guaranteed(flawed, O) == 0
    metrics = net_metrics(evaluator, flawed, truth_positions)
    assert metrics == {"net_optimal_share": share(LIVE - len(misses)),
                       "net_unbeatable_first": 1.0, "net_unbeatable_second": 1.0,
                       "net_unbeatable": 1.0, "perfect": 0.0}


def test_blunder_only_a_weak_opponent_allows_is_still_caught(evaluator, truth_positions):
    """X loses in a position reached only after O played a losing move: the unbeatable
    check tries every O reply, so it finds the game."""
    only_weak = reached(PERFECT, X, any_reply) - reached(PERFECT, X, optimal_reply)
    pos, move = first_flaw(only_weak, X, -1)
    flawed = with_moves({pos: move})
    # The table is unbeatable by optimal O moves: they never lead there.
    assert pos not in reached(flawed, X, optimal_reply)
    assert guaranteed(flawed, X) == -1
    metrics = net_metrics(evaluator, flawed, truth_positions)
    assert metrics == {"net_optimal_share": share(LIVE - 1),
                       "net_unbeatable_first": 0.0, "net_unbeatable_second": 1.0,
                       "net_unbeatable": 0.0, "perfect": 0.0}
    lines = minimax.losing_lines(choose(flawed), X)
    assert lines
    for line in lines:
        positions = replay(line)
        assert any(line[i] not in SOLVED.optimal[positions[i]] for i in range(1, len(line), 2))


def test_random_network_is_far_from_perfect_and_beatable_from_both_seats(
        evaluator, truth_positions):
    rng = np.random.default_rng(0)
    policy = {p: int(rng.choice([m for m, _ in children(p)])) for p in SOLVED.live}
    # Any seed: a uniform table is unbeatable as O with chance below 8**-4 (each corner
    # opening has one drawing reply), and as X it rarely blocks every threat.
    assert guaranteed(policy, X) == -1 and guaranteed(policy, O) == 1
    right = sum(policy[p] in SOLVED.optimal[p] for p in truth_positions)
    assert right < 0.8 * LIVE
    metrics = net_metrics(evaluator, policy, truth_positions)
    assert metrics == {"net_optimal_share": share(right), "net_unbeatable_first": 0.0,
                       "net_unbeatable_second": 0.0, "net_unbeatable": 0.0, "perfect": 0.0}


# ------------------------------------------------------------------- losing_lines


@pytest.mark.parametrize("seat", [X, O])
def test_losing_lines_none_for_the_retrograde_player(seat):
    assert minimax.losing_lines(choose(PERFECT), seat) == []
    assert count_losing_lines(PERFECT, seat) == 0


@pytest.mark.parametrize("seat", [X, O])
def test_losing_lines_are_every_game_through_the_flaw(seat):
    pos, move = losing_move_reached_by_perfect_play(seat)
    flawed = with_moves({pos: move})
    lines = minimax.losing_lines(choose(flawed), seat)
    assert len(lines) == len({tuple(line) for line in lines}) == count_losing_lines(flawed, seat)
    assert lines and count_losing_lines(flawed, 1 - seat) == 0
    assert minimax.losing_lines(choose(flawed), 1 - seat) == []
    played_optimally = False
    for line in lines:
        positions = replay(line)
        assert is_terminal(positions[-1]) and has_line(positions[-1][1 - seat])
        assert any(positions[i] == pos and line[i] == move for i in range(len(line)))
        played_optimally |= all(line[i] in SOLVED.optimal[positions[i]]
                                for i in range(1 - seat, len(line), 2))
    assert played_optimally  # a perfect opponent finds one of them


# ------------------------------------------------------------------- SeatCheck


SEAT_CHECK = SeatCheck()
PACKAGE_LIVE = [from_board(b) for b in minimax.solution().boards[minimax.solution().live]]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), flaws=st.integers(0, 40))
def test_seat_check_agrees_with_the_counted_losing_lines(seed, flaws):
    """The evaluator's ply-by-ply check says unbeatable from a seat exactly when this
    file's forward count finds no lost game, on perfect tables with random moves put in
    at `flaws` random positions (0: perfect; 40 is beatable more often than not)."""
    rng = np.random.default_rng(seed)
    policy = dict(PERFECT)
    for i in rng.choice(len(SOLVED.live), flaws, replace=False):
        pos = SOLVED.live[i]
        policy[pos] = int(rng.choice([m for m, _ in children(pos)]))
    got = SEAT_CHECK(np.array([policy[p] for p in PACKAGE_LIVE]))
    first, second = (count_losing_lines(policy, seat) == 0 for seat in (X, O))
    assert got == {"unbeatable_first": float(first), "unbeatable_second": float(second),
                   "unbeatable": float(first and second)}


def test_seat_check_refuses_an_illegal_move():
    actions = np.array([PERFECT[p] for p in PACKAGE_LIVE])
    occupied = next(i for i, b in enumerate(minimax.solution().boards[minimax.solution().live])
                    if b[0] != minimax.EMPTY)
    actions[occupied] = 0
    with pytest.raises(ValueError, match="illegal move"):
        SEAT_CHECK(actions)
