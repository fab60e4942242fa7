"""The experiment scripts other than tic-tac-toe, run as users run them, at a smoke budget.

Each script must train its own recipe (`azjax.run.recipes`) with the options given on the
command line over it, evaluate with its game's evaluator, checkpoint, and print a summary.
Tic-tac-toe's script is covered by tests/test_training.py and tests/test_run_integrity.py;
go9x9's bad options by tests/test_games_training.py (go7x7's levers by
tests/test_auxiliary_targets.py); the sweep script by tests/test_sweep.py. go9x9 trains
here without its warm-up run (`--warm-up ''`): the warm-up is the go7x7 recipe, which the
go7x7 case trains, and a warm-up run starting a run is tests/test_warm_start.py's (that
go9x9's recipe warms up on go7x7: tests/test_presets.py).

Slow (each script compiles its own programs: about 40 s of CPU each); `.ci/run` runs them in
its second step (`pytest -m slow`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import SMOKE, smoke

from azjax import TrainConfig
from azjax.run.recipes import recipe

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

# script: (game options on its command line, the keys its evaluation must record)
SCRIPTS = {
    "connect_four": ({}, {"net_move_accuracy", "net_move_accuracy_hard", "net_value_accuracy",
                         "search_move_accuracy"}),
    "coin_split": ({"coins": 7}, {"net_winning_move_share", "search_winning_move_share"}),
    "gomoku": ({"size": 7, "k": 4}, {"net_vs_random", "search_vs_random"}),
    "go9x9": ({"size": 5}, {"net_vs_random", "search_vs_random", "vs gnugo:1"}),
    "go7x7": ({"size": 5}, {"net_vs_random", "vs gnugo:1", "ownership_loss", "score_loss"}),
}
# script: settings given on its command line besides the smoke ones (--warm-up '': no
# warm-up run; see the module's docstring)
SETTINGS = {"go9x9": {"warm_up": ""}}


def expected_config(name: str, options: dict) -> TrainConfig:
    """The script's recipe with the smoke options and its settings applied, built without
    the script."""
    config = smoke(recipe(name, "auto")).with_values(SETTINGS.get(name, {}))
    return config.replace(game_options={**config.program.game_options, **options})


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_experiment_script_trains_its_recipe(name, tmp_path):
    options, metric_keys = SCRIPTS[name]
    run_dir = tmp_path / "run"
    args = [str(a) for item in SMOKE.items() for a in item]
    for key, value in options.items():
        args += [f"--game-options.{key}", str(value)]
    for path, value in SETTINGS.get(name, {}).items():
        args += [f"--{path.replace('_', '-')}", str(value)]
    out = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / f"{name}.py"), "--run-dir", str(run_dir),
         *args],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert f"run directory: {run_dir}" in out.stdout

    # the recipe, the options given, and the device count it trained on (tests: one)
    assert TrainConfig.load(run_dir / "config.json") == expected_config(name, options).replace(
        devices=1)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]
    evaluated = records[-1]
    assert metric_keys <= evaluated.keys(), sorted(evaluated)
    for key in metric_keys - {"ownership_loss", "score_loss"}:
        assert 0.0 <= evaluated[key] <= 1.0
    if recipe(name, "auto").program.game == "go":  # decided by points: the margin is logged too
        most = options["size"] ** 2 + recipe(name, "auto").program.game_options["komi"]
        assert -most <= evaluated["margin vs gnugo:1"] <= most
    assert not {k for k in metric_keys if "vs" in k} & records[0].keys()  # at --eval-every
    assert (run_dir / "checkpoints" / "2" / "azjax_manifest.json").is_file()
