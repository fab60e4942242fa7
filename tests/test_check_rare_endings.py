"""`envs.check_env` reaches the endings that random play seldom does: on an
8 x 8 Breakthrough (`tests/breakthrough.py`) uniform play ends every game by a pawn
reaching the far row, and so did the earlier biased policies ("ending", "material",
"lasting"); the "hunting" and "novelty" games capture every pawn of one side,
so a copy that scores that ending wrongly fails against the reference, and the report
counts the kinds of ending its games reached.

The default run keeps one compile (the broken copy caught in 8 games) and the host-side
tally of the kinds of ending; the correct game's report and the old policies' miss are
slow.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from breakthrough import (
    Breakthrough,
    BreakthroughReference,
    WipeOutGoesToPlayerZero,
    WipeOutIsADraw,
)

import envs.conformance.games
from envs import CheckReport, EnvCheckError, check_env
from envs.conformance.endings import ENDINGS, ending_kind, endings_reached, holders
from envs.conformance.policies import POLICIES

WIPE_OUT = "won by the mover, a side lost every piece"


def replayed(actions):
    """The reference's state after `actions` from the start."""
    state = BreakthroughReference().new_initial_state()
    for action in actions:
        state.apply_action(action)
    return state


def test_a_wrongly_scored_wipe_out_on_8x8_is_caught_with_a_reference():
    with pytest.raises(EnvCheckError) as caught:
        check_env(WipeOutIsADraw(), num_games=8, reference=BreakthroughReference())
    err = caught.value
    assert err.property == "reference", str(err)
    assert "the env's rewards are [0.0, 0.0], the reference's" in err.message
    policy = POLICIES[envs.conformance.games.policies_of(8)[err.game]]
    assert policy in ("hunting", "novelty")
    # The game it shows ends with every pawn of one side captured, after a long game.
    state = replayed(err.actions)
    assert state.wiped_out() and len(err.actions) > 40


def test_the_kinds_of_ending_are_told_apart_and_counted():
    # A game of 2 cells and 3 planes: a pawn of each side (planes 0 and 1) and a
    # side-to-move plane (2), uniform. Three finished games: a win with both sides left,
    # a win that took the last pawn of a side, a draw.
    start = np.array([[1, 0, 1], [0, 1, 1]], np.int8)  # [cells, planes]
    wiped = np.array([[1, 0, 1], [0, 0, 1]], np.int8)
    end = jnp.asarray(np.stack([start, wiped, start]))
    kinds = ending_kind(end, jnp.asarray([True, True, True]), jnp.asarray([1.0, 1.0, 0.0]),
                        holders(jnp.asarray(np.stack([start] * 3))))
    assert [ENDINGS[k - 1] for k in kinds.tolist()] == ["won by the mover", WIPE_OUT, "drawn"]
    assert ending_kind(end, jnp.zeros(3, bool), jnp.zeros(3), holders(end)).tolist() == [0] * 3
    # Games 0 and 2 end on their second ply, game 1 on its fourth, game 3 goes on.
    end_kind = np.zeros((5, 4), np.int32)
    end_kind[1, 0] = end_kind[1, 2] = 1
    end_kind[3, 1] = 2
    live = np.arange(5)[:, None] < np.array([2, 4, 2, 5])
    endings = endings_reached(end_kind, live)
    assert endings == (("won by the mover", 2, 2, 2), (WIPE_OUT, 1, 4, 4))
    report = CheckReport(game="g", properties=(), games=4, finished=3, plies=13, longest=5,
                         max_plies=5, wins=(3, 0, 0), forfeits=13, after_end=7,
                         symmetries=1, symmetry_pairs=0, seed=0, seconds=0.0,
                         endings=endings)
    assert f"  endings    2 won by the mover (2 plies); 1 {WIPE_OUT} (4 plies)" in str(report)


# --- slow: a compile each ----------------------------------------------------------------


def old_policies_only(monkeypatch):
    """The games dealt out as before "hunting" and "novelty": a quarter uniform, then
    "ending", "material" and "lasting" in turn."""
    def deal(n):
        uniform = -(-n // 4)
        return np.concatenate([np.zeros(uniform, np.int32),
                               1 + np.arange(n - uniform, dtype=np.int32) % 3])

    monkeypatch.setattr(envs.conformance.games, "policies_of", deal)


@pytest.mark.slow  # a compile of its own
def test_the_old_policies_never_reach_the_8x8_wipe_out(monkeypatch):
    """64 games of the four earlier policies end every game by a pawn on the far row,
    and the copy passes: the test above is one the old checker failed."""
    old_policies_only(monkeypatch)
    report = check_env(WipeOutIsADraw(), num_games=64, reference=BreakthroughReference())
    assert [kind for kind, *_ in report.endings] == ["won by the mover"]
    assert {name for name, count in report.policies if count} == {
        "uniform", "ending", "material", "lasting"}


@pytest.mark.slow  # a compile for each of the game and its copy
def test_breakthrough_8x8_agrees_with_its_reference_and_reaches_wipe_outs():
    report = check_env(Breakthrough(), num_games=64, reference=BreakthroughReference())
    assert report.reference_plies == report.plies
    kinds = dict((kind, games) for kind, games, *_ in report.endings)
    assert set(kinds) == {"won by the mover", WIPE_OUT} and kinds[WIPE_OUT] >= 4
    assert sum(kinds.values()) == report.finished == 64
    assert f"; {kinds[WIPE_OUT]} {WIPE_OUT} (" in str(report)
    with pytest.raises(EnvCheckError) as caught:
        check_env(WipeOutGoesToPlayerZero(), num_games=64, reference=BreakthroughReference())
    assert caught.value.property == "reference"
    assert replayed(caught.value.actions).wiped_out()
