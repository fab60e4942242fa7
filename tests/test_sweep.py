"""Ablation sweeps: grid parsing, compile groups, vmapped = unbatched, statistics, run
directories per experiment, resume, shards and the command line."""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import math
import shutil
import statistics
from pathlib import Path

import jax
import numpy as np
import pytest
from test_gating import SMALL

import azjax.sweep.grid as sweep_grid
import azjax.sweep.sweep as sw
from azjax import Agent, TrainConfig, make_player, train, train_group
from azjax.commands import sweep as sweep_command
from azjax.evaluation.evaluators import make_evaluator
from azjax.evaluation.stats import mean_ci, t_quantile
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.sweep.table import markdown_table, results_table

ROOT = Path(__file__).resolve().parents[1]

# The tiny tic-tac-toe run of the gating tests (tests/tiny.py's), for 2 iterations,
# evaluated and checkpointed after each one.
TINY = SMALL.replace(iterations=2, eval_every=1, checkpoint_every=1)
# Two groups of four experiments (two learning rates x two seeds each): the number of
# gradient steps changes the program, the learning rate does not. The first group's
# program, run alone, is the tiny one (4 gradient steps), compiled once per process.
GRID = ("gradient_steps=4,2", "learning_rate=0.003,0.01")
assert TINY.program.gradient_steps == 4
SEEDS = (0, 1)
TIMING = ("seconds_to_perfect", "wall_time", "positions_per_s")  # differ between runs


def grid(base=TINY, specs=GRID, seeds=SEEDS):
    return sweep_grid.make_grid(base, sweep_grid.parse_params(specs), seeds)


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_timing(rows):
    return sorted(tuple((k, v) for k, v in r.items() if k not in TIMING) for r in rows)


# ------------------------------------------------------------------ names and values


