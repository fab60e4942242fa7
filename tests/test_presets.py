"""Recipes in two variants (cpu, gpu), picked by the backend, `--preset`, or the run being
resumed; cadences in minutes of wall time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import pytest
from test_training import SMALL
from tiny import FLAGS

import envs.limits
from azjax import train
from azjax.core.program import program_bytes
from azjax.driver.warm_up import warm_up_config
from azjax.run import checkpoint as ckpt
from azjax.run.checkpoint import read_metrics
from azjax.run.recipes import CPU_RECIPES, GPU_RECIPES, PRESETS, defaults_for, recipe

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import _cli
from _cli import Experiment, main, parse_with_preset

GB = 10**9
CARD = 16 * GB  # the accelerator the gpu variants are sized for
# The tiny program's options (tests/tiny.py) without its --preset: whichever variant a
# run starts from, they make its program the tiny one, compiled once per process.
assert FLAGS[:2] == ["--preset", "cpu"]
TINY_OPTIONS = FLAGS[2:]


@pytest.mark.parametrize("backend, preset", [("cpu", "cpu"), ("gpu", "gpu"), ("tpu", "gpu")])
def test_the_backend_picks_its_variant_and_records_it(monkeypatch, backend, preset):
    """Without a preset, a recipe is the variant of the backend JAX runs on (whichever
    backend runs this test: it is told which one to be)."""
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    for name in CPU_RECIPES:
        assert recipe(name) == recipe(name, preset)
        assert defaults_for(name) == recipe(name, preset)
    for name in CPU_RECIPES:
        assert recipe(name, "cpu") == CPU_RECIPES[name].replace(preset="cpu")
        assert recipe(name, "gpu") == GPU_RECIPES[name].replace(preset="gpu")
        assert recipe(name, "gpu").run.preset == "gpu"
        assert defaults_for(name, "gpu") == recipe(name, "gpu")
    assert defaults_for("pgx:hex", "gpu").run.preset == ""
    with pytest.raises(ValueError, match="preset must be one of cpu, gpu"):
        recipe("tictactoe", "tpu")
    with pytest.raises(ValueError, match="no recipe 'chess'"):
        recipe("chess", "gpu")


@pytest.mark.parametrize("name", sorted(GPU_RECIPES))
def test_each_gpu_variant_plays_more_games_of_the_same_game_and_fits_a_16_gb_card(
        name, monkeypatch):
    cpu, gpu = recipe(name, "cpu"), recipe(name, "gpu")
    env = gpu.make_env()
    # The memory checks against a 16 GB card, whatever memory the machine running this
    # test has: the training program, and the evaluation and gating matches beside it.
    monkeypatch.setattr(envs.limits, "available_bytes", lambda: CARD)
    gpu.check(env)
    assert gpu.program.game == cpu.program.game
    assert gpu.program.game_options == cpu.program.game_options
    assert gpu.program.search == cpu.program.search
    assert gpu.program.selfplay.num_games >= 2 * cpu.program.selfplay.num_games
    assert gpu.program.learner.batch_size > cpu.program.learner.batch_size
    assert program_bytes(gpu.program, env) <= CARD
    assert gpu.run.max_minutes <= 10  # minutes, not an hour
    if not gpu.run.stop_when_perfect:  # runs of a fixed time: cadences in minutes
        assert gpu.run.eval_every == gpu.run.checkpoint_every == 0
        assert gpu.run.eval_every_minutes > 0 and gpu.run.checkpoint_every_minutes > 0


@pytest.mark.parametrize("preset, full_search_prob", [("cpu", 1.0), ("gpu", 0.25)])
def test_go9x9_and_its_go7x7_warm_up_search_as_their_figures_were_measured(
        preset, full_search_prob, tmp_path):
    """The CPU Go recipes search every move in full (docs/go.md: which levers help); the
    gpu variants keep playout cap randomisation, as measured on an H200. go9x9's warm-up
    takes go7x7's self-play in the same preset, so the two parts agree."""
    config = recipe("go9x9", preset)
    warm = warm_up_config(config, tmp_path / "run")
    assert warm.program.game_options["size"] == 7 and config.program.game_options["size"] == 9
    for program in (config.program, warm.program):
        assert program.selfplay.full_search_prob == full_search_prob
        assert program.selfplay.cheap_simulations < program.search.num_simulations


def test_preset_gpu_trains_that_variant_and_a_resumed_run_keeps_it(tmp_path, capsys,
                                                                   monkeypatch):
    # The machine is a CPU, whichever backend runs this test.
    monkeypatch.setattr(_cli, "backend_preset", lambda: "cpu")
    # --preset gpu: the gpu variant's settings, where no option overrides them.
    parsed = parse_with_preset(Experiment, "tictactoe", lambda c: Experiment(config=c),
                               ["--preset", "gpu", "--iterations", "1"],
                               start=lambda _: None).config
    assert parsed == recipe("tictactoe", "gpu").replace(iterations=1)
    assert parsed.program.replay_capacity == GPU_RECIPES["tictactoe"].program.replay_capacity

    run_dir = tmp_path / "run"
    assert main("tictactoe", str(run_dir), ["--preset", "gpu", *TINY_OPTIONS,
                                            "--iterations", "1"]) == 0
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["run"]["preset"] == "gpu"
    capsys.readouterr()

    # no --preset: the run's own
    assert main("tictactoe", str(run_dir), [*TINY_OPTIONS, "--iterations", "2"]) == 0
    err = capsys.readouterr().err
    assert "trained with the gpu preset: resuming with it" in err
    assert [r["iteration"] for r in read_metrics(run_dir)] == [1, 2]
    assert json.loads((run_dir / "config.json").read_text())["run"]["preset"] == "gpu"

    # --preset cpu: the cpu variant's settings, another program than the run's
    assert main("tictactoe", str(run_dir), ["--preset", "cpu", "--iterations", "2"]) == 2
    assert "replay_capacity: saved" in capsys.readouterr().err


def test_a_game_of_no_recipe_has_no_preset_to_pick(tmp_path, capsys):
    from _cli import game_and_defaults
    _, defaults, argv = game_and_defaults(["--game", "pgx:tic_tac_toe", "--preset", "gpu"])
    assert main(defaults, str(tmp_path / "run"), argv) == 2
    assert "error: --preset picks a variant of a recipe" in capsys.readouterr().err
    assert set(PRESETS) == {"cpu", "gpu"}


def test_evaluations_and_checkpoints_by_minutes(tmp_path):
    every_time = SMALL.replace(iterations=3, eval_every=0, eval_every_minutes=1e-7,
                               checkpoint_every=0, checkpoint_every_minutes=1e-7)
    train(every_time, tmp_path / "often", progress=None)
    assert [r["iteration"] for r in read_metrics(tmp_path / "often") if "perfect" in r] == [
        1, 2, 3]
    assert ckpt.checkpoint_steps(tmp_path / "often") == [3, 2, 1]

    seldom = every_time.replace(eval_every_minutes=1000.0, checkpoint_every_minutes=1000.0)
    train(seldom, tmp_path / "seldom", progress=None)
    assert [r["iteration"] for r in read_metrics(tmp_path / "seldom") if "perfect" in r] == [3]
    assert ckpt.checkpoint_steps(tmp_path / "seldom") == [3]
