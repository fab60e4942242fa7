"""Batched matches (`azjax.match`) on agents of known strength."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax import match
from azjax.players import network_player
from azjax.rollouts import uniform_legal_actions
from azjax.solvers import tictactoe as solver


@pytest.fixture(scope="module")
def ttt():
    return envs.make("tictactoe")


def solver_policy():
    """A perfect tic-tac-toe player: a lookup table from the board (base 3) to an optimal move."""
    sol = solver.solution()
    table = np.zeros(3**9, np.int32)
    powers = 3 ** np.arange(9)
    for i in sol.live:
        code = int(((sol.boards[i].astype(np.int64) + 1) * powers).sum())
        table[code] = int(np.flatnonzero(sol.optimal[i])[0])
    table = jnp.asarray(table)
    powers = jnp.asarray(powers)

    def policy(states, key):
        del key
        code = jnp.sum((states.board.astype(jnp.int32) + 1) * powers, axis=-1)
        return table[code]

    return policy


def test_random_against_random_is_even(ttt):
    results = jax.jit(
        lambda key: match.play_match(ttt, uniform_legal_actions, uniform_legal_actions, key, 4000)
    )(jax.random.key(0))
    score = match.score(results)
    assert abs(score["score"] - 0.5) < 0.03
    # Tic-tac-toe under random play: the first player wins ~58%, draws ~13%.
    first = np.asarray(results[:2000])
    assert 0.52 < float((first > 0).mean()) < 0.64
    assert 0.08 < score["draw"] < 0.18


def test_solver_never_loses_and_draws_itself(ttt):
    perfect = solver_policy()
    play = jax.jit(lambda key, a, b: match.play_match(ttt, a, b, key, 1000), static_argnums=(1, 2))
    against_random = match.score(play(jax.random.key(1), perfect, uniform_legal_actions))
    assert against_random["loss"] == 0.0
    assert against_random["win"] > 0.8
    itself = match.score(play(jax.random.key(2), perfect, perfect))
    assert itself["draw"] == 1.0


def test_seats_are_split_and_results_are_from_a_points_of_view(ttt):
    """The same deterministic policy on both sides replays one game (X wins on 2-4-6), so
    A wins every game of the first half (A is X) and loses every game of the second."""

    def first_legal(states, key):
        del key
        return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)

    results = jax.jit(lambda k: match.play_match(ttt, first_legal, first_legal, k, 10))(
        jax.random.key(3)
    )
    assert results.tolist() == [1.0] * 5 + [-1.0] * 5


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


def test_score_counts_wins_draws_losses():
    assert match.score(jnp.array([1.0, 0.0, -1.0, 1.0])) == {
        "win": 0.5, "draw": 0.25, "loss": 0.25, "score": 0.625
    }