def test_setting_names_resolve_to_real_settings():
    # The names the README lists, derived from the fields (no table of short names).
    readme = {
        "num_simulations": "search.num_simulations", "policy": "search.policy",
        "c_puct": "search.c_puct", "dirichlet_alpha": "search.dirichlet_alpha",
        "dirichlet_fraction": "search.dirichlet_fraction",
        "gumbel_scale": "search.gumbel_scale",
        "gumbel_value_scale": "search.gumbel_value_scale",
        "max_num_considered_actions": "search.max_num_considered_actions",
        "rollout_lambda": "search.rollout_lambda",
        "temperature_moves": "selfplay.temperature_moves",
        "learning_rate": "learner.learning_rate", "batch_size": "learner.batch_size",
        "replay_capacity": "replay_capacity",
    }
    for short, path in readme.items():
        assert sweep_grid.resolve_name(short) == path
        assert sweep_grid.short_names()[short] == path
        TrainConfig().get(path)  # the path exists
    assert sweep_grid.resolve_name("search.c_puct") == "search.c_puct"
    assert sweep_grid.resolve_name("weight_decay") == "learner.weight_decay"  # unique field name
    assert sweep_grid.resolve_name("gradient-steps") == "gradient_steps"
    assert sweep_grid.resolve_name("eval_every") == "eval_every"  # a run option

    p = sweep_grid.parse_param("num_simulations=8,16,64")
    assert (p.path, p.values) == ("search.num_simulations", (8, 16, 64))
    assert sweep_grid.parse_param("learning_rate=1e-3,0.01").values == (0.001, 0.01)
    assert sweep_grid.parse_param("policy=puct,gumbel").values == ("puct", "gumbel")
    assert sweep_grid.parse_param("stop_when_perfect=true,false").values == (True, False)
    config = TINY.with_value("learner.batch_size", 8)
    assert config.program.learner.batch_size == 8
    assert config.program.learner.learning_rate == TINY.program.learner.learning_rate == 2e-3


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
        ("game=go,gomoku", "one game"),
        ("channels=16,nope", "network.channels"),
    ],
)
def test_bad_params_are_value_errors(spec, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        sweep_grid.parse_param(spec)


def test_a_setting_is_swept_once():
    with pytest.raises(ValueError, match="swept twice"):
        sweep_grid.parse_params(["c_puct=1.0", "search.c_puct=2.0"])


# -------------------------------------------------------------------- grid and groups


def test_grid_is_the_product_times_seeds():
    experiments = grid(specs=("num_simulations=2,4", "c_puct=1.0,2.0", "learning_rate=0.01"))
    assert len(experiments) == 2 * 2 * 1 * len(SEEDS)
    seen = {(e.config.program.search.num_simulations, e.config.program.search.c_puct,
             e.config.program.learner.learning_rate, e.config.seed) for e in experiments}
    assert len(seen) == len(experiments)
    assert {e.seed for e in experiments} == set(SEEDS)
    assert all(e.config.program.network == TINY.program.network for e in experiments)
    names = {e.run_name for e in experiments}
    assert len(names) == len(experiments)
    assert "num_simulations=2/c_puct=1.0/learning_rate=0.01/seed=0" in names


def test_only_traced_settings_seeds_and_run_options_share_a_group():
    shared = grid(specs=("c_puct=1.0,2.0", "dirichlet_alpha=0.3,1.0", "dirichlet_fraction=0.0,0.25",
                         "gumbel_scale=0.5,1.0", "learning_rate=0.001,0.01",
                         "eval_every=1,2", "iterations=2,3"))
    assert [g.size for g in sweep_grid.group_experiments(shared)] == [len(shared)]

    for spec in ("num_simulations=2,4", "policy=puct,gumbel", "batch_size=16,32",
                 "replay_capacity=512,1024", "temperature_moves=0,2",
                 "max_num_considered_actions=4,9", "weight_decay=0.0,0.001",
                 "gradient_steps=2,4", "regime=alphazero,gating"):
        groups = sweep_grid.group_experiments(grid(specs=(spec, "c_puct=1.0,2.0")))
        assert [g.size for g in groups] == [4, 4], spec
        for g in groups:  # one value of the compiled setting per group, all seeds and c_puct
            path = sweep_grid.resolve_name(spec.split("=")[0])
            assert len({e.config.get(path) for e in g.experiments}) == 1
            assert {(e.seed, e.config.program.search.c_puct) for e in g.experiments} == {
                (s, c) for s in SEEDS for c in (1.0, 2.0)}

    # Playouts are compiled in for lambda > 0 only: lambda 0 stays on its own.
    groups = sweep_grid.group_experiments(grid(specs=("rollout_lambda=0.0,0.5,1.0",)))
    lambdas = [sorted({e.config.program.search.rollout_lambda for e in g.experiments})
               for g in groups]
    assert lambdas == [[0.0], [0.5, 1.0]]


def test_shards_are_a_deterministic_partition_of_the_grid():
    experiments = grid(specs=("num_simulations=2,4,8", "c_puct=1.0,2.0"), seeds=(0, 1, 2))
    groups = sweep_grid.group_experiments(experiments)
    everything = sorted((e.label, e.seed) for e in experiments)
    for n in range(1, 8):
        shards = sweep_grid.split_shards(groups, n)
        assert len(shards) == n
        keys = [sorted((e.label, e.seed) for g in s for e in g.experiments) for s in shards]
        assert sorted(k for part in keys for k in part) == everything  # union, no repeats
        assert keys == [sorted((e.label, e.seed) for g in s for e in g.experiments)
                        for s in sweep_grid.split_shards(groups, n)]
        sizes = [len(k) for k in keys]
        assert max(sizes) - min(sizes) <= 6  # at most one whole group apart
        assert min(sizes) > 0  # (n <= 7 shards of 18 experiments)
        for s in shards:  # every unit still runs as one program
            for g in s:
                assert len({e.config.program.compile_key() for e in g.experiments}) == 1
    assert sweep_grid.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "1", "a/b", "1/0"):
        with pytest.raises(ValueError, match="--shard"):
            sweep_grid.parse_shard(bad)


# ------------------------------------------------------------------------ statistics


