"""Recipes in two variants (cpu, gpu), picked by the backend, `--preset`, or the run (or
sweep) being resumed, whose config.json is the truth on resume; the run's first status
line names the preset and says what it trains for how long (go9x9's warm-up included,
bounded by --iterations and --max-minutes); cadences in minutes of wall time."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import jax
import pytest
from test_training import SMALL
from tiny import FLAGS

import envs.limits
from azjax import TrainConfig, train
from azjax.core.program import program_bytes
from azjax.driver.warm_up import warm_up, warm_up_config
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.run.recipes import CPU_RECIPES, GPU_RECIPES, PRESETS, defaults_for, recipe
from azjax.sweep import parse_params
from azjax.sweep.sweep import check_out_dir

ROOT = Path(__file__).resolve().parents[1]

from cli_in_process import command

from azjax.commands import command_line
from azjax.commands import sweep as sweep_command
from azjax.commands.command_line import parse_with_preset, read_command_line
from azjax.commands.train import Experiment, main, opening, saved_run

GB = 10**9
CARD = 16 * GB  # the accelerator the gpu variants are sized for
# The tiny program's options (tests/tiny.py) without its --preset: whichever variant a
# run starts from, they make its program the tiny one, compiled once per process.
assert FLAGS[:2] == ["--preset", "cpu"]
TINY_OPTIONS = FLAGS[2:]


@pytest.mark.parametrize("backend, preset", [("cpu", "cpu"), ("gpu", "gpu"), ("tpu", "gpu")])
def test_the_backend_picks_its_variant_and_records_it(monkeypatch, backend, preset):
    """With 'auto', a recipe is the variant of the backend JAX runs on (whichever backend
    runs this test: it is told which one to be)."""
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    for name in CPU_RECIPES:
        assert recipe(name, "auto") == recipe(name, preset)
        assert defaults_for(name, "auto") == recipe(name, preset)
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
    warm = warm_up_config(config, RunDir(tmp_path / "run"))
    assert warm.program.game_options["size"] == 7 and config.program.game_options["size"] == 9
    for program in (config.program, warm.program):
        assert program.selfplay.full_search_prob == full_search_prob
        assert program.selfplay.cheap_simulations < program.search.num_simulations


def test_preset_gpu_trains_that_variant_and_a_resumed_run_keeps_it(tmp_path, capsys,
                                                                   monkeypatch):
    # The machine is a CPU, whichever backend runs this test.
    monkeypatch.setattr(command_line, "backend_preset", lambda: "cpu")
    # --preset gpu: the gpu variant's settings, where no option overrides them.
    parsed = parse(["--preset", "gpu", "--iterations", "1"])
    assert parsed == recipe("tictactoe", "gpu").replace(iterations=1)
    assert parsed.program.replay_capacity == GPU_RECIPES["tictactoe"].program.replay_capacity

    run_dir = tmp_path / "run"
    assert main(["tictactoe", "--run-dir", str(run_dir), "--preset", "gpu", *TINY_OPTIONS,
                                            "--iterations", "1"]) == 0
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["run"]["preset"] == "gpu"
    # The first status line names the preset, why it was taken, and the budget.
    assert capsys.readouterr().out.splitlines()[0] == (
        "tictactoe, preset gpu (from --preset): at most 1 iteration")

    # No --preset, and none of the options it began with: the run's own preset and
    # settings, as its config.json records them.
    assert main(["tictactoe", "--run-dir", str(run_dir), "--iterations", "2"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(
        f"tictactoe, preset gpu (its own, from {run_dir / 'config.json'}; resuming with "
        "the settings it records, which differ from the tictactoe recipe's in "), first
    assert first.endswith("): at most 2 iterations")
    assert [r["iteration"] for r in RunDir(run_dir).metrics.read()] == [1, 2]
    assert json.loads((run_dir / "config.json").read_text())["run"]["preset"] == "gpu"

    # --preset cpu: another variant than the run's is one line naming the fix.
    assert main(["tictactoe", "--run-dir", str(run_dir), "--preset", "cpu",
                 "--iterations", "2"]) == 2
    assert capsys.readouterr().err == (
        f"error: {run_dir / 'config.json'} is of the gpu preset: resume it with --preset "
        "gpu or without --preset, or give another --run-dir for the cpu preset\n")


def parse(argv: list[str], name: str = "tictactoe", run_dir: Path | None = None
          ) -> TrainConfig:
    """The config a script of recipe `name` trains with `argv`, where a run in `run_dir`
    (if any) is resumed."""
    return parse_why(argv, name, run_dir)[0]


def parse_why(argv: list[str], name: str = "tictactoe", run_dir: Path | None = None
              ) -> tuple[TrainConfig, str]:
    """`parse`'s config, and why it has its preset."""
    options, why = parse_with_preset(
        Experiment, read_command_line([name, *argv]),
        lambda c: Experiment(config=c, run_dir=str(run_dir or "")),
        start=lambda _: None, saved=lambda e: saved_run(e.run_dir))
    return options.config, why


