"""The names of a run directory's files and folders, and its one error.

Every file and folder name of a run directory is spelled here (what lies inside a
checkpoint's step folder is `checkpoint_files`'). The parts of a run directory
(`checkpoint.Checkpoints`, `metrics_log.Metrics`, `lock.RunLock`) take their names from
here, and `run_dir.RunDir`, above them, composes them (modules of `azjax.run.directory`).

    config.json          the run's config
    metrics.jsonl        one JSON record per logged iteration
    provenance.jsonl     one JSON record per training process that started or resumed the
                         run: its code, command and machine
    .lock                held by the one process writing the run
    checkpoints/         one folder per checkpointed step
    damaged-checkpoints/ checkpoints set aside as damaged when the run resumed
    training.png         the learning curves (`plots`)
    tensorboard/         TensorBoard event files (`--tensorboard`)
    warm-up/             the warm-up run (`run.warm_up`), a run directory itself
    league.{csv,md,json,png}  the league of the run's checkpoints (`azjax league`)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.run.files import os_error_text

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
PROVENANCE_FILE = "provenance.jsonl"
LOCK_FILE = ".lock"
CHECKPOINT_DIR = "checkpoints"
DAMAGED_DIR = "damaged-checkpoints"
TRAINING_PLOT = "training.png"
TENSORBOARD_DIR = "tensorboard"
WARM_UP_DIR = "warm-up"
LEAGUE_CSV = "league.csv"
LEAGUE_MARKDOWN = "league.md"
LEAGUE_JSON = "league.json"
LEAGUE_PLOT = "league.png"
LEAGUE_FILES = (LEAGUE_CSV, LEAGUE_MARKDOWN, LEAGUE_JSON, LEAGUE_PLOT)

LAYOUT: dict[str, str] = {
    CONFIG_FILE: "the run's config",
    METRICS_FILE: "one JSON record per logged iteration",
    PROVENANCE_FILE: "one JSON record per training process that started or resumed the run",
    LOCK_FILE: "held by the one process writing the run",
    CHECKPOINT_DIR: "one folder per checkpointed step",
    DAMAGED_DIR: "checkpoints set aside as damaged when the run resumed",
    TRAINING_PLOT: "the learning curves",
    TENSORBOARD_DIR: "TensorBoard event files",
    WARM_UP_DIR: "the warm-up run, a run directory itself",
    **{name: "the league of the run's checkpoints" for name in LEAGUE_FILES},
}
"""Every name a run directory may hold, with what it is."""


class RunDirError(ValueError):
    """A run directory that is missing, empty, damaged, in use or not a training run."""


def cannot_write(path: Path | str, err: OSError) -> RunDirError:
    """The one-line error for a run directory that cannot be created or written.

    Args:
      path: the run directory.
      err: the OS error.

    Returns:
      The error to raise.
    """
    return RunDirError(f"cannot write to run directory {str(path)!r} "
                       f"({os_error_text(err)})")


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one per line; a line that is not one (torn
    by a killed write, or damaged) is skipped.

    Args:
      path: the file.

    Returns:
      The objects, in file order; [] for no file.
    """
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def records_text(records: Sequence[dict[str, Any]]) -> str:
    """The JSON-lines text of `records` (metrics.jsonl's, and its copies'), one line each.

    Args:
      records: the records.

    Returns:
      The text.
    """
    return "".join(json.dumps(r) + "\n" for r in records)