def test_t_quantiles_match_the_tables():
    # Two-sided 95% (and 99%) critical values of Student's t from standard tables.
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228,
             30: 2.042}
    for df, value in table.items():
        assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)
    assert t_quantile(0.995, 5) == pytest.approx(4.032, abs=1e-3)
    assert t_quantile(0.975, 1000) == pytest.approx(1.962, abs=1e-3)


def test_mean_ci_is_the_t_interval():
    values = [3.0, 5.0, 4.0, 8.0, 6.0]
    mean, low, high = mean_ci(values)
    half = 2.776 * statistics.stdev(values) / math.sqrt(len(values))
    assert mean == pytest.approx(statistics.mean(values))
    assert low == pytest.approx(mean - half, abs=1e-3)
    assert high == pytest.approx(mean + half, abs=1e-3)
    one = mean_ci([2.5])
    assert one[0] == 2.5 and math.isnan(one[1]) and math.isnan(one[2])


def test_table_marks_censored_times():
    rows = [
        {"config": "a", "x": "1", "seed": "0", "reached_perfect": "1", "games_to_perfect": "10"},
        {"config": "a", "x": "1", "seed": "1", "reached_perfect": "0", "games_to_perfect": "30"},
        {"config": "b", "x": "2", "seed": "0", "reached_perfect": "1", "games_to_perfect": "5"},
    ]
    table = results_table(rows, ["x"], ["games_to_perfect"])
    assert [r["seeds"] for r in table] == [2, 1]
    assert [r["reached_perfect"] for r in table] == [1, 1]
    # The median of the seeds that got there: the censored 30 is no time to perfect play.
    assert table[0]["games_to_perfect_median"] == 10.0
    assert "games_to_perfect_mean" not in table[0]
    text = markdown_table(table, ["x"], ["games_to_perfect"])
    assert "| 1 | 2 | 1/2 | 1/2, median 10 |" in text and "| 2 | 1 | 1/1 | 1/1, median 5 |" in text


# ------------------------------------------------------------- sweeps on disk, resume


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    lines = []
    result = sw.run_sweep(TINY, sweep_grid.parse_params(GRID), SEEDS, out, write=lines.append)
    return out, result, lines


@pytest.fixture
def no_plots(monkeypatch):
    """Runs and sweeps that draw no plots (about a second each), for the tests that do not
    look at them: `swept` draws them all, and its test checks them."""
    monkeypatch.setattr(RunDir, "plot", lambda run, records: None)
    monkeypatch.setattr(sw, "plot_sweep", lambda *args, **kwargs: None)