def test_help_shows_the_defaults_of_the_preset_the_backend_picks(monkeypatch):
    def num_games(*argv: str) -> str:
        shown = command(main, ["tictactoe", "--run-dir", "runs/x", "--help", *argv])
        assert shown.returncode == 0, shown.stderr
        text = " ".join(shown.stdout.split())
        return text.split("--selfplay.num-games INT")[1].split("(default: ")[1].split(")")[0]

    monkeypatch.setattr(command_line, "backend_preset", lambda: "gpu")
    assert num_games() == "512"
    assert num_games("--preset", "cpu") == "256"
    monkeypatch.setattr(command_line, "backend_preset", lambda: "cpu")
    assert num_games() == "256"


def test_the_first_status_line_says_which_preset_and_why(monkeypatch):
    for backend, other in (("cpu", "gpu"), ("gpu", "cpu")):
        monkeypatch.setattr(command_line, "backend_preset", lambda b=backend: b)
        config, why = parse_why([])
        assert config == recipe("tictactoe", backend)
        assert why == f"picked by the backend JAX runs on; --preset {other} for the other"
        assert opening("tictactoe", config, why, "runs/x") == (
            f"tictactoe, preset {backend} ({why}): at most 300 iterations, sooner at "
            "perfect play")
    config, why = parse_why(["--preset", "cpu"])
    assert (config.run.preset, why) == ("cpu", "from --preset")


def test_a_run_from_before_presets_resumes_with_its_own_settings(tmp_path, monkeypatch):
    """A config.json with no preset (written before presets existed) resumes as it
    is, on any backend, recorded as the preset its settings are nearest."""
    monkeypatch.setattr(command_line, "backend_preset", lambda: "gpu")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    old = recipe("tictactoe", "cpu").replace(preset="")
    old.save(run_dir / "config.json")
    config, why = parse_why(["--iterations", "400"], run_dir=run_dir)
    assert config == old.replace(preset="cpu", iterations=400)
    assert why == (f"{run_dir / 'config.json'} records none, a run from before presets: its "
                   "settings are nearest the cpu preset's; resuming with the settings it "
                   "records")
    with pytest.raises(RunDirError, match=r"is of the cpu preset: resume it with --preset "
                       r"cpu or without --preset, or give another --run-dir"):
        parse(["--preset", "gpu"], run_dir=run_dir)


def test_a_recipe_changed_since_a_run_began_does_not_block_its_resume(tiny_run_copy, capsys):
    """The recipe has changed since (here: the run is the tiny program, not the recipe
    at all): the rerun resumes with the run's own settings and says which differ."""
    before = RunDir(tiny_run_copy).load_config()
    config, why = parse_why([], run_dir=tiny_run_copy)
    assert config == before
    assert "which differ from the tictactoe recipe's in gradient_steps, learner.batch_size" in why
    assert main(["tictactoe", "--run-dir", str(tiny_run_copy), "--iterations", "3"]) == 0
    assert [r["iteration"] for r in RunDir(tiny_run_copy).metrics.read()] == [1, 2, 3]
    assert RunDir(tiny_run_copy).load_config() == before.replace(iterations=3)
    assert "resuming with the settings it records" in capsys.readouterr().out.splitlines()[0]


