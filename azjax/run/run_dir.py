"""A run directory's own files, beside its checkpoints: the path checks, `config.json`
(saved, loaded, compared with a command's config) and `metrics.jsonl` (appended, read).
The checkpoints are `azjax.run.checkpoint`, which re-exports this module's names."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.run.checkpoint_files import (
    CHECKPOINT_DIR,
    checkpoint_steps,
    read_manifest,
    step_dir,
    verify,
)
from azjax.run.config import TrainConfig
from azjax.run.files import os_error_text

CONFIG_FILE = "config.json"


METRICS_FILE = "metrics.jsonl"


LOCK_FILE = ".lock"


class RunDirError(ValueError):
    """A run directory that is missing, empty, damaged, in use or not a training run."""


def check_run_dir_path(run_dir: Path | str) -> Path:
    """`run_dir` as a Path, or a RunDirError for a path that cannot be a run directory: an
    empty one, a file, or one under a file."""
    if str(run_dir).strip() == "":
        raise RunDirError("the run directory must not be empty (give --run-dir DIR)")
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{str(run_dir)!r} is a file, not a run directory")
    checkpoints = run_dir / CHECKPOINT_DIR
    if checkpoints.exists() and not checkpoints.is_dir():
        raise RunDirError(f"{str(checkpoints)!r} is a file; the run's checkpoints cannot go "
                          "there")
    for parent in run_dir.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise RunDirError(f"{str(run_dir)!r} lies under {str(parent)!r}, which is a file")
            break
    return run_dir


def saved_config(run_dir: Path) -> TrainConfig | None:
    """The run's config: config.json, else the one in its newest intact checkpoint's
    manifest (config.json deleted), else None (no run here)."""
    run_dir = Path(run_dir)
    if (run_dir / CONFIG_FILE).is_file():
        return load_config(run_dir)
    for step in checkpoint_steps(run_dir):
        manifest = read_manifest(step_dir(run_dir, step))
        if manifest is not None and manifest.get("config") and verify(
                run_dir, step, manifest) is None:
            return TrainConfig.from_dict(manifest["config"])
    if checkpoint_steps(run_dir):
        raise RunDirError(
            f"{str(run_dir)!r} holds checkpoints but no {CONFIG_FILE} and no intact "
            "checkpoint records its config; restore config.json or use another --run-dir")
    return None


def check_run_dir(run_dir: Path, config: TrainConfig) -> None:
    """RunDirError, listing the differences, when `run_dir` holds a run of another
    program or seed (the run half may change on resume); nothing is written."""
    run_dir = check_run_dir_path(run_dir)
    if not run_dir.is_dir():
        return
    saved = saved_config(run_dir)
    if saved is not None:
        differences = saved.program_differences(config)
        if differences:
            raise RunDirError(
                f"{run_dir} holds a run with a different config; use another --run-dir "
                "or the same options. Differences: " + "; ".join(differences)
            )


def check_device_count(run_dir: Path, count: int) -> None:
    """RunDirError unless the run in `run_dir` (if any checkpoint) was trained on `count`
    devices: its self-play games and replay ring are laid out per device."""
    saved = saved_config(run_dir) if checkpoint_steps(run_dir) else None
    trained_on = max(saved.run.devices, 1) if saved is not None else count  # 0: before
    if trained_on != count:  # azjax ran on one device only
        raise RunDirError(
            f"{run_dir} was trained on {trained_on} device{'s' * (trained_on > 1)} and resumes "
            f"on as many (its self-play games and replay ring are split per device), not "
            f"{count}: rerun with --devices {trained_on}")


def save_config(run_dir: Path, config: TrainConfig) -> None:
    """Writes the run's config.json (atomically)."""
    config.save(Path(run_dir) / CONFIG_FILE)


def cannot_write(run_dir: Path, err: OSError) -> RunDirError:
    """The one-line error for a run directory that cannot be created or written."""
    return RunDirError(f"cannot write to run directory {str(run_dir)!r} "
                       f"({os_error_text(err)})")


def load_config(run_dir: Path) -> TrainConfig:
    """The config saved in a run directory (config.json, or the newest intact
    checkpoint's copy when it was deleted), or a RunDirError saying what is missing."""
    run_dir = check_run_dir_path(run_dir)
    if not run_dir.exists():
        raise RunDirError(f"run directory {str(run_dir)!r} does not exist")
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        try:
            config = saved_config(run_dir)
        except OSError as err:
            raise RunDirError(f"cannot read {str(run_dir)!r} ({os_error_text(err)})") from None
        if config is None:
            raise RunDirError(f"{str(run_dir)!r} is not a training run (no {CONFIG_FILE})")
        return config
    try:
        return TrainConfig.load(path)
    except OSError as err:
        raise RunDirError(f"cannot read {path} ({os_error_text(err)})") from None
    except (ValueError, TypeError) as err:
        raise RunDirError(f"{path} is not a valid config: {err}") from None


def metrics_text(records: Sequence[dict[str, Any]]) -> str:
    """metrics.jsonl's text for `records`."""
    return "".join(json.dumps(r) + "\n" for r in records)


def append_metrics(run_dir: Path, records: Sequence[dict[str, Any]]) -> None:
    """Appends JSON lines to metrics.jsonl and flushes them to disk."""
    if not records:
        return
    with open(Path(run_dir) / METRICS_FILE, "a") as f:
        f.write(metrics_text(records))
        f.flush()
        os.fsync(f.fileno())


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """All records of metrics.jsonl (an unreadable line is skipped; the driver repairs
    the file from its checkpoints when it resumes)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "iteration" in record:
            records.append(record)
    return records


def same_records(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> bool:
    """Whether two lists of records are the same, NaN fields included."""
    return metrics_text(a) == metrics_text(b)