# Not slow, though its sweep takes more than 20 s: four other tests read that sweep.
def test_every_experiment_is_a_run_directory_and_the_sweep_a_table(swept):
    out, result, lines = swept
    assert len(result.groups_run) == 2 and result.experiments_run == 8
    experiments = grid()
    runs = sorted(str(p.relative_to(out / "runs")) for p in sw.find_runs(out / "runs"))
    assert runs == sorted(e.run_name for e in experiments)
    for e in experiments:
        run_dir = out / "runs" / e.run_name
        assert RunDir(run_dir).load_config() == e.config.replace(devices=1)  # its own config
        records = RunDir(run_dir).metrics.read()
        assert [r["iteration"] for r in records] == [1, 2]
        assert all("net_optimal_share" in r for r in records)  # evaluated every iteration
        assert (run_dir / "training.png").read_bytes()[:4] == b"\x89PNG"
        agent = Agent.load(run_dir)
        assert agent.program == e.config.program
        assert sw.run_finished(run_dir)
        # asked for more iterations (a rerun with a larger --iterations) it goes on
        assert not sw.run_finished(run_dir, e.config.run.replace(iterations=3))
        # A player spec can name it (its path holds no comma, which would split the spec).
        player = make_player(f"alphazero:{run_dir},sims=2", agent.env)
        assert player.name == f"alphazero:{run_dir},sims=2" and player.jittable

    # The tables against the runs' own files, read as plain JSON.
    on_disk = {}
    for path in (out / "runs").glob("**/config.json"):
        config = json.loads(path.read_text())
        records = [json.loads(line) for line in
                   (path.parent / "metrics.jsonl").read_text().splitlines()]
        on_disk[str(path.parent.relative_to(out / "runs"))] = (config, records)
    assert len(on_disk) == 8
    rows = read_csv(out / "seeds.csv")
    assert sorted(r["run_dir"] for r in rows) == sorted(on_disk)
    assert sorted((r["config"], r["seed"]) for r in rows) == sorted(
        (e.label, str(e.seed)) for e in experiments)
    for r in rows:
        config, records = on_disk[r["run_dir"]]
        last = records[-1]
        assert r["gradient_steps"] == str(config["program"]["gradient_steps"])
        assert float(r["learner.learning_rate"]) == config["program"]["learner"]["learning_rate"]
        assert int(r["seed"]) == config["seed"]
        assert int(r["iterations"]) == last["iteration"] == TINY.run.iterations
        assert float(r["net_optimal_share"]) == last["net_optimal_share"]
        assert int(r["games"]) == last["games"] > 0
        assert int(r["positions"]) == last["positions"] == 2 * 16 * 9
        # The first perfect evaluation, or censored at the budget.
        perfect = [rec for rec in records if rec.get("perfect")]
        reached = (perfect or [last])[0]
        assert r["reached_perfect"] == str(int(bool(perfect)))
        assert int(r["games_to_perfect"]) == reached["games"]
        assert int(r["iterations_to_perfect"]) == reached["iteration"]
    assert sorted((r["gradient_steps"], r["learner.learning_rate"], r["seed"]) for r in rows) == (
        sorted((g, lr, s) for g in ("2", "4") for lr in ("0.003", "0.01") for s in ("0", "1")))
    # Per configuration: the mean over its two seeds and the t-interval with one degree
    # of freedom, mean -+ 12.706 x |a - b| / 2, clipped to [0, 1].
    shares = {}
    for config, records in on_disk.values():
        program = config["program"]
        key = (str(program["gradient_steps"]), program["learner"]["learning_rate"])
        shares.setdefault(key, []).append(records[-1]["net_optimal_share"])
    table = read_csv(out / "results.csv")
    assert len(table) == 4
    for t in table:
        members = shares[(t["gradient_steps"], float(t["learner.learning_rate"]))]
        assert int(t["seeds"]) == len(members) == 2
        assert float(t["net_optimal_share_mean"]) == pytest.approx(statistics.mean(members))
        low, high = float(t["net_optimal_share_ci_low"]), float(t["net_optimal_share_ci_high"])
        half = 12.7062 * abs(members[0] - members[1]) / 2
        mean = statistics.mean(members)
        if half > 0:
            assert (low, high) == pytest.approx((max(0.0, mean - half), min(1.0, mean + half)),
                                                abs=1e-4)
        elif 0.0 < mean < 1.0:  # both seeds alike inside (0, 1): no spread, no interval
            assert math.isnan(low) and math.isnan(high)
        else:  # both at 0% or 100%: the exact interval for 2 of 2 seeds there
            edge = 0.025 ** 0.5
            assert (low, high) == pytest.approx((edge, 1.0) if mean == 1.0 else (0.0, 1 - edge))
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert any("ETA" in line or "done" in line for line in lines if line.startswith("group:"))
    assert "| gradient_steps | learning_rate | seeds | perfect |" in result.markdown


