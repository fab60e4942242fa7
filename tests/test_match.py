"""Batched matches (`azjax.evaluation.match.play_match`) on players of known strength."""

from __future__ import annotations

import functools
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from binomial import FALSE_FAILURE, interval, pmf

import envs
from azjax.core.players import Player, network_player
from azjax.evaluation.baselines import random_player
from azjax.evaluation.match import MatchResult, play_match
from envs import tictactoe_minimax as solver


@pytest.fixture(scope="module")
def ttt():
    return envs.make("tictactoe")


def solver_policy() -> Player:
    """A perfect tic-tac-toe player: a lookup table from the board (base 3) to an optimal move."""
    sol = solver.solution()
    table = np.zeros(3**9, np.int32)
    powers = 3 ** np.arange(9)
    for i in sol.live:
        code = int(((sol.boards[i].astype(np.int64) + 1) * powers).sum())
        table[code] = int(np.flatnonzero(sol.optimal[i])[0])
    table = jnp.asarray(table)
    powers = jnp.asarray(powers)

    def policy(params, states, key):
        del params, key
        code = jnp.sum((states.board.astype(jnp.int32) + 1) * powers, axis=-1)
        return table[code]

    return Player("solver", policy)


LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def outcome_odds(policy=None, seat=None):
    """Exact (P(X wins), P(O wins)) from the empty board by enumerating the game tree in
    plain Python (boards: -1 empty, 0 X, 1 O): every move uniformly random, except that
    the player of `seat` (0 X, 1 O) plays `policy(board)`."""

    @functools.cache
    def odds(board):
        for x, y, z in LINES:
            if board[x] != -1 and board[x] == board[y] == board[z]:
                return (Fraction(board[x] == 0), Fraction(board[x] == 1))
        empty = [i for i in range(9) if board[i] == -1]
        if not empty:
            return (Fraction(0), Fraction(0))
        mover = (9 - len(empty)) % 2
        moves = [policy(board)] if mover == seat else empty
        children = [odds(board[:i] + (mover,) + board[i + 1:]) for i in moves]
        return (sum(x for x, _ in children) / len(moves),
                sum(o for _, o in children) / len(moves))

    return odds((-1,) * 9)


def seat_pmf(n: int, odds: tuple[float, float, float]) -> np.ndarray:
    """The exact distribution of the sum of n independent games each scoring 0, 1 or 2
    with probabilities `odds` (index: the doubled score)."""
    result, power = np.ones(1), np.asarray(odds, np.float64)
    while n:
        if n & 1:
            result = np.convolve(result, power)
        power, n = np.convolve(power, power), n >> 1
    return result


def pmf_interval(pmf: np.ndarray, alpha: float) -> tuple[int, int]:
    """Like binomial.interval for any pmf over 0..N: low, high with P(X < low) < alpha / 2
    and P(X > high) < alpha / 2."""
    below, above = np.cumsum(pmf), np.cumsum(pmf[::-1])[::-1]
    low = int(np.searchsorted(below, alpha / 2, side="left"))  # first k: P(X <= k) >= a/2
    high = len(pmf) - 1 - int(np.searchsorted(above[::-1], alpha / 2, side="left"))
    return low, high


P_X, P_O = outcome_odds()  # X wins 737/1260, O wins 121/420, draws 8/63 under random play
P_DRAW = 1 - P_X - P_O


def test_the_exact_random_play_odds():
    assert (P_X, P_O, P_DRAW) == (Fraction(737, 1260), Fraction(121, 420), Fraction(8, 63))


