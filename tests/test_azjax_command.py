"""`azjax COMMAND` (the console script and `python -m azjax`): every command behind one
word, the installed `azjax` script passing `azjax train`'s exit statuses through (a bad
value, a finished run, a stop by SIGTERM), the training command line read once, and
experiment scripts that are wrappers."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from child_io import finish, read_line
from cli_in_process import command, experiment
from tiny import FLAGS

from azjax import __main__ as azjax_main
from azjax.commands import command_line
from azjax.commands.command_line import given_settings, overlay, read_command_line
from azjax.commands.train import main as train_main
from azjax.run.config import TrainConfig
from azjax.run.directory.run_dir import RunDir
from azjax.run.process.stop_signals import EXIT_STOPPED
from azjax.run.recipes import recipe

ROOT = Path(__file__).resolve().parents[1]
# The console script pip installed into this environment (pyproject's [project.scripts]).
AZJAX = Path(sys.executable).with_name("azjax")


def test_the_console_script_is_the_dispatcher():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"azjax": "azjax.__main__:entry_point"}


def test_the_installed_script_passes_a_bad_value_s_status_through(tmp_path):
    """`azjax train` with a value out of range, as a shell runs it: exit status 2, the
    one error line alone on stderr, nothing written."""
    assert AZJAX.is_file(), f"no console script at {AZJAX}: pip install -e ."
    done = subprocess.run([str(AZJAX), "train", "tictactoe", "--run-dir", str(tmp_path / "run"),
                           "--selfplay.num-games", "0"], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: selfplay.num_games must be >= 1, got 0\n"
    assert done.stdout == "" and list(tmp_path.iterdir()) == []


def tiny_training(run_dir: Path, iterations: int) -> list[str]:
    """The console script's command line that trains the tiny program (`tests/tiny.py`)."""
    return [str(AZJAX), "train", "tictactoe", *FLAGS, "--run-dir", str(run_dir),
            "--iterations", str(iterations)]


def test_the_installed_script_trains_a_run_and_exits_0(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run(tiny_training(run_dir, 1), capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["finished 1 iterations", f"run directory: {run_dir}"]
    assert RunDir(run_dir).checkpoints.steps() == [1]
    assert [record["iteration"] for record in RunDir(run_dir).metrics.read()] == [1]


def test_the_installed_script_passes_a_stop_by_sigterm_through(tmp_path):
    """SIGTERM once the run trains: the iteration under way is saved and the script ends
    with the stop's status (75), which a scheduler's requeue reads."""
    run_dir = tmp_path / "run"
    process = subprocess.Popen(tiny_training(run_dir, 1000), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    while not (line := read_line(process)).startswith("it "):  # a status line: it trains
        assert line, finish(process)[1]
    process.send_signal(signal.SIGTERM)
    _, err = finish(process)
    assert process.returncode == EXIT_STOPPED, err
    stopped_at = RunDir(run_dir).checkpoints.steps()[0]
    assert RunDir(run_dir).metrics.read()[-1]["iteration"] == stopped_at < 1000
    assert err.splitlines()[-1] == (
        f"stopped by SIGTERM after iteration {stopped_at}, with a checkpoint in {run_dir}; "
        "rerun the same command to resume")


def test_help_lists_every_command_and_an_unknown_one_is_one_error_line(capsys):
    assert azjax_main.main(["--help"]) == 0
    shown = capsys.readouterr().out
    for name, (_, summary) in azjax_main.COMMANDS.items():
        assert f"  {name} " in shown and summary in shown
    assert azjax_main.main([]) == 2  # no command: the usage, and a failure
    assert azjax_main.main(["trian", "tictactoe"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == ("error: unknown command 'trian'; commands: "
                                   + ", ".join(azjax_main.COMMANDS))


def test_train_help_shows_the_recipe_of_the_game_named(monkeypatch):
    monkeypatch.setattr(command_line, "backend_preset", lambda: "cpu")
    for game, games in (("tictactoe", 256), ("connect_four", None)):
        shown = command(train_main, [game, "--help"])
        assert shown.returncode == 0, shown.stderr
        text = " ".join(shown.stdout.split())
        default = text.split("--selfplay.num-games INT")[1].split("(default: ")[1].split(")")[0]
        assert int(default) == recipe(game, "cpu").program.selfplay.num_games
        assert games is None or int(default) == games
    sweep = command(azjax_main.main, ["sweep", "--help"])
    assert sweep.returncode == 0 and "--param" in sweep.stdout


def test_the_command_line_is_read_once_and_given_settings_lie_over_other_defaults():
    line = read_command_line(["go9x9", "--game-options", "komi=6", "--preset=gpu",
                              "--search.num-simulations", "5", "--no-stop-when-perfect"])
    assert (line.game, line.defaults, line.preset) == ("go9x9", "go9x9", "gpu")
    assert line.game_options == {"komi": 6}
    assert line.argv == ["--preset=gpu", "--search.num-simulations", "5",
                         "--no-stop-when-perfect"]
    assert given_settings(line.argv) == {"search.num_simulations", "stop_when_perfect"}
    # A game of no recipe is a --game setting over plain defaults.
    other = read_command_line(["--game", "pgx:othello", "--iterations", "3"])
    assert other.defaults == TrainConfig().replace(game="pgx:othello")
    assert other.argv == ["--game=pgx:othello", "--iterations", "3"]
    # What was given wins over the defaults a resumed run or the backend picks; the rest
    # is theirs. Settings checked together are laid over at once.
    parsed = recipe("tictactoe", "cpu").replace(iterations=7, learn_after=10**6,
                                                replay_capacity=2 * 10**6)
    base = recipe("tictactoe", "gpu")
    laid = overlay(base, parsed, {"iterations", "learn_after", "replay_capacity"})
    assert laid == base.replace(iterations=7, learn_after=10**6, replay_capacity=2 * 10**6)


def test_a_bad_setting_is_one_error_line_of_ours(tmp_path):
    done = command(train_main, ["tictactoe", "--run-dir", str(tmp_path / "run"),
                                "--selfplay.num-games", "0"])
    assert done.returncode == 2
    assert done.stderr == "error: selfplay.num_games must be >= 1, got 0\n"
    assert not (tmp_path / "run").exists()


def test_experiment_scripts_are_wrappers_without_path_edits():
    for path in sorted((ROOT / "experiments").glob("*.py")):
        tree = ast.parse(path.read_text())
        assert "sys.path" not in path.read_text(), path.name
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert imported <= {"azjax.commands.train", "azjax.commands.sweep",
                             "azjax.commands.errors"}, (path.name, imported)
    shown = experiment("go7x7", "--help")
    assert shown.returncode == 0 and "--selfplay.num-games" in shown.stdout


def test_python_m_runs_each_command_from_its_home_and_from_the_top(tmp_path):
    """`python -m azjax.commands.<module>` runs every command; `python -m azjax.export`
    (an entry point at the top) is the same program, exit statuses included."""
    def python_m(module: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                              text=True, timeout=300, cwd=tmp_path, check=False)

    home, top = python_m("azjax.commands.export", "--help"), python_m("azjax.export", "--help")
    assert home.returncode == top.returncode == 0 and home.stdout == top.stdout, top.stderr
    assert "python -m azjax.export" in top.stdout
    missing = python_m("azjax.export", str(tmp_path / "no-run"), str(tmp_path / "a.azjax"))
    assert missing.returncode == 2 and missing.stderr.startswith("error: "), missing.stderr
    assert python_m("azjax.commands.info", "--help").returncode == 0