def test_rerun_skips_finished_runs_and_reruns_only_missing_ones(swept, no_plots):
    out, first, _ = swept
    again = sw.run_sweep(TINY, sweep_grid.parse_params(GRID), SEEDS, out, write=None)
    assert again.groups_run == [] and again.experiments_skipped == 8
    assert len(read_csv(out / "seeds.csv")) == 8

    # Lose the first group's runs (as if never run): only that group runs again.
    rows = read_csv(out / "seeds.csv")
    lost = [r for r in rows if r["gradient_steps"] == "4"]
    records = {r["run_dir"]: RunDir(out / "runs" / r["run_dir"]).metrics.read() for r in lost}
    for r in lost:
        shutil.rmtree(out / "runs" / r["run_dir"])
    third = sw.run_sweep(TINY, sweep_grid.parse_params(GRID), SEEDS, out, write=None)
    assert third.experiments_run == 4 and third.experiments_skipped == 4
    assert third.groups_run == [first.groups_run[0]]
    rerun = read_csv(out / "seeds.csv")
    assert len(rerun) == 8
    # The rerun experiments reproduce their earlier results exactly.
    assert without_timing(r for r in rerun if r["gradient_steps"] == "4") == (
        without_timing(lost))
    for name, before in records.items():
        assert without_timing(RunDir(out / "runs" / name).metrics.read()) == (
            without_timing(before))

    with pytest.raises(ValueError, match="another base config"):
        sw.run_sweep(TINY.replace(value_target_mix=0.25), sweep_grid.parse_params(GRID), SEEDS, out,
                     write=None)
    with pytest.raises(ValueError, match="sweep over"):
        sw.run_sweep(TINY, sweep_grid.parse_params(["gradient_steps=4,2"]), SEEDS, out, write=None)


class Killed(Exception):
    pass


@pytest.mark.slow  # about 30 s; tests/test_resume.py resumes killed groups quickly
def test_interrupted_group_continues_from_its_checkpoints(swept, tmp_path, no_plots):
    out, _, _ = swept

    def kill_after_first(iterations):
        if min(iterations) >= 1:
            raise Killed

    with pytest.raises(Killed):
        sw.run_sweep(TINY, sweep_grid.parse_params(GRID), SEEDS, tmp_path, write=None,
                     on_iteration=kill_after_first)
    started = sw.find_runs(tmp_path / "runs")
    assert len(started) == 4 and not any(sw.run_finished(p) for p in started)
    lines = []
    sw.run_sweep(TINY, sweep_grid.parse_params(GRID), SEEDS, tmp_path, write=lines.append)
    assert sum("resumed" in line and "at iteration 1" in line for line in lines) == 4
    assert without_timing(read_csv(tmp_path / "seeds.csv")) == without_timing(
        read_csv(out / "seeds.csv"))


def test_shards_merge_into_the_same_table(swept, tmp_path, no_plots):
    out, _, _ = swept
    for i in (1, 2):
        result = sw.run_sweep(TINY, sweep_grid.parse_params(GRID), SEEDS, tmp_path, shard=(i, 2),
                              write=None)
        assert result.experiments_run == 4
    assert without_timing(read_csv(tmp_path / "seeds.csv")) == without_timing(
        read_csv(out / "seeds.csv"))
    merged = sw.merge(tmp_path, write=None)
    expected = [r["config"] for r in read_csv(out / "results.csv")]
    assert [r["config"] for r in merged.table] == expected


@functools.cache
def real_evaluator():
    """The tic-tac-toe evaluation (its exact game values solved once)."""
    return make_evaluator(TINY.make_env())


class LenientEvaluator:
    """The real tic-tac-toe evaluation, with 'perfect' at a lower, reachable bar."""

    can_be_perfect = True

    def __init__(self, bar: float):
        self.real = real_evaluator()
        self.summary_metrics = self.real.summary_metrics
        self.bar = bar

    def network_metrics(self, player):
        metrics = self.real.network_metrics(player)
        return {**metrics, "perfect": float(metrics["net_optimal_share"] >= self.bar)}

    def search_metrics(self, player, key):
        return self.real.search_metrics(player, key)


def test_time_to_perfect_and_stopping(tmp_path, no_plots):
    configs = [e.config for e in sweep_grid.group_experiments(grid())[0].experiments]
    paths = [p.path for p in sweep_grid.parse_params(GRID)]

    def rows(name, evaluator, stop):
        dirs = [tmp_path / name / str(i) for i in range(len(configs))]
        train_group([c.replace(stop_when_perfect=stop) for c in configs], dirs, progress=None,
                    evaluator=evaluator)
        return [sw.run_row(d, paths, can_be_perfect=True) for d in dirs]

    # Everyone passes at the first evaluation: each run stops there.
    for r in rows("stopping", LenientEvaluator(0.0), True):
        assert r["iterations"] == 1 < TINY.run.iterations and r["reached_perfect"] == 1
        assert r["iterations_to_perfect"] == 1 and r["games_to_perfect"] == r["games"]
    # Without stopping, training goes on and only the first perfect point is kept.
    for r in rows("going_on", LenientEvaluator(0.0), False):
        assert r["iterations"] == 2 and r["iterations_to_perfect"] == 1
        assert 0 < r["games_to_perfect"] < r["games"]
    # Nobody passes: censored at the budget.
    assert all(r["reached_perfect"] == 0 and r["games_to_perfect"] == r["games"]
               for r in rows("never", LenientEvaluator(1.01), True))


