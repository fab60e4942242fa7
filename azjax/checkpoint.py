"""Run directories: config.json, orbax checkpoints of the whole TrainState, metrics.jsonl.

Orbax writes each checkpoint into a temporary directory and renames it when complete, so
a run killed at any moment (also during a save) restores from the last complete one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from azjax.config import TrainConfig

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_DIR = "checkpoints"


class RunDirError(ValueError):
    """A run directory that is missing, empty or not a training run."""


def checkpoint_manager(run_dir: Path, max_to_keep: int = 3,
                       keep_period: int | None = None) -> ocp.CheckpointManager:
    """An orbax manager for `run_dir/checkpoints` (saves synchronously); it keeps the
    newest `max_to_keep` checkpoints and every one whose step is a multiple of
    `keep_period`."""
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep, keep_period=keep_period, create=True,
        enable_async_checkpointing=False,
    )
    return ocp.CheckpointManager(Path(run_dir).absolute() / CHECKPOINT_DIR, options=options)


def save(manager: ocp.CheckpointManager, step: int, train_state: Any) -> None:
    """Writes a checkpoint of the whole train state at `step` and waits for it."""
    manager.save(step, args=ocp.args.StandardSave(train_state))
    manager.wait_until_finished()


def restore(manager: ocp.CheckpointManager, abstract_state: Any, step: int | None = None) -> Any:
    """Restores the checkpoint at `step` (newest by default) into `abstract_state`'s shapes."""
    step = manager.latest_step() if step is None else step
    if step is None:
        raise RunDirError(f"no checkpoint in {manager.directory}")
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_state)
    return manager.restore(step, args=ocp.args.StandardRestore(abstract))


def restore_params(manager: ocp.CheckpointManager, abstract_params: Any,
                   step: int | None = None) -> Any:
    """Restores only the network parameters of a checkpoint (newest by default).

    Reads nothing else (no replay), and works across changes to the rest of the state.
    """
    step = manager.latest_step() if step is None else step
    if step is None:
        raise RunDirError(f"no checkpoint in {manager.directory}")
    if step not in manager.all_steps():
        raise RunDirError(
            f"no checkpoint at step {step} in {manager.directory}; "
            f"steps there: {sorted(manager.all_steps())}"
        )
    item = {"params": jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_params)}
    args = ocp.args.PyTreeRestore(
        item=item,
        restore_args=ocp.checkpoint_utils.construct_restore_args(item),
        partial_restore=True,
    )
    params = manager.restore(step, args=args)["params"]
    stored, _ = jax.tree_util.tree_flatten_with_path(params)
    wrong = [
        f"{jax.tree_util.keystr(path)}: stored {tuple(x.shape)}, expected {tuple(a.shape)}"
        for (path, x), a in zip(stored, jax.tree.leaves(abstract_params))
        if tuple(x.shape) != tuple(a.shape)
    ]
    if wrong or jax.tree.structure(params) != jax.tree.structure(abstract_params):
        raise RunDirError(
            f"the weights of {manager.directory} (step {step}) do not fit the network of "
            f"the game being loaded ({'; '.join(wrong[:3]) or 'other layers'}); was the run "
            "trained on other game options or another game?")
    return params


def check_run_dir(run_dir: Path, config: TrainConfig) -> None:
    """RunDirError, listing the differences, when `run_dir` holds a run of another
    program or seed (the run half may change on resume); nothing is written."""
    run_dir = Path(run_dir)
    if (run_dir / CONFIG_FILE).exists():
        differences = load_config(run_dir).program_differences(config)
        if differences:
            raise RunDirError(
                f"{run_dir} holds a run with a different config; use another --run-dir "
                "or the same options. Differences: " + "; ".join(differences)
            )


def prepare_run_dir(run_dir: Path, config: TrainConfig) -> None:
    """Creates `run_dir` with config.json, or checks (`check_run_dir`) that the run in it
    is the same run and rewrites its config.json with the new run half."""
    check_run_dir(run_dir, config)
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    config.save(Path(run_dir) / CONFIG_FILE)


def load_config(run_dir: Path) -> TrainConfig:
    """The config saved in a run directory, or a RunDirError saying what is missing."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"run directory {str(run_dir)!r} does not exist")
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        raise RunDirError(f"{str(run_dir)!r} is not a training run (no {CONFIG_FILE})")
    try:
        return TrainConfig.load(path)
    except (ValueError, TypeError) as err:
        raise RunDirError(f"{path} is not a valid config: {err}") from None


def append_metrics(run_dir: Path, record: dict[str, Any]) -> None:
    """Appends one JSON line to metrics.jsonl."""
    with open(Path(run_dir) / METRICS_FILE, "a") as f:
        f.write(json.dumps(record) + "\n")


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """All records of metrics.jsonl (a torn last line from a kill is skipped)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records
