"""Game options: one spelling, `--game-options KEY=VALUE ...`, on every command (the older
`--game-options KEY VALUE`, `--game-options.KEY VALUE` and the arena's `--game-option`
still work); a resumed run fills in the game's defaults before it compares; a sweep
sweeps `game_options.NAME`.

The commands run in this process (`cli_in_process`: each experiment script's own
`__main__` block, each module's `run_script(main)`), their output captured: what is
checked here is what they read from their command lines. Each command is started as a
real process elsewhere (tests/test_cli_errors.py, test_cli_options.py, test_play.py,
test_train_checks_game.py)."""

from __future__ import annotations

import json
import subprocess

import pytest
from cli_in_process import command
from cli_in_process import experiment as script  # python experiments/NAME.py ARGV
from docs_blocks import SMOKE

from azjax.commands import arena, play
from azjax.core.program import ProgramConfig
from azjax.run.config import TrainConfig, game_defaults
from azjax.run.grammar.game_options import split_game_options
from azjax.sweep.grid import make_grid, parse_param

GAME = "envs.coin_split:CoinSplit"  # an import path: no recipe, so no options by default
TINY = [str(a) for item in SMOKE.items() for a in item] + ["--iterations", "1",
                                                           "--eval-every", "1"]


def one_line_error(done: subprocess.CompletedProcess, message: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr, done.stderr


@pytest.mark.parametrize("argv", [
    ["--game-options", "size=6", "komi=9.5"],
    ["--game-options", "size", "6", "komi", "9.5"],
    ["--game-options.size", "6", "--game-options.komi=9.5"],
    ["--game-options=size=6", "--game-options", "komi=9.5"],
    ["--game-options", "size=5", "--game-options", "size=6", "komi=9.5"],  # later wins
])
def test_every_spelling_gives_the_same_options(argv):
    rest, options = split_game_options(["--seed", "1", *argv, "--iterations", "2"])
    assert options == {"size": 6, "komi": 9.5}
    assert rest == ["--seed", "1", "--iterations", "2"]


@pytest.mark.parametrize("argv, message", [
    (["--game-options", "size=big"], "--game-options size=big: the value must be a number"),
    (["--game-options"], "--game-options needs KEY=VALUE"),
    (["--game-options", "size"], "'size' with no value"),
    (["--game-options", "=3"], "takes KEY=VALUE, got '=3'"),
])
def test_bad_game_options_are_one_line(argv, message):
    with pytest.raises(ValueError, match=message):
        split_game_options(argv)


def test_words_only_where_asked():
    assert split_game_options(["--game-options", "ko=simple"], words=True)[1] == {
        "ko": "simple"}
    with pytest.raises(ValueError, match="must be a number"):
        split_game_options(["--game-options", "ko=simple"])


def test_a_default_left_out_is_the_same_program_and_a_change_is_one_line():
    assert game_defaults("coin_split") == {"coins": 7}
    saved = TrainConfig(program=ProgramConfig(game="coin_split", game_options={"coins": 7}))
    assert saved.program_differences(TrainConfig(program=ProgramConfig(game="coin_split"))
                                     ) == []
    changed = TrainConfig(program=ProgramConfig(game="coin_split", game_options={"coins": 9}))
    assert saved.program_differences(changed) == ["game_options.coins: saved 7, given 9"]
    assert TrainConfig(program=ProgramConfig(game="go", game_options={"size": 9, "komi": 7.5})
                       ).program_differences(TrainConfig(program=ProgramConfig(
                           game="go", game_options={"komi": 7.5}))) == []


def test_the_sweep_grid_sets_each_game_option_value():
    param = parse_param("game_options.coins=5,6")
    base = TrainConfig(program=ProgramConfig(game="coin_split", game_options={"coins": 7}))
    grid = make_grid(base, [param], [0])
    assert [e.config.program.game_options for e in grid] == [{"coins": 5}, {"coins": 6}]
    assert [e.run_name for e in grid] == ["coins=5/seed=0", "coins=6/seed=0"]
    assert grid[0].config.get("game_options.coins") == 5
    with pytest.raises(ValueError, match="bad --param game_options.coins=x"):
        parse_param("game_options.coins=5,x")


# ---------------------------------------------------------------- through the commands


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A one-iteration coin-splitting run, trained with its default stated: coins=7."""
    path = tmp_path_factory.mktemp("game_options") / "run"
    done = script("train", "--game", GAME, "--game-options", "coins=7", "--run-dir", path,
                  *TINY)
    assert done.returncode == 0, done.stderr
    assert json.loads((path / "config.json").read_text())["program"]["game_options"] == {
        "coins": 7}
    return path


# Slow (with the spellings below, which resume the same run): a coin-splitting run.
@pytest.mark.slow
def test_resume_with_the_default_left_out_is_accepted(run_dir):
    done = script("train", "--game", GAME, "--run-dir", run_dir, *TINY)
    assert done.returncode == 0, done.stderr
    assert f"run directory: {run_dir}" in done.stdout


# Slow: the run of the test above.
@pytest.mark.slow
@pytest.mark.parametrize("spelling", [
    ["--game-options", "coins=6"],
    ["--game-options", "coins", "6"],
    ["--game-options.coins", "6"],
    ["--game-options=coins=6"],
])
def test_train_takes_every_spelling_and_a_change_is_refused(run_dir, spelling):
    done = script("train", "--game", GAME, *spelling, "--run-dir", run_dir, *TINY)
    one_line_error(done, "game_options.coins: saved 7, given 6")


@pytest.mark.parametrize("name, spelling, message", [
    ("tictactoe", ["--game-options", "size=4"], "{'size': 4}"),
    ("connect_four", ["--game-options", "rows=3"], "{'rows': 3}"),
    ("gomoku", ["--game-options", "size=3", "k=9"], "got 9"),
    ("go9x9", ["--game-options", "size=1"], "got 1"),
    ("go9x9", ["--game-options.size", "1"], "got 1"),
    ("coin_split", ["--game-options", "coins=2"], "coins=2"),
    ("coin_split", ["--game-options", "coins", "2"], "coins=2"),
    ("coin_split", ["--game-options.coins=2"], "coins=2"),
    ("sweep", ["--game", "coin_split", "--game-options", "coins=2"], "coins=2"),
    ("train", ["--game", "gomoku", "--game-options", "k=99"], "got 99"),
])
def test_every_script_reads_the_options_into_its_game(name, spelling, message, tmp_path,
                                                      monkeypatch):
    # a value the game refuses: its own message shows that the option reached it
    monkeypatch.chdir(tmp_path)
    done = script(name, *spelling, *(["--out", tmp_path / "s"] if name == "sweep" else
                                     ["--run-dir", tmp_path / "r"]))
    one_line_error(done, message)
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize("spelling", [
    ["--game-options", "coins=5"], ["--game-options", "coins", "5"],
    ["--game-options.coins", "5"], ["--game-option", "coins=5"],
])
def test_the_arena_takes_every_spelling(spelling, tmp_path):
    # five coins: the first player wins, so the solver wins every game it starts
    out = tmp_path / "result.json"
    done = command(arena.main, ["solver", "random", "--game", "coin_split", *spelling,
                                "--games", "4", "--json", str(out)])
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["as_player0"]["wins"] == 2
    bad = command(arena.main, ["solver", "random", "--game", "coin_split", *spelling[:-1],
                               spelling[-1].replace("5", "2")])
    one_line_error(bad, "coins=2")


def test_play_checks_the_options_against_the_agent(tmp_path):
    from test_gtp import untrained
    path = untrained("coin_split", coins=9).export(tmp_path / "coins9.azjax")
    done = command(play.main, ["coin_split", "--game-options", "coins=5", "--agent",
                               str(path)])
    one_line_error(done, "of another board")
    done = command(play.main, ["coin_split", "--game-options", "coins=9", "--agent",
                               str(path), "--side", "first"], stdin="quit\n")
    assert done.returncode == 0, done.stderr


@pytest.mark.slow  # two programs to compile; the grid itself is checked above
def test_a_sweep_over_a_game_option(tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    monkeypatch.chdir(tmp_path)
    done = script("sweep", "--game", "coin_split", "--param", "game_options.coins=5,6",
                  "--seeds", "1", "--out", out, "--iterations", "1", "--network.channels",
                  "8", "--network.num-blocks", "1", "--selfplay.num-games", "8",
                  "--gradient-steps", "1", "--search.num-simulations", "4",
                  "--learner.batch-size", "16", "--replay-capacity", "256")
    assert done.returncode == 0, done.stderr
    for coins in (5, 6):
        config = json.loads((out / "runs" / f"coins={coins}" / "seed=0" / "config.json"
                             ).read_text())
        assert config["program"]["game_options"]["coins"] == coins
    table = (out / "results.csv").read_text().splitlines()
    assert table[0].split(",")[1] == "game_options.coins"
    assert [row.split(",")[1] for row in table[1:]] == ["5", "6"]


def test_the_sweep_bounds_its_time_by_max_minutes():
    from azjax.sweep.grid import group_experiments
    from azjax.sweep.sweep import time_bound
    base = TrainConfig(program=ProgramConfig(game="coin_split")).replace(max_minutes=1.5)
    grid = make_grid(base, [parse_param("game_options.coins=5,6"),
                            parse_param("c_puct=1,2")], [0, 1])
    groups = group_experiments(grid)
    assert len(groups) == 2  # one program per board; c_puct and seeds are vmapped
    assert time_bound(groups) == "; at most 3m00s of training"
    assert time_bound(group_experiments(make_grid(base.replace(max_minutes=0),
                                                  [parse_param("c_puct=1,2")], [0]))) == ""