# ---------------------------------------------------------------- one vmapped program


def test_vmapped_group_matches_unbatched_runs():
    """Each experiment of a vmapped group computes what its own run computes (to float
    rounding: the batched program may order sums differently)."""
    group = sweep_grid.group_experiments(grid())[0]  # 2 learning rates x 2 seeds
    assert {e.config.program.gradient_steps for e in group.experiments} == {4}
    configs = [e.config for e in group.experiments]
    assert {(c.seed, c.program.learner.learning_rate) for c in configs} == {
        (s, lr) for s in SEEDS for lr in (0.003, 0.01)}
    together = train_group(configs, progress=None)
    for config, vmapped in zip(configs, together):
        alone = train(config, progress=None)
        for a, b in zip(jax.tree.leaves(alone.train_state.params),
                        jax.tree.leaves(vmapped.train_state.params)):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-6)
        assert int(vmapped.train_state.games) == int(alone.train_state.games)
        assert len(vmapped.records) == len(alone.records) == TINY.run.iterations
        for ours, theirs in zip(vmapped.records, alone.records):
            assert ours.keys() == theirs.keys()
            for key, value in theirs.items():
                if key not in TIMING:
                    assert ours[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    # Different seeds and learning rates did give different networks.
    first = jax.tree.leaves(together[0].train_state.params)[0]
    assert all(not np.allclose(first, jax.tree.leaves(r.train_state.params)[0])
               for r in together[1:])


def test_a_group_must_share_one_program(tmp_path):
    with pytest.raises(ValueError, match="compile to one program"):
        train_group([TINY, TINY.replace(gradient_steps=3)], progress=None)
    with pytest.raises(ValueError, match="share a run directory"):
        train_group([TINY, TINY.replace(seed=1)], ["same", "same"], progress=None)
    # A directory holding another run stops the whole group before anything is written.
    (tmp_path / "b").mkdir()
    TINY.replace(seed=5).save(tmp_path / "b" / "config.json")
    with pytest.raises(RunDirError, match="seed: saved 5, given 1"):
        train_group([TINY, TINY.replace(seed=1)], [tmp_path / "a", tmp_path / "b"],
                    progress=None)
    assert not (tmp_path / "a").exists()


# ---------------------------------------------------------------------- command line


def sweep_script():
    """`azjax sweep`'s module (its `main`; tests/test_cli_errors.py runs experiments/sweep.py
    in a process of its own)."""
    return sweep_command


def test_cli_errors_are_one_line_and_exit_2(swept, capsys):
    out, _, _ = swept
    main = sweep_script().main
    for args, message in [
        (["--param", "foo=1,2"], "unknown parameter 'foo'"),
        (["--param", "num_simulations=8,x"], "bad value 'x'"),
        (["--merge", "--out", str(out / "nothing")], "holds no sweep"),
    ]:
        capsys.readouterr()
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.strip().splitlines() == [err.strip()]
        assert err.startswith("error: ") and message in err
        assert "Traceback" not in err


def test_every_scalar_setting_is_sweepable():
    """The sweep reads its settings from the config's own fields: a new field is sweepable
    with no table to update."""
    fields = sweep_grid.sweepable_fields()
    for half in (TINY.program, TINY.run):
        for field in dataclasses.fields(half):
            if field.name not in sweep_grid.NOT_SWEPT and not dataclasses.is_dataclass(
                    getattr(half, field.name)):
                assert field.name in fields
