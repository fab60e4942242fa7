"""Ablation sweeps: grid parsing, compile groups, vmapped = unbatched, statistics, CSVs,
resume, shards and the command line."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from test_gating import SMALL

import azjax.sweep as sw
from azjax import TrainConfig
from azjax.evaluation import TicTacToeEvaluator
from azjax.loop import init_train_state, make_iteration_fn

ROOT = Path(__file__).resolve().parents[1]

# The tiny tic-tac-toe run of the gating tests, for 2 iterations, evaluated and
# checkpointed after each one.
TINY = dataclasses.replace(SMALL, iterations=2, eval_every=1, checkpoint_every=1)
# Two groups of four experiments (two learning rates x two seeds each). They differ in a
# driver setting only, so they share one compiled program (compiled once per session).
GRID = ("eval_every=1,2", "learning_rate=0.003,0.01")
SEEDS = (0, 1)
TIMING = ("seconds_to_perfect", "group_wall_s")  # wall times differ between runs


def grid(base=TINY, specs=GRID, seeds=SEEDS):
    return sw.make_grid(base, sw.parse_params(specs), seeds)


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_timing(rows):
    return sorted(tuple((k, v) for k, v in r.items() if k not in TIMING) for r in rows)


# ------------------------------------------------------------------ names and values


def test_short_names_map_to_real_settings():
    for short, path in sw.SHORT_NAMES.items():
        assert sw.resolve_name(short) == path
        sw.get_setting(TrainConfig(), path)  # the path exists
    assert sw.resolve_name("search.c_puct") == "search.c_puct"
    assert sw.resolve_name("weight_decay") == "learner.weight_decay"  # unique field name
    assert sw.resolve_name("gradient-steps") == "gradient_steps"

    p = sw.parse_param("num_simulations=8,16,64")
    assert (p.path, p.values) == ("search.num_simulations", (8, 16, 64))
    assert sw.parse_param("learning_rate=1e-3,0.01").values == (0.001, 0.01)
    assert sw.parse_param("policy=puct,gumbel").values == ("puct", "gumbel")
    assert sw.parse_param("stop_when_perfect=true,false").values == (True, False)
    config = sw.with_setting(TINY, "learner.batch_size", 8)
    assert config.learner.batch_size == 8 and config.learner.learning_rate == 3e-3


@pytest.mark.parametrize(
    "spec, message",
    [
        ("foo=1,2", "unknown parameter 'foo'"),
        ("num_simulations=8,x", "bad value 'x' for search.num_simulations"),
        ("num_simulations=1.5", "bad value '1.5'"),
        ("c_puct=1.0,nan", "bad value 'nan'"),
        ("policy=puct,alphabeta", "expected one of puct, gumbel"),
        ("num_simulations", "expected NAME=V1,V2"),
        ("num_simulations=", "empty value"),
        ("num_simulations=8,,16", "empty value"),
        ("num_simulations=8,8", "repeated"),
        ("seed=1,2", "--seeds"),
        ("channels=16,nope", "network.channels"),
    ],
)
def test_bad_params_are_value_errors(spec, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        sw.parse_param(spec)


def test_a_setting_is_swept_once():
    with pytest.raises(ValueError, match="swept twice"):
        sw.parse_params(["c_puct=1.0", "search.c_puct=2.0"])


# -------------------------------------------------------------------- grid and groups


def test_grid_is_the_product_times_seeds():
    experiments = grid(specs=("num_simulations=2,4", "c_puct=1.0,2.0", "learning_rate=0.01"))
    assert len(experiments) == 2 * 2 * 1 * len(SEEDS)
    seen = {(e.config.search.num_simulations, e.config.search.c_puct,
             e.config.learner.learning_rate, e.config.seed) for e in experiments}
    assert len(seen) == len(experiments)
    assert {e.seed for e in experiments} == set(SEEDS)
    assert all(e.config.network == TINY.network for e in experiments)


def test_only_traced_settings_and_seeds_share_a_group():
    traced = grid(specs=("c_puct=1.0,2.0", "dirichlet_alpha=0.3,1.0", "dirichlet_fraction=0.0,0.25",
                         "gumbel_scale=0.5,1.0", "learning_rate=0.001,0.01"))
    assert [g.size for g in sw.group_experiments(traced)] == [len(traced)]

    for spec in ("num_simulations=2,4", "policy=puct,gumbel", "batch_size=16,32",
                 "replay_capacity=512,1024", "temperature_moves=0,2",
                 "max_num_considered_actions=4,9", "weight_decay=0.0,0.001",
                 "gradient_steps=2,4"):
        groups = sw.group_experiments(grid(specs=(spec, "c_puct=1.0,2.0")))
        assert [g.size for g in groups] == [4, 4], spec
        for g in groups:  # one value of the shape setting per group, all seeds and c_puct
            path = sw.resolve_name(spec.split("=")[0])
            assert len({sw.get_setting(e.config, path) for e in g.experiments}) == 1
            assert {(e.seed, e.config.search.c_puct) for e in g.experiments} == {
                (s, c) for s in SEEDS for c in (1.0, 2.0)}

    # Playouts are compiled in for lambda > 0 only: lambda 0 stays on its own.
    groups = sw.group_experiments(grid(specs=("rollout_lambda=0.0,0.5,1.0",)))
    lambdas = [sorted({e.config.search.rollout_lambda for e in g.experiments}) for g in groups]
    assert lambdas == [[0.0], [0.5, 1.0]]


def test_shards_are_a_deterministic_partition_of_the_grid():
    experiments = grid(specs=("num_simulations=2,4,8", "c_puct=1.0,2.0"), seeds=(0, 1, 2))
    groups = sw.group_experiments(experiments)
    everything = sorted((e.label, e.seed) for e in experiments)
    for n in range(1, 8):
        shards = sw.split_shards(groups, n)
        assert len(shards) == n
        keys = [sorted((e.label, e.seed) for g in s for e in g.experiments) for s in shards]
        assert sorted(k for part in keys for k in part) == everything  # union, no repeats
        assert keys == [sorted((e.label, e.seed) for g in s for e in g.experiments)
                        for s in sw.split_shards(groups, n)]
        sizes = [len(k) for k in keys]
        assert max(sizes) - min(sizes) <= 6  # at most one whole group apart
        if n <= len(experiments):
            assert min(sizes) > 0
        for s in shards:  # every unit still runs as one program
            for g in s:
                assert len({sw.compile_key(e.config) for e in g.experiments}) == 1
    assert sw.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "1", "a/b", "1/0"):
        with pytest.raises(ValueError, match="--shard"):
            sw.parse_shard(bad)


# ------------------------------------------------------------------------ statistics


def test_t_quantiles_match_the_tables():
    # Two-sided 95% (and 99%) critical values of Student's t from standard tables.
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228,
             30: 2.042}
    for df, value in table.items():
        assert sw.t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)
    assert sw.t_quantile(0.995, 5) == pytest.approx(4.032, abs=1e-3)
    assert sw.t_quantile(0.975, 1000) == pytest.approx(1.962, abs=1e-3)


def test_mean_ci_is_the_t_interval():
    values = [3.0, 5.0, 4.0, 8.0, 6.0]
    mean, low, high = sw.mean_ci(values)
    half = 2.776 * statistics.stdev(values) / math.sqrt(len(values))
    assert mean == pytest.approx(statistics.mean(values))
    assert (low, high) == (pytest.approx(mean - half, abs=1e-3), pytest.approx(mean + half, abs=1e-3))
    one = sw.mean_ci([2.5])
    assert one[0] == 2.5 and math.isnan(one[1]) and math.isnan(one[2])


def test_table_marks_censored_times():
    rows = [
        {"config": "a", "x": "1", "seed": "0", "reached_perfect": "1", "games_to_perfect": "10"},
        {"config": "a", "x": "1", "seed": "1", "reached_perfect": "0", "games_to_perfect": "30"},
        {"config": "b", "x": "2", "seed": "0", "reached_perfect": "1", "games_to_perfect": "5"},
    ]
    table = sw.results_table(rows, ["x"], ["games_to_perfect"])
    assert [r["seeds"] for r in table] == [2, 1]
    assert [r["reached_perfect"] for r in table] == [1, 1]
    assert table[0]["games_to_perfect_mean"] == 20.0
    text = sw.markdown_table(table, ["x"], ["games_to_perfect"])
    assert "| 1 | 2 | 1/2 | ≥ 20 ± " in text and "| 2 | 1 | 1/1 | 5 |" in text


# ------------------------------------------------------------- sweeps on disk, resume


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    lines = []
    result = sw.run_sweep(TINY, sw.parse_params(GRID), SEEDS, out, write=lines.append)
    return out, result, lines


def test_sweep_writes_per_seed_rows_table_and_plot(swept):
    out, result, lines = swept
    assert len(result.groups_run) == 2 and result.experiments_run == 8
    rows = read_csv(out / "seeds.csv")
    assert sorted((r["config"], r["seed"]) for r in rows) == sorted(
        (e.label, str(e.seed)) for e in grid())
    for r in rows:
        assert r["eval_every"] in ("1", "2")
        assert r["learner.learning_rate"] in ("0.003", "0.01")
        assert int(r["iterations"]) == TINY.iterations
        assert 0.0 <= float(r["net_optimal_share"]) <= 1.0
        assert int(r["games"]) > 0 and int(r["positions"]) == 2 * 16 * 9
        if r["reached_perfect"] == "0":  # censored at the budget
            assert r["games_to_perfect"] == r["games"]
            assert int(r["iterations_to_perfect"]) == TINY.iterations
    table = read_csv(out / "results.csv")
    assert len(table) == 4
    for t in table:
        members = [float(r["net_optimal_share"]) for r in rows if r["config"] == t["config"]]
        assert int(t["seeds"]) == 2
        mean, low, high = sw.mean_ci(members)
        assert float(t["net_optimal_share_mean"]) == pytest.approx(mean)
        assert mean == pytest.approx(np.mean(members))
        assert float(t["net_optimal_share_ci_low"]) == pytest.approx(low)
        assert float(t["net_optimal_share_ci_high"]) == pytest.approx(high)
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert any("ETA" in line or "done" in line for line in lines if line.startswith("sweep:"))
    assert "| eval_every | learning_rate | seeds | perfect |" in result.markdown
    assert not list((out / "groups").iterdir())  # finished groups leave no checkpoints


def test_rerun_skips_finished_groups_and_reruns_only_missing_rows(swept):
    out, first, _ = swept
    again = sw.run_sweep(TINY, sw.parse_params(GRID), SEEDS, out, write=None)
    assert again.groups_run == [] and again.experiments_skipped == 8
    assert len(read_csv(out / "seeds.csv")) == 8

    # Drop the rows of the first group (as if killed before writing them): only it reruns.
    rows = read_csv(out / "seeds.csv")
    lost = [r for r in rows if r["eval_every"] == "1"]
    sw.write_csv(out / "seeds.csv", [r for r in rows if r not in lost])
    third = sw.run_sweep(TINY, sw.parse_params(GRID), SEEDS, out, write=None)
    assert third.experiments_run == 4 and third.experiments_skipped == 4
    assert third.groups_run == [first.groups_run[0]]
    rerun = read_csv(out / "seeds.csv")
    assert len(rerun) == 8
    # The rerun experiments reproduce their earlier results exactly.
    assert without_timing(r for r in rerun if r["eval_every"] == "1") == (
        without_timing(lost))

    with pytest.raises(ValueError, match="another base config"):
        sw.run_sweep(dataclasses.replace(TINY, gradient_steps=3), sw.parse_params(GRID),
                     SEEDS, out, write=None)


class Killed(Exception):
    pass


def test_interrupted_group_continues_from_its_checkpoint(swept, tmp_path):
    out, _, _ = swept

    def kill_after_first(iteration, perfect, finished):
        if iteration == 1:
            raise Killed

    with pytest.raises(Killed):
        sw.run_sweep(TINY, sw.parse_params(GRID), SEEDS, tmp_path, write=None,
                     on_iteration=kill_after_first)
    (saved,) = (tmp_path / "groups").iterdir()
    assert json.loads((saved / "progress.json").read_text())["iteration"] == 1
    lines = []
    sw.run_sweep(TINY, sw.parse_params(GRID), SEEDS, tmp_path, write=lines.append)
    assert any("resumed at iteration 1" in line for line in lines)
    assert without_timing(read_csv(tmp_path / "seeds.csv")) == without_timing(
        read_csv(out / "seeds.csv"))


def test_shards_merge_into_the_same_table(swept, tmp_path):
    out, _, _ = swept
    for i in (1, 2):
        result = sw.run_sweep(TINY, sw.parse_params(GRID), SEEDS, tmp_path, shard=(i, 2),
                              write=None)
        assert result.experiments_run == 4
    assert sorted(p.name for p in tmp_path.glob("seeds*.csv")) == [
        "seeds-shard-1-of-2.csv", "seeds-shard-2-of-2.csv"]
    assert without_timing(sw.read_seed_rows(tmp_path)[1]) == without_timing(
        read_csv(out / "seeds.csv"))
    merged = sw.merge(tmp_path, write=None)
    assert [r["config"] for r in merged.table] == [r["config"] for r in read_csv(out / "results.csv")]


class LenientEvaluator:
    """The real tic-tac-toe evaluation, with 'perfect' at a lower, reachable bar."""

    def __init__(self, bar: float):
        self.real = sw.game_evaluator(TINY.make_env(), TINY)
        assert isinstance(self.real, TicTacToeEvaluator)
        self.bar = bar

    def network_metrics(self, params):
        metrics = self.real.network_metrics(params)
        return {**metrics, "perfect": float(metrics["net_optimal_share"] >= self.bar)}


def test_time_to_perfect_and_stopping():
    group = sw.group_experiments(grid())[0]
    # Everyone passes at the first evaluation: the group stops there.
    stopping = sw.Group(tuple(dataclasses.replace(e, config=dataclasses.replace(
        e.config, stop_when_perfect=True)) for e in group.experiments))
    rows = sw.run_group(stopping, write=None, evaluator=LenientEvaluator(0.0))
    for r in rows:
        assert r["iterations"] == 1 < TINY.iterations and r["reached_perfect"] == 1
        assert r["iterations_to_perfect"] == 1 and r["games_to_perfect"] == r["games"]
    # Without stopping, training goes on and only the first perfect point is kept.
    rows = sw.run_group(group, write=None, evaluator=LenientEvaluator(0.0))
    for r in rows:
        assert r["iterations"] == 2 and r["iterations_to_perfect"] == 1
        assert 0 < r["games_to_perfect"] < r["games"]
    # Nobody passes: censored at the budget.
    rows = sw.run_group(group, write=None, evaluator=LenientEvaluator(1.01))
    assert all(r["reached_perfect"] == 0 and r["games_to_perfect"] == r["games"] for r in rows)


# ---------------------------------------------------------------- one vmapped program


def test_vmapped_group_matches_unbatched_runs():
    """Each experiment of a vmapped group computes what its own run computes: `train`
    runs `jit(make_iteration_fn(env, config))` from `init_train_state(env, config,
    key(config.seed))`; the reference here is built from another experiment's config
    (the learning rate lives in the optimizer state, not in the function)."""
    group = sw.group_experiments(grid())[0]  # 2 learning rates x 2 seeds
    configs = [e.config for e in group.experiments]
    assert {(c.seed, c.learner.learning_rate) for c in configs} == {
        (s, lr) for s in SEEDS for lr in (0.003, 0.01)}
    env = TINY.make_env()
    step = sw.make_group_step(env, configs)
    state = sw.init_group_state(env, configs)
    for _ in range(2):
        state, metrics = step(state)

    single = jax.jit(make_iteration_fn(env, configs[-1]), donate_argnums=0)
    for i, config in enumerate(configs):
        alone = init_train_state(env, config, jax.random.key(config.seed))
        for _ in range(2):
            alone, alone_metrics = single(alone)
        for a, b in zip(jax.tree.leaves(alone.params), jax.tree.leaves(sw.unstack(state.params, i))):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-6)
        assert int(state.games[i]) == int(alone.games)
        for key, value in alone_metrics.items():
            assert float(metrics[key][i]) == pytest.approx(float(value), rel=1e-4, abs=1e-6), key
    # Different seeds and learning rates did give different networks.
    first = jax.tree.leaves(sw.unstack(state.params, 0))[0]
    assert all(not np.allclose(first, jax.tree.leaves(sw.unstack(state.params, i))[0])
               for i in range(1, len(configs)))


# ---------------------------------------------------------------------- command line


def test_cli_errors_are_one_line_and_exit_2(swept):
    out, _, _ = swept
    for args, message in [
        (["--param", "foo=1,2"], "unknown parameter 'foo'"),
        (["--param", "num_simulations=8,x"], "bad value 'x'"),
        (["--merge", "--out", str(out / "nothing")], "holds no sweep"),
    ]:
        proc = subprocess.run([sys.executable, str(ROOT / "experiments" / "sweep.py"), *args],
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
        assert proc.stderr.startswith("error: ") and message in proc.stderr
        assert "Traceback" not in proc.stderr