def test_random_against_random_is_even(ttt):
    result = play_match(ttt, random_player("a"), random_player("b"), jax.random.key(0), 4000)
    first = result.seat(0)
    assert first.num_games == 2000 and result.seat(1).num_games == 2000
    # Three two-sided bounds at FALSE_FAILURE / 3 each: family-wise < 1e-3 (Bonferroni),
    # from the exact odds above. A's doubled points: 2000 games as X (2 w.p. P_X, 1 w.p.
    # P_DRAW) plus 2000 as O (2 w.p. P_O), an exact convolution with mean 4000 (even).
    alpha = FALSE_FAILURE / 3
    p_x, p_o, p_draw = float(P_X), float(P_O), float(P_DRAW)
    points = np.convolve(seat_pmf(2000, (p_o, p_draw, p_x)), seat_pmf(2000, (p_x, p_draw, p_o)))
    low, high = pmf_interval(points, alpha)
    assert low <= round(2 * result.points) <= high, (result.points, low / 2, high / 2)
    assert (high - low) / 2 / 4000 < 2 * 0.03  # narrower than the old |score - 0.5| < 0.03
    # the first player wins P_X of its games; draws are P_DRAW of all
    low, high = interval(2000, p_x, alpha)
    assert low <= first.wins <= high, (first.wins, low, high)
    low, high = interval(4000, p_draw, alpha)
    assert low <= result.draws <= high, (result.draws, low, high)


def test_solver_never_loses_and_draws_itself(ttt):
    perfect = solver_policy()
    sol = solver.solution()
    best = {tuple(int(v) for v in sol.boards[i]): int(np.flatnonzero(sol.optimal[i])[0])
            for i in sol.live}
    # The exact odds of this very policy (its first optimal move) against random play:
    # it never loses from either seat, so losses == 0 cannot fail falsely.
    as_x, as_o = outcome_odds(policy=best.__getitem__, seat=0), outcome_odds(
        policy=best.__getitem__, seat=1)
    assert as_x[1] == 0 and as_o[0] == 0
    against_random = play_match(ttt, perfect, random_player(), jax.random.key(1), 1000)
    assert against_random.losses == 0
    # wins: B(500, P(win as X)) + B(500, P(win as O)); the least count with P(fewer) < 1e-3
    wins = np.convolve([pmf(500, float(as_x[0]), k) for k in range(501)],
                       [pmf(500, float(as_o[1]), k) for k in range(501)])
    least = int(np.searchsorted(np.cumsum(wins), FALSE_FAILURE, side="left"))
    assert least > 800  # at least as strict as the old criterion
    assert against_random.wins >= least, (against_random.wins, least)
    itself = play_match(ttt, perfect, perfect, jax.random.key(2), 1000)
    assert itself.draws == 1000  # deterministic: two perfect players always draw


def test_seats_are_split_and_results_are_from_a_points_of_view(ttt):
    """The same deterministic policy on both sides replays one game (X wins on 2-4-6), so
    A wins every game of the first half (A is X) and loses every game of the second."""

    def first_legal(params, states, key):
        del params, key
        return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)

    player = Player("first legal", first_legal)
    result = play_match(ttt, player, player, jax.random.key(3), 10)
    assert result.results.tolist() == [1] * 5 + [-1] * 5
    assert result.a_seat.tolist() == [0] * 5 + [1] * 5


def test_network_player_plays_the_argmax_of_legal_moves(ttt):
    state = jax.vmap(ttt.init)(jax.random.split(jax.random.key(0), 2))
    state = jax.vmap(ttt.step)(state, jnp.array([4, 0]))

    def apply_fn(params, obs):
        logits = jnp.broadcast_to(params, (obs.shape[0], 9))
        return logits, jnp.zeros(obs.shape[0])

    prefers_centre = jnp.array([0.0, 1, 2, 3, 9, 5, 6, 7, 8])
    actions = network_player(apply_fn, prefers_centre).act(state, jax.random.key(0))
    # Game 0: the centre is taken, so the best legal logit is cell 8; game 1: the centre.
    assert actions.tolist() == [8, 4]


def test_match_result_counts_wins_draws_losses():
    result = MatchResult.from_results(jnp.array([1.0, 0.0, -1.0, 1.0]))
    assert (result.wins, result.draws, result.losses) == (2, 1, 1)
    assert result.points == 2.5 and result.score == 0.625
    assert result.seat(0).results.tolist() == [1, 0] and result.seat(1).results.tolist() == [-1, 1]
