"""`envs.check_env` against rule bugs that keep the protocol (issue 51): broken copies of
tic-tac-toe, and of a small capture game whose bugs show only in a rare ending.

* Wrong rules (a draw scored as a win, a win credited to the wrong side, a win noticed a
  ply late, a game that ends a ply early) keep every protocol property; a reference (a
  plain-Python tic-tac-toe, `tests/ttt_reference.py`) catches each, and a report made
  without one says which bugs only a reference catches.
* A `step` that keeps the previous observation, an observation one ply behind the
  board, a `step_count` that does not count and `futile_moves` that flag the winning
  move fail without a reference ("observation", "step-count", "futile-moves").
* Breakthrough on a 3 x 4 board (`tests/breakthrough.py`) ends almost always by a pawn
  reaching the far row; uniform random play almost never captures every pawn of one
  side. Two copies that score that ending wrongly pass the checker with uniform play
  alone (the checker before issue 51) and fail against the reference once the biased
  games reach it (on 8 x 8, `tests/test_check_rare_endings.py`).

Each check compiles the game's program, so the default run keeps three of them (the
observation and the step count, which need no reference, and the capture game's rare
ending); the rest is slow.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import ttt_reference as ttt
from breakthrough import (
    Breakthrough,
    BreakthroughReference,
    WipeOutGoesToPlayerZero,
    WipeOutIsADraw,
)

import envs
import envs.conformance.games
from envs import EnvCheckError, check_env
from envs.conformance import ONLY_A_REFERENCE
from envs.tictactoe import LINES, TicTacToe, _observation


class TicTacToeReference:
    """Tic-tac-toe with OpenSpiel's state API, from the plain-Python rules of
    `tests/ttt_reference.py`."""

    def new_initial_state(self):
        return _TicTacToeState()


class _TicTacToeState:
    def __init__(self):
        self.board = (-1,) * 9

    def current_player(self):
        return ttt.to_move(self.board)

    def legal_actions(self):
        return ttt.legal_moves(self.board)

    def apply_action(self, action):
        self.board = ttt.play(self.board, action)

    def is_terminal(self):
        return ttt.terminal(self.board)

    def returns(self):
        won = ttt.winner(self.board)
        return [0.0, 0.0] if won is None else [1.0, -1.0] if won == 0 else [-1.0, 1.0]


X_WINS = jnp.array([1.0, -1.0], jnp.float32)
DIAGONALS = LINES[6:]


def _line(board, player, lines=LINES):
    return jnp.any(jnp.all(board[jnp.asarray(lines)] == player, axis=1))


# --- tic-tac-toe with wrong rules: each keeps the protocol --------------------------------


class DrawScoredAsXWin(TicTacToe):
    """A full board without a line is a win for X."""

    def _step(self, state, action):
        out = super()._step(state, action)
        draw = out.terminated & (out.rewards[0] == 0)
        return out.replace(rewards=jnp.where(draw, X_WINS, out.rewards))


class ODiagonalCreditedToX(TicTacToe):
    """O completing a diagonal wins the game for X."""

    def _step(self, state, action):
        out = super()._step(state, action)
        odd = (state.current_player == 1) & _line(out.board, 1, DIAGONALS)
        return out.replace(rewards=jnp.where(odd, X_WINS, out.rewards))


class WinNoticedOnePlyLate(TicTacToe):
    """A line is found only on the next ply, when the other player has moved (a full
    board still ends the game)."""

    def _step(self, state, action):
        out = super()._step(state, action)
        before = 1 - state.current_player  # who made the previous move
        late = _line(state.board, before)
        done = late | (out.step_count == 9)
        rewards = jnp.where(late, jnp.where(before == 0, X_WINS, -X_WINS), 0.0)
        return out.replace(terminated=done, rewards=rewards.astype(jnp.float32),
                           legal_action_mask=(out.board < 0) & ~done)


class EndsOnePlyEarly(TicTacToe):
    """The game is over when one empty cell is left (a draw, unless that move won)."""

    def _step(self, state, action):
        out = super()._step(state, action)
        done = out.terminated | (out.step_count == 8)
        return out.replace(terminated=done, legal_action_mask=out.legal_action_mask & ~done)


RULE_BUGS = [DrawScoredAsXWin, ODiagonalCreditedToX, WinNoticedOnePlyLate, EndsOnePlyEarly]


# --- tic-tac-toe with bugs the protocol sees ------------------------------------------


class KeepsTheObservation(TicTacToe):
    """`step` keeps the previous observation."""

    def _step(self, state, action):
        return super()._step(state, action).replace(observation=state.observation)


class ObservationOnePlyBehind(TicTacToe):
    """The observation shows the board before the last move (to the right player)."""

    def _step(self, state, action):
        out = super()._step(state, action)
        return out.replace(observation=_observation(state.board, out.current_player))


class StepCountFrozen(TicTacToe):
    """`step_count` stays 0."""

    def _step(self, state, action):
        return super()._step(state, action).replace(step_count=state.step_count)


class FutileRowEnds(TicTacToe):
    """futile_moves flags an empty cell whose row the mover holds the rest of (an "eye"
    test gone wrong): that is the move that completes the row, and wins. It never flags
    every legal move, as the protocol asks."""

    def futile_moves(self):
        rows = jnp.arange(9) // 3

        def flags(state):
            mine = state.board == state.current_player
            held = jnp.sum(mine[:, None] & (rows[:, None] == jnp.arange(3)), axis=0)  # [3]
            eyes = (state.board < 0) & (held[rows] == 2)
            return eyes & jnp.any(state.legal_action_mask & ~eyes)

        return flags


# --- Breakthrough on 3 x 4 (tests/breakthrough.py): the wipe-out is rare under uniform play

ROWS, COLS = 3, 4


def uniform_only(monkeypatch):
    """Every random game plays uniformly random moves, as before the biased policies."""
    monkeypatch.setattr(envs.conformance.games, "policies_of",
                        lambda n: np.zeros(n, np.int32))


def fails(env, prop, **kwargs):
    with pytest.raises(EnvCheckError) as caught:
        check_env(env, **kwargs)
    err = caught.value
    assert err.property == prop, str(err)
    return err


# --- the default run: what needs no reference, and the rare ending -----------------------


def test_a_step_that_keeps_the_observation():
    err = fails(KeepsTheObservation(), "observation", num_games=4)
    assert err.ply == 0 and len(err.actions) == 1 and "stays as it was" in err.message


def test_a_frozen_step_count():
    err = fails(StepCountFrozen(), "step-count", num_games=4)
    assert err.ply == 0 and "from 0 to 0, not 1" in err.message


def test_a_rare_ending_scored_wrongly_is_caught_by_the_biased_games():
    err = fails(WipeOutIsADraw(ROWS, COLS), "reference", num_games=64,
                reference=BreakthroughReference(ROWS, COLS))
    assert "the env's rewards are [0.0, 0.0]" in err.message
    assert envs.conformance.games.policies_of(64)[err.game] != 0  # a biased game found it
    # The game it shows ends with every pawn of one side captured.
    state = BreakthroughReference(ROWS, COLS).new_initial_state()
    for action in err.actions:
        state.apply_action(action)
    assert state.wiped_out()


# --- slow: one compile each ---------------------------------------------------------------


@pytest.mark.slow  # a compile of its own
def test_uniform_play_alone_misses_the_rare_ending(monkeypatch):
    """The checker before the biased games: 64 uniform games never capture every pawn
    of a side, and the copy passes."""
    uniform_only(monkeypatch)
    report = check_env(WipeOutIsADraw(ROWS, COLS), num_games=64,
                       reference=BreakthroughReference(ROWS, COLS))
    assert report.wins[2] == 0 and report.policies[0] == ("uniform", 64)


@pytest.mark.slow  # a compile for each of the game and its copy
def test_breakthrough_agrees_with_its_reference_and_the_bugs_do_not():
    report = check_env(Breakthrough(ROWS, COLS), num_games=64,
                       reference=BreakthroughReference(ROWS, COLS))
    assert report.reference_plies == report.plies and report.wins[2] == 0
    err = fails(WipeOutGoesToPlayerZero(ROWS, COLS), "reference", num_games=64,
                reference=BreakthroughReference(ROWS, COLS))
    assert "the env's rewards are [1.0, -1.0], the reference's [-1.0, 1.0]" in err.message


@pytest.mark.slow  # a compile for each copy, with and without the reference
@pytest.mark.parametrize("game", RULE_BUGS, ids=[g.__name__ for g in RULE_BUGS])
def test_tictactoe_rule_bugs_need_a_reference(game):
    """Each keeps the protocol (the report says what it cannot see), and fails against
    the plain-Python rules."""
    report = check_env(game(), num_games=64)
    assert str(report).splitlines()[-1] == f"  unchecked  {ONLY_A_REFERENCE}"
    fails(game(), "reference", num_games=64, reference=TicTacToeReference())


@pytest.mark.slow  # a compile of its own
def test_an_observation_one_ply_behind():
    """The same board reached in two move orders looks different."""
    err = fails(ObservationOnePlyBehind(), "observation", num_games=64)
    assert "equal in every leaf but the observation" in err.message


@pytest.mark.slow  # a compile of its own
def test_futile_moves_that_flag_the_winning_move():
    err = fails(FutileRowEnds(), "futile-moves", num_games=64)
    assert "the only legal move that wins at once" in err.message


@pytest.mark.slow  # a compile of its own
def test_tictactoe_agrees_with_the_plain_python_rules():
    report = check_env(TicTacToe(), num_games=64, reference=TicTacToeReference())
    assert report.reference_plies == report.plies
    assert "unchecked" not in str(report)