def test_a_sweep_resumes_with_the_preset_saved_with_it(tmp_path, monkeypatch):
    monkeypatch.setattr(command_line, "backend_preset", lambda: "cpu")
    out = tmp_path / "sweep"
    check_out_dir(out, recipe("tictactoe", "gpu"), parse_params(["learning_rate=0.001"]))
    sweep = sweep_command

    def parsed(*argv: str) -> tuple[TrainConfig, str]:
        args, why = parse_with_preset(
            sweep.Sweep, read_command_line(["tictactoe", *argv]),
            lambda c: sweep.Sweep(config=c, out=str(out)),
            start=lambda _: None, saved=lambda a: sweep.saved_sweep(a.out))
        return args.config, why

    config, why = parsed("--param", "learning_rate=0.001")
    assert config == recipe("tictactoe", "gpu")
    assert why == f"its own, from {out / 'sweep.json'}; resuming with the settings it records"
    with pytest.raises(RunDirError, match=r"sweep.json is of the gpu preset: resume it with "
                       r"--preset gpu or without --preset, or give another --out for the cpu"):
        parsed("--preset", "cpu")


# ---------------------------------------------------------------- go9x9 and its warm-up


def test_go9x9_says_up_front_what_it_trains_for_how_long_and_how_to_skip_the_warm_up(
        monkeypatch, tmp_path):
    monkeypatch.setattr(command_line, "backend_preset", lambda: "cpu")
    run_dir = tmp_path / "run"
    config, why = parse_why(["--iterations", "2"], "go9x9", run_dir)
    assert opening("go9x9", config, why, str(run_dir)) == (
        "go9x9, preset cpu (picked by the backend JAX runs on; --preset gpu for the other): "
        "first the go7x7 recipe as a warm-up for 14 minutes (at most 2 iterations) in "
        f"{run_dir / 'warm-up'} (--warm-up '' skips it), then go9x9 from its weights for 6 "
        "minutes (at most 2 iterations): 20 minutes in all")
    shown = command(main, ["go9x9", "--run-dir", "runs/x", "--help"]).stdout
    assert ("--max-minutes M is the time of the whole command, shared 14:6 (--max-minutes "
            "10: 7 + 3) unless --warm-up-minutes is given too (then each option is its own "
            "part's); --iterations N bounds each part.") in " ".join(shown.split())


@pytest.mark.parametrize("preset, argv, minutes", [
    ("cpu", [], (14, 6)),
    ("cpu", ["--max-minutes", "10"], (7, 3)),  # the whole command's, shared 14:6
    ("cpu", ["--max-minutes=2"], (1.4, 0.6)),
    ("cpu", ["--max-minutes", "10", "--warm-up-minutes", "2"], (2, 10)),  # each its own
    ("cpu", ["--max-minutes", "0"], (14, 0)),  # no limit: the warm-up keeps its minutes
    ("gpu", ["--max-minutes", "4"], (2, 2)),  # shared 3:3
])
def test_go9x9_max_minutes_bounds_its_warm_up_too(preset, argv, minutes):
    config = parse(["--preset", preset, *argv], "go9x9")
    assert (config.run.warm_up_minutes, config.run.max_minutes) == minutes


def test_go9x9_iterations_bound_its_warm_up_too(tmp_path):
    config = recipe("go9x9", "cpu")
    run_dir = RunDir(tmp_path / "run")
    assert warm_up_config(config, run_dir).run.iterations == config.run.iterations
    warm = warm_up_config(config.replace(iterations=2), run_dir)
    assert (warm.run.iterations, warm.run.max_minutes) == (2, 14)


