"""Counters with no ceiling a run can reach: iterations, games and positions past 2**31
(and 2**32), in the compiled iteration, through checkpoints and the driver's records."""

from __future__ import annotations

import shutil

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_training import SMALL, small_iteration
from tiny import CONFIG as TINY

import envs
from azjax import train
from azjax.core import counters
from azjax.core.iteration import init_train_state
from azjax.run.directory.run_dir import RunDir
from azjax.run.recipes import recipe

_add = jax.jit(counters.add)


@settings(max_examples=60, deadline=None)
@given(start=st.integers(0, 2**62), steps=st.lists(st.integers(0, 2**31 - 1), max_size=12))
def test_adds_agree_with_python_integers(start, steps):
    count, expected = counters.of(start), start
    for step in steps:
        count, expected = _add(count, jnp.int32(step)), expected + step
        assert int(count) == expected
        assert int(count.low) < 2**31
    assert counters.value(count) == expected


def test_counts_are_refused_out_of_range_and_read_one_at_a_time():
    with pytest.raises(ValueError, match="2\\*\\*63"):
        counters.of(2**63)
    with pytest.raises(ValueError, match="-1"):
        counters.of(-1)
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), counters.of(5), counters.of(2**40 + 7))
    assert [counters.value(stacked, i) for i in range(2)] == [5, 2**40 + 7]
    assert counters.array(stacked).tolist() == [5, 2**40 + 7]
    with pytest.raises(ValueError, match="index"):
        counters.value(stacked)


def test_fold_in_keeps_the_keys_of_small_counts_and_separates_large_ones():
    key = jax.random.key(3)
    same = jax.random.key_data(counters.fold_in(key, 12345))
    assert (same == jax.random.key_data(jax.random.fold_in(key, 12345))).all()
    low = jax.random.key_data(counters.fold_in(key, 7))
    high = jax.random.key_data(counters.fold_in(key, 2**32 + 7))
    assert not (low == high).all()


def test_the_compiled_iteration_counts_past_two_to_the_31():
    env = envs.make("tictactoe")
    program = SMALL.program
    state = init_train_state(env, program, jax.random.key(0))
    state = state.replace(iteration=counters.of(2**31 - 1), games=counters.of(2**32 - 3),
                          positions=counters.of(2**31 - 5))
    iteration, _ = small_iteration()  # (compiled once for tests/test_training.py too)
    for step in range(1, 3):
        state, metrics = iteration(state)
        assert int(state.iteration) == 2**31 - 1 + step
        assert int(state.positions) == 2**31 - 5 + step * program.positions_per_iteration
    assert int(state.games) > 2**32  # 16 games in 9 plies: some of them ended


def test_a_resumed_run_counts_on_past_two_to_the_31_in_its_records_and_checkpoints(
        tiny_run_copy):
    run_dir = tiny_run_copy  # TINY's 2 iterations, a checkpoint after each
    run = RunDir(run_dir)
    env = envs.make("tictactoe")
    abstract = init_train_state(env, TINY.program, jax.random.key(0))
    state = run.checkpoints.restore_newest(abstract).tree
    high = state.replace(games=counters.of(2**33 + 1), positions=counters.of(2**31 - 10))
    records = run.metrics.read()
    shutil.rmtree(run.checkpoints.step_dir(2))
    run.checkpoints.open_for_saving()
    run.checkpoints.save(2, high, TINY, records)
    run.checkpoints.close()

    train(TINY.replace(iterations=3), run_dir, progress=None)
    last = run.metrics.read()[-1]
    assert last["iteration"] == 3
    assert last["positions"] == 2**31 - 10 + TINY.program.positions_per_iteration
    assert last["games"] >= 2**33 + 1
    saved = run.checkpoints.restore_newest(abstract)
    assert saved.step == 3
    assert int(saved.tree.positions) == last["positions"]
    assert int(saved.tree.games) == last["games"]


def test_a_run_of_more_positions_than_int32_holds_is_not_refused():
    connect_four = recipe("connect_four", "cpu").with_value("selfplay.num_games", 4096)
    assert (connect_four.run.iterations * connect_four.program.positions_per_iteration
            > 2**31)
    connect_four.check(connect_four.make_env())
    SMALL.replace(iterations=2**40).validate()
    with pytest.raises(ValueError, match="iterations"):
        SMALL.replace(iterations=2**63).validate()
