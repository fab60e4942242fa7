"""AlphaGo Zero gating, and training-time games against baselines."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import CONFIG

import envs
from azjax import Agent, train, train_group
from azjax.core.iteration import init_train_state
from azjax.core.stacked import group_step, stack, unstack
from azjax.evaluation.gating import gate_decision
from azjax.evaluation.match import MatchResult
from azjax.run.directory.run_dir import RunDir

# The tiny program (tests/tiny.py; tests/test_sweep.py sweeps it too), for 6 iterations,
# a checkpoint after every second one.
SMALL = CONFIG.replace(iterations=6, checkpoint_every=2)
# The game object of the gated runs here, so that they and the test of gated self-play
# share one compiled step (`group_step` keeps it per game object and program).
ENV = envs.make("tictactoe")


def results(wins: int, draws: int, losses: int) -> MatchResult:
    return MatchResult.from_results(np.array([1] * wins + [0] * draws + [-1] * losses))


def test_gate_counts_draws_as_half_points():
    assert gate_decision(results(55, 0, 45), 0.55) == (pytest.approx(0.55), True)
    assert gate_decision(results(30, 50, 20), 0.55) == (pytest.approx(0.55), True)
    # A draw-heavy arena with a small edge is not enough, nor is an even one.
    assert gate_decision(results(10, 85, 5), 0.55) == (pytest.approx(0.525), False)
    assert gate_decision(results(0, 100, 0), 0.55) == (pytest.approx(0.5), False)
    assert gate_decision(results(54, 0, 46), 0.55)[1] is False


def test_gating_self_play_uses_the_best_network_not_the_latest():
    config = SMALL.replace(regime="gating")
    # One iteration of the gated runs' own step (a group of one: its state stacked).
    step = group_step(ENV, config.program, 1)
    state = init_train_state(ENV, config.program, jax.random.key(0))

    def changed(params):
        return jax.tree.map(lambda x: x + 0.5 * jnp.sign(x + 0.1), params)

    def policies(s):
        after, _ = step(stack([s]), jnp.ones(1, bool))
        return np.asarray(unstack(after, 0).replay.data.policy)

    base = policies(state)
    # Changing the latest network leaves gated self-play unchanged...
    np.testing.assert_array_equal(base, policies(state.replace(params=changed(state.params))))
    # ...changing the best one changes it.
    assert not np.array_equal(
        base, policies(state.replace(best_params=changed(state.best_params)))
    )


# Nine random opening plies play out a whole tic-tac-toe game, the same one in both
# seats of each pair of arena games: such an arena scores exactly 0.5, so a threshold of
# 0.5 promotes at every gate and any higher one at none.
TIED = {"gate_openings": 9, "gate_games": 16}
GATED = SMALL.replace(regime="gating", gate_every=2, gate_threshold=0.5, iterations=7,
                      checkpoint_every=1, keep_every=2, **TIED)


@pytest.fixture(scope="module")
def gated_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("gated") / "run"
    return run_dir, train(GATED, run_dir, progress=None, env=ENV)


def trees_equal(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def saved_state(run_dir, step):
    """The whole train state of a run's checkpoint at `step`."""
    template = init_train_state(envs.make("tictactoe"), GATED.program, jax.random.key(0))
    return RunDir(run_dir).checkpoints.restore(template, step)


def test_a_promotion_makes_the_best_network_a_copy_of_the_latest(gated_run):
    """Every gate promotes: the best network is then the latest one of that iteration,
    and stays so while the latest trains on until the next gate."""
    run_dir, result = gated_run
    gates = [r for r in result.records if "gate_score" in r]
    assert [(r["iteration"], r["gate_score"], r["promoted"], r["best_iteration"])
            for r in gates] == [(i, 0.5, 1.0, i) for i in (2, 4, 6)]
    for step, promoted_at in ((2, 2), (4, 4), (5, 4), (6, 6), (7, 6)):
        saved = saved_state(run_dir, step)
        latest_then = Agent.load(run_dir, step=promoted_at).params
        assert int(saved.best_iteration) == promoted_at
        assert trees_equal(saved.best_params, latest_then), step
        assert trees_equal(saved.params, latest_then) == (step == promoted_at), step
    final = result.train_state
    assert int(final.best_iteration) == 6
    assert trees_equal(final.best_params, Agent.load(run_dir, step=6).params)
    assert not trees_equal(final.best_params, final.params)
    # The metrics file holds the same gate records.
    logged = [r for r in RunDir(run_dir).metrics.read() if "gate_score" in r]
    assert logged == gates


def test_gate_that_cannot_be_passed_keeps_the_first_network(tmp_path):
    config = SMALL.replace(regime="gating", gate_every=2, gate_threshold=0.55, iterations=4,
                           **TIED)
    result = train(config, tmp_path / "run", progress=None, env=ENV)
    initial = init_train_state(ENV, config.program, jax.random.key(config.seed)).params
    final = result.train_state
    gates = [r for r in result.records if "gate_score" in r]
    assert [(r["iteration"], r["gate_score"], r["promoted"], r["best_iteration"])
            for r in gates] == [(2, 0.5, 0.0, 0), (4, 0.5, 0.0, 0)]
    assert int(final.best_iteration) == 0
    assert trees_equal(final.best_params, initial)
    # The latest network trained away from the initial one regardless.
    assert not trees_equal(final.params, initial)


