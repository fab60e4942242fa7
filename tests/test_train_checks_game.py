"""Training checks a game of the user's before it writes anything (issue 36): a game that
cannot be traced, one whose observation has another shape than it declares, one whose
module raises at import and one whose step changes a leaf's shape each stop
`experiments/train.py` with one `error:` line naming the game's file (and line where
there is one), and no run directory. Also: a run of a name given with `envs.register`
loads in a new process, and the status line says no loss before a game has ended.

The script runs in this process (`cli_in_process`: its own `__main__` block, its output
captured), and once as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_in_process import experiment
from tiny import CONFIG

import envs
from azjax import train
from azjax.driver.status import format_progress

ROOT = Path(__file__).resolve().parents[1]

BROKEN = {
    "untraceable": (
        "from envs.tictactoe import TicTacToe\n"
        "class Bad(TicTacToe):\n"
        "    def _step(self, state, action):\n"
        "        if state.step_count > 3:\n"
        "            pass\n"
        "        return super()._step(state, action)\n",
        "traceable", 4),
    "wrong_shape": (
        "from envs.tictactoe import TicTacToe\n"
        "class Bad(TicTacToe):\n"
        "    observation_shape = (3, 3, 5)\n",
        "types", None),
    "raises_at_import": (
        "from envs.tictactoe import TicTacToe\n"
        "TABLE = {1: 2}\n"
        "X = TABLE[8]\n"
        "class Bad(TicTacToe):\n"
        "    pass\n",
        "KeyError", 3),
    "step_shape": (
        "import jax.numpy as jnp\n"
        "from envs.tictactoe import TicTacToe\n"
        "class Bad(TicTacToe):\n"
        "    def _step(self, state, action):\n"
        "        out = super()._step(state, action)\n"
        "        return out.replace(board=jnp.concatenate([out.board, out.board[:1]]))\n",
        "types", 4),
}


@pytest.fixture
def forget_modules():
    """The names of game modules a test imports from its own directory, taken out of
    `sys.modules` afterwards (the next test's file of the same name is another)."""
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_game_stops_training_in_one_line_before_any_write(tmp_path, name,
                                                                   monkeypatch,
                                                                   forget_modules):
    source, what, line = BROKEN[name]
    (tmp_path / f"{name}.py").write_text(source)
    run_dir = tmp_path / "run"
    monkeypatch.chdir(tmp_path)  # where the script finds the game's module
    forget_modules.append(name)
    done = experiment("train", "--game", f"{name}:Bad", "--run-dir", run_dir,
                      "--iterations", "1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    assert what in lines[0] and f"{name}.py" in lines[0]
    if line is not None:
        assert f"{name}.py:{line}" in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert not run_dir.exists()


def test_a_broken_game_stops_the_real_script_in_one_line(tmp_path):
    """The same through the real process: exit status 2 and nothing else on stderr (no
    warning either, which this process's own captures would not show)."""
    source, what, line = BROKEN["untraceable"]
    (tmp_path / "untraceable.py").write_text(source)
    done = subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "train.py"), "--game", "untraceable:Bad",
         "--run-dir", str(tmp_path / "run"), "--iterations", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    assert what in lines[0] and f"untraceable.py:{line}" in lines[0], lines[0]
    assert not (tmp_path / "run").exists()


def test_check_names_the_line_of_a_step_that_breaks_shapes(tmp_path, monkeypatch,
                                                           forget_modules):
    source, _, line = BROKEN["step_shape"]
    (tmp_path / "step_shape.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_modules.append("step_shape")
    with pytest.raises(envs.EnvCheckError) as caught:
        envs.check_env(envs.make("step_shape:Bad"), num_games=2)
    assert caught.value.property == "types"
    assert f"step_shape.py:{line}" in str(caught.value) and ".board" in str(caught.value)
    assert "envs/core.py" not in str(caught.value)


def test_an_error_at_import_names_file_and_line(tmp_path, monkeypatch, forget_modules):
    source, _, line = BROKEN["raises_at_import"]
    (tmp_path / "raises_at_import.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_modules.append("raises_at_import")
    with pytest.raises(ValueError) as caught:
        envs.make("raises_at_import:Bad")
    assert f"raises_at_import.py:{line}: X = TABLE[8]" in str(caught.value)
    assert "KeyError" in str(caught.value)


# Slow: compiles a training program of its own (Hex) and loads it in a new process.
@pytest.mark.slow
def test_a_registered_name_is_recorded_by_its_import_path(tmp_path):
    """A name from envs.register means nothing to the next process: the run records the
    class's import path and options, and loads in a new process; resuming under the name
    is the same run."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from hex_game import Hex
        envs.register("hex3_test", lambda **o: Hex(size=3, **o), overwrite=True)
        config = CONFIG.replace(game="hex3_test", iterations=1)  # the tiny run, on Hex
        train(config, tmp_path / "run", progress=None)
        saved = json.loads((tmp_path / "run" / "config.json").read_text())["program"]
        assert (saved["game"], saved["game_options"]) == ("hex_game:Hex", {"size": 3})
        train(config.replace(iterations=2), tmp_path / "run", progress=None)  # resumes
    finally:
        sys.path.remove(str(ROOT / "examples"))
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys; from azjax.run import Agent; "
         "a = Agent.load(sys.argv[1]); print(a.env.name, a.env.size)", str(tmp_path / "run")],
        cwd=ROOT / "examples", capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0 and loaded.stdout.split() == ["hex", "3"], loaded.stderr


def test_an_unknown_name_says_where_registered_names_live():
    with pytest.raises(ValueError, match="envs.register lives in the process"):
        envs.make("no_such_game_here")


def test_no_loss_is_shown_before_a_game_has_ended():
    record = {"iteration": 1, "games": 0, "positions_per_s": 10.0, "loss": 0.0,
              "value_loss": 0.0, "policy_loss": 0.0, "policy_entropy": 0.0,
              "replay_sampleable": 0, "wall_time": 1.0}
    line = format_progress(record)
    assert "no game has ended yet" in line and "(v 0.000" not in line
    line = format_progress({**record, "replay_sampleable": 5, "loss": 1.5, "value_loss": 0.5})
    assert "loss 1.500 (v 0.500" in line


def test_a_run_waiting_for_learn_after_says_so_and_says_when_it_stalls():
    """While the replay holds fewer than learn_after positions with a known outcome the
    network does not change: no loss is shown, but how far the wait has come; a run
    that has played several iterations of positions past learn_after and still waits
    says that its network is unchanged, and what to change."""
    record = {"iteration": 3, "games": 40, "positions_per_s": 10.0, "loss": 1.9,
              "value_loss": 0.9, "policy_loss": 1.0, "policy_entropy": 1.5,
              "replay_sampleable": 700, "positions": 3000, "wall_time": 1.0}
    waiting = format_progress(record, learn_after=1000, positions_per_iteration=1000)
    assert "learns after 1,000 positions with a known outcome: 700 so far" in waiting
    assert "1.900" not in waiting
    stalled = format_progress({**record, "positions": 4000}, learn_after=1000,
                              positions_per_iteration=1000)
    assert ("network unchanged: 4,000 positions played but the replay holds only 700 "
            "with a known outcome, fewer than learn_after 1,000") in stalled
    assert "--learn-after" in stalled and "--replay-capacity" in stalled
    learning = format_progress({**record, "replay_sampleable": 1000}, learn_after=1000,
                               positions_per_iteration=1000)
    assert "loss 1.900 (v 0.900" in learning
