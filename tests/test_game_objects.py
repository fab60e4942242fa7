"""Games as objects of the user's: whatever a game object is (a plain `@dataclass` is
unhashable, and equal to another with the same fields), what the framework caches for it
(compiled programs, players, estimates) is keyed by the object itself, so any game
trains, and two games trained one after the other in one process each get their own
program."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_env_hooks import PlainTicTacToe
from tiny import CONFIG

from azjax import Agent
from azjax.core.identity import Identity, cache_by_identity
from azjax.core.networks import abstract_params
from azjax.driver.driver import train


@dataclasses.dataclass
class PaddedTicTacToe(PlainTicTacToe):
    """Tic-tac-toe written as a plain `@dataclass` (so unhashable: `eq` without a hash),
    whose observation has `blank_planes` all-False planes after tic-tac-toe's three."""

    name = "padded_ttt"
    blank_planes: int = 2

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return (3, 3, 3 + self.blank_planes)

    def _padded(self, state):
        blank = jnp.zeros((3, 3, self.blank_planes), jnp.bool_)
        return state.replace(observation=jnp.concatenate([state.observation, blank], axis=-1))

    def _init(self, key):
        return self._padded(super()._init(key))

    def _step(self, state, action):
        return self._padded(super()._step(state, action))


@pytest.fixture(scope="module")
def games_in_turn(tiny_run):
    """Two games trained one after the other in this process, one iteration each: game A,
    a `PaddedTicTacToe` with two blank planes (the test keeps no reference to the object:
    a cache keyed by its id alone could hand its program to a later object at its
    address), then game B, tic-tac-toe by name with the tiny program, which `tiny_run`
    trained too (its first checkpoint is B trained without A). Returns both results."""
    config = CONFIG.replace(iterations=1, checkpoint_every=0)
    first = train(config, progress=None, env=PaddedTicTacToe(blank_planes=2))
    return first, train(config, progress=None)


def test_a_game_written_as_a_plain_dataclass_trains(games_in_turn):
    first, _ = games_in_turn
    with pytest.raises(TypeError, match="unhashable"):
        hash(PaddedTicTacToe())
    assert [r["iteration"] for r in first.records] == [1]
    assert np.isfinite(first.records[0]["loss"]) and first.records[0]["games_finished"] > 0
    # The positions it played are its own: blank planes empty, the side to move's plane
    # set in about half of them (X moves first, so in at least half).
    data = first.train_state.replay.data
    played = np.asarray(data.observation)[np.asarray(data.slot) >= 0]
    assert played.shape == (CONFIG.program.positions_per_iteration, 3, 3, 5)
    assert not played[..., 3:].any()
    assert 0.5 <= played[..., 2].all(axis=(1, 2)).mean() < 0.6


def test_two_games_trained_one_after_the_other_each_get_their_own_program(
        games_in_turn, tiny_run):
    """Each run's network has its own game's shapes (A's program run on B's states would
    fail, or give A's), and B trained after A is bit for bit B trained without A."""
    first, second = games_in_turn
    for result, env in ((first, PaddedTicTacToe(blank_planes=2)), (second, CONFIG.make_env())):
        want = abstract_params(env, CONFIG.program.network)
        assert (jax.tree.map(np.shape, result.train_state.params)
                == jax.tree.map(lambda x: x.shape, want))
    alone = Agent.load(tiny_run, step=1).params
    assert jax.tree.all(jax.tree.map(np.array_equal, second.train_state.params, alone))


def test_a_cache_by_identity_tells_equal_games_apart_and_holds_each():
    """Two equal games each get their own entry, one game its one entry; an entry holds
    its game alive, so that the game's id cannot pass to another object while it lives."""
    made = []

    @cache_by_identity(maxsize=4)
    def planes(env, extra):
        made.append(env)
        return env.blank_planes + extra

    one, twin = PaddedTicTacToe(blank_planes=1), PaddedTicTacToe(blank_planes=1)
    assert one == twin and Identity(one) != Identity(twin) and Identity(one) == Identity(one)
    assert planes(one, 1) == planes(one, 1) == planes(twin, 1) == 2
    assert len(made) == 2 and made[0] is one and made[1] is twin
    alive = weakref.ref(one)
    del one, made[:]
    gc.collect()
    assert alive() is not None
