"""The run directory object, `azjax.run.directory.run_dir.RunDir`: the layout it names is
the one a trained run has, a bad path is refused when it is opened, a path becomes one at
the entries only, a run is checked once, and no other module spells a run directory's
file names (read from the code, as `tests/test_structure.py` reads it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from tiny import CONFIG

import azjax
from azjax.core import memory, program
from azjax.run import config as run_config
from azjax.run.directory import checkpoint, layout, run_dir
from azjax.run.directory.layout import CHECKPOINT_DIR, LAYOUT, LOCK_FILE, RunDirError
from azjax.run.directory.run_dir import RunDir

AZJAX = Path(azjax.__file__).resolve().parent
# The modules that spell the layout: directory/layout.py, and checkpoint_files.py for what lies
# inside the checkpoints folder.
SPELLERS = {"run/directory/layout.py", "run/directory/checkpoint_files.py"}
# Keyword arguments whose strings are text for the reader, not paths.
TEXT_ARGUMENTS = {"label", "title", "help", "description"}


def _named(run: RunDir) -> set[str]:
    """The names of the files and folders `run` names, as properties."""
    paths = [run.config_file, run.metrics.file, run.provenance_file, run.path / LOCK_FILE,
             run.checkpoints.folder, run.training_plot, run.metrics.tensorboard,
             run.warm_up.path, *run.league_files]
    return {path.relative_to(run.path).as_posix() for path in paths}


def test_the_layout_of_a_trained_run_is_what_run_dir_names(tiny_run):
    run = RunDir.open(tiny_run)
    written = {p.name for p in tiny_run.iterdir()}
    assert written <= set(LAYOUT), written - set(LAYOUT)
    assert _named(run) <= set(LAYOUT)
    for path in (run.config_file, run.metrics.file, run.provenance_file, run.path / LOCK_FILE,
                 run.training_plot):
        assert path.is_file(), path
    assert run.checkpoints.steps() == [2, 1]
    assert run.checkpoints.step_dir(2).parent == run.checkpoints.folder
    assert run.warm_up == RunDir(tiny_run / layout.WARM_UP_DIR)


@pytest.mark.parametrize("where", ["file", "under_file", "checkpoints_file", "empty"])
def test_a_bad_path_is_one_line_refused_when_opened(tmp_path, where):
    (tmp_path / "a_file").write_text("")
    path = {"file": tmp_path / "a_file", "under_file": tmp_path / "a_file" / "run",
            "checkpoints_file": tmp_path / "run", "empty": ""}[where]
    if where == "checkpoints_file":
        path.mkdir()
        (path / CHECKPOINT_DIR).write_text("")
    unchecked = RunDir(path)  # naming a path checks nothing
    with pytest.raises(RunDirError) as err:
        RunDir.open(path)
    assert "\n" not in str(err.value)
    with pytest.raises(RunDirError):
        RunDir.open(unchecked)
    with pytest.raises(RunDirError):  # before any game is built or program compiled
        azjax.train(CONFIG, path, progress=None)


def test_a_run_dir_is_opened_once_and_passes_as_a_path(tmp_path):
    run = RunDir.open(tmp_path / "run")
    assert RunDir.open(run) is run
    assert Path(run) == tmp_path / "run" and str(run) == str(tmp_path / "run")
    assert not run.exists() and run.checkpoints.steps() == [] and run.metrics.read() == []
    assert run.saved_config() is None
    with pytest.raises(RunDirError, match="does not exist"):
        run.load_config()


# The module-level functions that once mirrored `RunDir`'s operations on a path.
MIRRORS = ("load_config", "read_metrics", "save_config", "saved_config", "append_metrics",
           "checkpoint_steps", "restore_newest", "checkpoint_manager", "save", "restore",
           "restore_params", "metrics_text", "check_run_dir", "check_device_count",
           "read_provenance", "append_provenance", "lock_run_dir", "resume_records")


def test_each_operation_of_a_run_directory_has_one_door(tiny_run_copy):
    # No module-level function mirrors a `RunDir` operation (checkpoint.py may import
    # checkpoint_files' helpers for its own use; it defines none).
    for module in (run_dir, checkpoint):
        mirrors = [name for name in MIRRORS if callable(getattr(module, name, None))
                   and getattr(module, name).__module__ == module.__name__]
        assert mirrors == [], module.__name__
    assert not hasattr(run_dir, "load_config") and not hasattr(checkpoint, "load_config")
    # The door: the run directory and its parts.
    run = RunDir.open(tiny_run_copy)
    config = run.load_config()
    assert run.saved_config() == config == RunDir(str(tiny_run_copy)).load_config()
    run.check(config)
    with pytest.raises(RunDirError, match="different config"):
        run.check(config.replace(seed=config.seed + 1))
    run.check_device_count(1)
    with pytest.raises(RunDirError, match="--devices 1"):
        run.check_device_count(2)
    assert run.checkpoints.steps() == [2, 1]
    manifest = run.checkpoints.manifest(2)
    assert manifest["step"] == 2 and manifest["config"]["program"] == config.to_dict()["program"]
    assert run.checkpoints.verify(2) is None and run.checkpoints.damaged() == {}
    records = run.metrics.read()
    assert [r["iteration"] for r in records] == [1, 2]
    run.metrics.append([{"iteration": 3}])
    assert [r["iteration"] for r in run.metrics.read()] == [1, 2, 3]
    run.config_file.unlink()  # then the newest intact checkpoint's copy
    assert run.saved_config() == config
    run.save_config(config)
    assert RunDir(tiny_run_copy).saved_config() == config
    assert layout.CONFIG_FILE == "config.json" and run.config_file.is_file()


def _spelled(text: str) -> set[str]:
    """The layout names a string spells as a path: the whole string, or a part of a
    string without spaces between slashes (`RUN_DIR/warm-up`); prose naming a file for
    the reader (`with its config.json`) is words, not the layout."""
    if re.search(r"\s", text):
        return set()
    return {part for part in text.split("/") if part in LAYOUT}


# Where a path becomes a RunDir (`RunDir.open`): the training driver for Python callers
# (train, train_group), Agent.load, and the one command that opens a run to write into it.
ENTRIES = {"driver/driver.py", "run/agents/agent.py", "commands/league.py"}


def _opened_at() -> dict[str, int]:
    """The modules of azjax that call `RunDir.open`, with how many calls each."""
    found: dict[str, int] = {}
    for path in sorted(AZJAX.rglob("*.py")):
        calls = [node for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr == "open" and getattr(node.func.value, "id", "") == "RunDir"]
        if calls:
            found[path.relative_to(AZJAX).as_posix()] = len(calls)
    return found


def test_a_path_becomes_a_run_dir_at_the_entries_only():
    assert _opened_at() == {name: 1 for name in ENTRIES}


def test_a_run_is_checked_once(tmp_path, monkeypatch):
    """One training run: the checks that need the game run once (the preflight's), and
    the memory the program needs is estimated once (they once ran four and five times:
    the driver, init_train_state, make_iteration_fn, and the run's and the program's own
    estimates)."""
    calls = {"rules": 0, "program rules": 0, "parts": 0, "fits": 0}

    def counting(name, function):
        def counted(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return counted

    monkeypatch.setattr(run_config.TrainConfig, "check_rules",
                        counting("rules", run_config.TrainConfig.check_rules))
    monkeypatch.setattr(program.ProgramConfig, "check_rules",
                        counting("program rules", program.ProgramConfig.check_rules))
    monkeypatch.setattr(run_config, "program_parts",
                        counting("parts", run_config.program_parts))
    monkeypatch.setattr(memory, "check_parts", counting("fits", memory.check_parts))
    azjax.train(CONFIG, tmp_path / "run", progress=None)
    assert RunDir(tmp_path / "run").checkpoints.steps()  # it trained
    assert calls == {"rules": 1, "program rules": 1, "parts": 1, "fits": 1}


def test_no_other_module_spells_a_run_directorys_names():
    spelled = []
    for path in sorted(AZJAX.rglob("*.py")):
        if path.relative_to(AZJAX).as_posix() in SPELLERS:
            continue
        tree = ast.parse(path.read_text())
        words = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        words |= {id(node.value) for node in ast.walk(tree)  # a legend's "checkpoints"
                  if isinstance(node, ast.keyword) and node.arg in TEXT_ARGUMENTS}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in words and _spelled(node.value)):
                spelled.append(f"{path.relative_to(AZJAX)}:{node.lineno} {node.value!r}")
    assert spelled == []


def test_the_check_sees_a_spelling():
    assert _spelled("config.json") == {"config.json"}
    assert _spelled("RUN_DIR/warm-up") == {"warm-up"}
    assert _spelled("with its config.json") == set()
    assert _spelled("training.png") == {"training.png"}
