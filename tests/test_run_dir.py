"""The run directory object, `azjax.run.run_dir.RunDir`: the layout it names is the one a
trained run has, a bad path is refused when it is opened, and no other module spells a
run directory's file names (read from the code, as `tests/test_structure.py` reads it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from tiny import CONFIG

import azjax
from azjax.driver import warm_up
from azjax.run import checkpoint as ckpt
from azjax.run import run_dir as layout
from azjax.run.run_dir import LAYOUT, RunDir, RunDirError

AZJAX = Path(azjax.__file__).resolve().parent
# The modules that spell the layout: run_dir.py, and checkpoint_files.py for what lies
# inside the checkpoints folder.
SPELLERS = {"run/run_dir.py", "run/checkpoint_files.py"}
# Keyword arguments whose strings are text for the reader, not paths.
TEXT_ARGUMENTS = {"label", "title", "help", "description"}


def _named(run: RunDir) -> set[str]:
    """The names of the files and folders `run` names, as properties."""
    paths = [run.config_file, run.metrics_file, run.provenance_file, run.lock_file,
             run.checkpoints, run.training_plot, run.tensorboard, run.warm_up.path,
             *run.league_files]
    return {path.relative_to(run.path).as_posix() for path in paths}


def test_the_layout_of_a_trained_run_is_what_run_dir_names(tiny_run):
    run = RunDir.open(tiny_run)
    written = {p.name for p in tiny_run.iterdir()}
    assert written <= set(LAYOUT), written - set(LAYOUT)
    assert _named(run) <= set(LAYOUT)
    for path in (run.config_file, run.metrics_file, run.provenance_file, run.lock_file,
                 run.training_plot):
        assert path.is_file(), path
    assert run.checkpoint_steps() == [2, 1]
    assert run.step_dir(2).parent == run.checkpoints
    assert run.warm_up == RunDir(tiny_run / layout.WARM_UP_DIR)


@pytest.mark.parametrize("where", ["file", "under_file", "checkpoints_file", "empty"])
def test_a_bad_path_is_one_line_refused_when_opened(tmp_path, where):
    (tmp_path / "a_file").write_text("")
    path = {"file": tmp_path / "a_file", "under_file": tmp_path / "a_file" / "run",
            "checkpoints_file": tmp_path / "run", "empty": ""}[where]
    if where == "checkpoints_file":
        path.mkdir()
        (path / ckpt.CHECKPOINT_DIR).write_text("")
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
    assert not run.exists() and run.checkpoint_steps() == [] and run.read_metrics() == []
    assert run.saved_config() is None
    with pytest.raises(RunDirError, match="does not exist"):
        run.load_config()


def test_the_operations_of_a_run_and_of_its_path_agree(tiny_run_copy):
    run = RunDir.open(tiny_run_copy)
    config = run.load_config()
    assert run.saved_config() == config == ckpt.load_config(str(tiny_run_copy))
    run.check(config)
    with pytest.raises(RunDirError, match="different config"):
        run.check(config.replace(seed=config.seed + 1))
    run.check_device_count(1)
    with pytest.raises(RunDirError, match="--devices 1"):
        run.check_device_count(2)
    records = run.read_metrics()
    assert [r["iteration"] for r in records] == [1, 2]
    assert ckpt.read_metrics(tiny_run_copy) == records
    run.append_metrics([{"iteration": 3}])
    assert [r["iteration"] for r in run.read_metrics()] == [1, 2, 3]
    run.config_file.unlink()  # then the newest intact checkpoint's copy
    assert run.saved_config() == config
    run.save_config(config)
    assert ckpt.saved_config(tiny_run_copy) == config


def test_old_names_keep_working():
    assert ckpt.CONFIG_FILE == layout.CONFIG_FILE == "config.json"
    assert ckpt.METRICS_FILE == "metrics.jsonl" and ckpt.CHECKPOINT_DIR == "checkpoints"
    with pytest.warns(DeprecationWarning, match="RunDir.warm_up"):
        assert warm_up.WARM_UP_DIR == layout.WARM_UP_DIR


def _spelled(text: str) -> set[str]:
    """The layout names a string spells as a path: the whole string, or a part of a
    string without spaces between slashes (`RUN_DIR/warm-up`); prose naming a file for
    the reader (`with its config.json`) is words, not the layout."""
    if re.search(r"\s", text):
        return set()
    return {part for part in text.split("/") if part in LAYOUT}


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