def test_gate_simulations_set_the_arena_search():
    """The arena searches with gate_simulations (0: the training budget, here 4): with
    the same key, the budget's own count replays its arena exactly, another count plays
    other games. Each arena's decision is its score against the threshold."""
    config = SMALL.replace(regime="gating", gate_every=1, iterations=1, gate_games=64,
                           gate_openings=2)
    assert config.program.search.num_simulations == 4

    def gate(simulations):
        (record,) = train(config.replace(gate_simulations=simulations), None,
                          progress=None, env=ENV).records
        assert record["promoted"] == float(record["gate_score"] >= 0.55)
        assert record["best_iteration"] == record["promoted"]
        return record["gate_score"]

    budget = gate(0)
    assert gate(4) == budget
    assert gate(2) != budget  # other games: a deterministic fact of this seed and program


def test_keep_every_keeps_older_checkpoints_for_a_league(gated_run):
    run_dir, _ = gated_run
    kept = sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())
    # The newest three (5, 6, 7) and every multiple of keep_every=2; 1 and 3 are gone.
    assert kept == [2, 4, 5, 6, 7]


def test_a_gate_due_when_a_signal_stops_the_run_still_runs(gated_run, tmp_path):
    """SIGTERM while iteration 4 trains: its evaluation is skipped but its gate, which
    decides what self-play plays with, is not; resumed, the run ends as the one that was
    never stopped, with the same gates."""
    import os
    import signal

    from azjax.run import Stopped

    run_dir = tmp_path / "run"

    def signal_at_three(iterations):
        if iterations == [3]:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Stopped):
        train_group([GATED], [run_dir], progress=None, on_iteration=signal_at_three,
                    env=ENV)
    stop = RunDir(run_dir).metrics.read()[-1]
    assert stop["iteration"] == 4 and (stop["gate_score"], stop["promoted"]) == (0.5, 1.0)
    resumed = train(GATED, run_dir, progress=None, env=ENV)
    _, whole = gated_run
    assert trees_equal(resumed.train_state.params, whole.train_state.params)
    assert trees_equal(resumed.train_state.best_params, whole.train_state.best_params)
    gates = [(r["iteration"], r["gate_score"], r["best_iteration"])
             for r in RunDir(run_dir).metrics.read() if "gate_score" in r]
    assert gates == [(r["iteration"], r["gate_score"], r["best_iteration"])
                     for r in whole.records if "gate_score" in r]


def test_gating_state_survives_a_resume(gated_run):
    run_dir, result = gated_run
    first = result.train_state
    resumed = train(GATED, run_dir, progress=None, env=ENV).train_state  # trains no further
    assert int(resumed.best_iteration) == int(first.best_iteration)
    for a, b in zip(jax.tree.leaves(first.best_params), jax.tree.leaves(resumed.best_params)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_training_logs_scores_against_chosen_baselines(tmp_path):
    config = SMALL.replace(iterations=2, eval_every=1,
                           eval_opponents=("random", "solver", "alphabeta:1"),
                           eval_games=16, eval_openings=0)
    result = train(config, tmp_path / "run", progress=None)
    evaluated = [r for r in RunDir(tmp_path / "run").metrics.read() if "vs random" in r]
    assert [r["iteration"] for r in evaluated] == [1, 2]
    for record in evaluated:
        assert 0.0 <= record["vs random"] <= 1.0
        # Perfect play never loses at tic-tac-toe: the agent scores at most one half.
        assert 0.0 <= record["vs solver"] <= 0.5
        assert 0.0 <= record["vs alphabeta:1"] <= 1.0
    assert (tmp_path / "run" / "training.png").stat().st_size > 0
    assert result.records[-1]["iteration"] == 2


@pytest.mark.parametrize(
    "options, message",
    [
        ({"regime": "elo"}, "regime"),
        ({"gate_threshold": 0.4}, "gate_threshold"),
        ({"gate_games": 0}, "gate_games"),
        ({"eval_opponents": ("grandmaster",)}, "unknown player"),
        ({"eval_opponents": "random"}, "eval_opponents must be a list"),
        ({"eval_games": 0}, "eval_games"),
    ],
)
def test_bad_gating_and_opponent_options_are_clear_errors(options, message):
    with pytest.raises(ValueError, match=message):  # when made, or with the game
        config = SMALL.replace(**options)
        config.check(config.make_env())


@pytest.mark.slow  # 42 s
def test_a_gated_group_gates_each_experiment_as_its_own_run(gated_run, tmp_path):
    """In a vmapped group every experiment has its own best network and gates: the
    group's first experiment is the single gated run (to float rounding), promoting at
    every gate, and the second (another seed, under a bar it cannot pass) keeps its
    initial network."""
    _, alone = gated_run
    strict = GATED.replace(seed=1, gate_threshold=0.55)
    group = train_group([GATED, strict], [tmp_path / "a", tmp_path / "b"], progress=None)
    first, second = group
    gates = [r for r in first.records if "gate_score" in r]
    expected = [r for r in alone.records if "gate_score" in r]
    assert [(r["iteration"], r["promoted"], r["best_iteration"]) for r in gates] == [
        (r["iteration"], r["promoted"], r["best_iteration"]) for r in expected]
    for a, b in zip(jax.tree.leaves(alone.train_state.best_params),
                    jax.tree.leaves(first.train_state.best_params)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-6)
    assert trees_equal(first.train_state.best_params,
                       Agent.load(tmp_path / "a", step=6).params)
    env = envs.make("tictactoe")
    initial = init_train_state(env, strict.program, jax.random.key(strict.seed)).params
    strict_gates = [r for r in second.records if "gate_score" in r]
    assert [(r["iteration"], r["gate_score"], r["promoted"], r["best_iteration"])
            for r in strict_gates] == [(i, 0.5, 0.0, 0) for i in (2, 4, 6)]
    assert int(second.train_state.best_iteration) == 0
    assert trees_equal(second.train_state.best_params, initial)
    assert RunDir(tmp_path / "b").metrics.read() == second.records