def test_a_warm_up_in_progress_resumes_with_its_own_config(tmp_path, monkeypatch):
    """go9x9 stopped mid-warm-up, then the go7x7 recipe changed: the warm-up resumes with
    the config.json it began with (and its preset), saying how it differs."""
    run_dir = tmp_path / "run"
    config = recipe("go9x9", "gpu")
    began = warm_up_config(config, RunDir(run_dir))
    for path, value in (("selfplay.full_search_prob", 0.5), ("selfplay.cheap_simulations", 4)):
        began = began.with_value(path, value)
    (run_dir / "warm-up").mkdir(parents=True)
    began.save(run_dir / "warm-up" / "config.json")

    warm = warm_up_config(config, RunDir(run_dir))
    assert warm == began
    RunDir(run_dir).warm_up.check(warm)  # not refused
    said = []
    warm_up(config, warm, RunDir(run_dir), lambda *_: None, said.append)
    assert said == [(f"warm-up: resuming {run_dir / 'warm-up'} with its config.json (it "
                     "differs from today's go7x7 recipe in selfplay.cheap_simulations, "
                     "selfplay.full_search_prob) for 3 minutes (at most 10,000,000 "
                     "iterations), then this run from its weights")]
    # The command resumes with the warm-up's preset, whatever the backend.
    monkeypatch.setattr(command_line, "backend_preset", lambda: "cpu")
    resumed, why = parse_why([], "go9x9", run_dir)
    assert resumed == config
    assert why == f"the one of the warm-up in progress, {run_dir / 'warm-up' / 'config.json'}"

    other = config.replace(network=dataclasses.replace(config.program.network, channels=8))
    with pytest.raises(ValueError, match=r"holds a warm-up of another network \(it differs "
                       r"in network.channels\): rerun with the network options it began "
                       r"with, or delete that directory"):
        warm_up_config(other, RunDir(run_dir))


def test_a_recipe_needs_a_preset_and_no_call_here_leaves_it_out():
    """What a recipe with no preset would give depends on the machine, so the preset is
    required (since 0.2.0): the tests, benchmarks, docs and notebooks name it."""
    with pytest.raises(TypeError, match=r"^recipe\('go7x7'\) needs a preset: "
                       r"recipe\('go7x7', 'cpu'\), 'gpu', or 'auto' for the variant of the "
                       r"backend JAX runs on$"):
        recipe("go7x7")  # the call left out
    with pytest.raises(TypeError, match=r"^defaults_for\('go7x7'\) needs a preset"):
        defaults_for("go7x7")  # the call left out
    assert defaults_for("go7x7", "auto") == recipe("go7x7", "auto")
    assert defaults_for("pgx:hex").run.preset == ""  # a game of no recipe has no preset
    bare = re.compile(r"\brecipe\(\s*(\\?[\"'][\w:]+\\?[\"']|[\w.\[\]]+)\s*\)")
    paths = [ROOT / "README.md", *(path for folder in ("azjax", "benchmarks", "docs",
                                                       "examples", "experiments",
                                                       "notebooks", "tests")
                                   for path in sorted((ROOT / folder).rglob("*"))
                                   if path.suffix in (".py", ".md", ".ipynb"))]
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in paths
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if bare.search(line) and "the call left out" not in line]
    assert found == []


def test_a_game_of_no_recipe_has_no_preset_to_pick(tmp_path, capsys):
    assert main(["--game", "pgx:tic_tac_toe", "--preset", "gpu",
                 "--run-dir", str(tmp_path / "run")]) == 2
    assert "error: --preset picks a variant of a recipe" in capsys.readouterr().err
    assert set(PRESETS) == {"cpu", "gpu"}


def test_evaluations_and_checkpoints_by_minutes(tmp_path):
    every_time = SMALL.replace(iterations=3, eval_every=0, eval_every_minutes=1e-7,
                               checkpoint_every=0, checkpoint_every_minutes=1e-7)
    train(every_time, tmp_path / "often", progress=None)
    assert [r["iteration"] for r in RunDir(tmp_path / "often").metrics.read()
            if "perfect" in r] == [1, 2, 3]
    assert RunDir(tmp_path / "often").checkpoints.steps() == [3, 2, 1]

    seldom = every_time.replace(eval_every_minutes=1000.0, checkpoint_every_minutes=1000.0)
    train(seldom, tmp_path / "seldom", progress=None)
    assert [r["iteration"] for r in RunDir(tmp_path / "seldom").metrics.read()
            if "perfect" in r] == [3]
    assert RunDir(tmp_path / "seldom").checkpoints.steps() == [3]
