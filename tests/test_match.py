"""Batched matches (`azjax.evaluation.match.play_match`) on players of known strength."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

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


def test_random_against_random_is_even(ttt):
    result = play_match(ttt, random_player("a"), random_player("b"), jax.random.key(0), 4000)
    assert abs(result.score - 0.5) < 0.03
    # Tic-tac-toe under random play: the first player wins ~58%, draws ~13%.
    first = result.seat(0)
    assert first.num_games == 2000
    assert 0.52 < first.wins / 2000 < 0.64
    assert 0.08 < result.draws / 4000 < 0.18


def test_solver_never_loses_and_draws_itself(ttt):
    perfect = solver_policy()
    against_random = play_match(ttt, perfect, random_player(), jax.random.key(1), 1000)
    assert against_random.losses == 0
    assert against_random.wins > 800
    itself = play_match(ttt, perfect, perfect, jax.random.key(2), 1000)
    assert itself.draws == 1000


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
