"""A training run's directory as one object, `RunDir`: its layout (every file and folder
name of a run directory is spelled here, but for the insides of a checkpoint's step
folder, `azjax.run.checkpoint_files`), the checks of its path, `config.json` (saved,
loaded, compared with a command's config), `metrics.jsonl` (appended, read) and
`provenance.jsonl` (appended, read).

A path becomes a `RunDir` once, where it enters (`RunDir.open`, which checks it); what
the run's modules pass each other from there on is the `RunDir`. The module-level
functions (`load_config(path)`, `read_metrics(path)`, ...) are the same operations for a
caller holding a bare path. The checkpoints are `azjax.run.checkpoint`, which re-exports
this module's names.

The layout (`LAYOUT`):

    config.json          the run's config (`save_config`, `load_config`)
    metrics.jsonl        one JSON record per logged iteration (`append_metrics`)
    provenance.jsonl     one JSON record per training process that started or resumed the
                         run: its code, command and machine (`append_provenance`)
    .lock                held by the one process writing the run (`azjax.run.lock`)
    checkpoints/         one folder per checkpointed step (`azjax.run.checkpoint`)
    damaged-checkpoints/ checkpoints set aside as damaged when the run resumed
    training.png         the learning curves (`azjax.driver.plots`)
    tensorboard/         TensorBoard event files (`--tensorboard`)
    warm-up/             the warm-up run (`run.warm_up`), a run directory itself
    league.{csv,md,json,png}  the league of the run's checkpoints (`azjax.league`)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.run.checkpoint_files import (
    CHECKPOINT_DIR,
    DAMAGED_DIR,
    checkpoint_steps,
    read_manifest,
    step_dir,
    verify,
)
from azjax.run.config import TrainConfig
from azjax.run.files import os_error_text

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
PROVENANCE_FILE = "provenance.jsonl"
LOCK_FILE = ".lock"
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


class RunDir(os.PathLike):
    """A training run's directory: the paths of its files and the operations on them.

    `RunDir.open(path)` checks the path and is how a path becomes one; `RunDir(path)`
    names a directory without checking it (to word or look at a path that is not to be
    used; `open` checks it when it is). It is a path-like object (`Path(run)`, `open`,
    `os.fspath` take it), and says its path in messages.
    """

    def __init__(self, path: RunDir | Path | str):
        self.path = Path(path)
        self.checked = False
        # as given: Path("") is ".", which `open` must not take for an empty --run-dir
        self._given = path._given if isinstance(path, RunDir) else str(path)

    @classmethod
    def open(cls, path: RunDir | Path | str) -> RunDir:
        """A checked run directory (it need not exist yet).

        Args:
          path: the directory (a `RunDir` that `open` returned is returned as it is).

        Returns:
          The run directory.

        Raises:
          RunDirError: one line, for a path that cannot be a run directory: an empty one,
            a file, one under a file, or one whose checkpoints folder is a file.
        """
        if isinstance(path, RunDir) and path.checked:
            return path
        run = cls(path)
        if run._given.strip() == "":
            raise RunDirError("the run directory must not be empty (give --run-dir DIR)")
        if run.path.exists() and not run.path.is_dir():
            raise RunDirError(f"{str(run.path)!r} is a file, not a run directory")
        if run.checkpoints.exists() and not run.checkpoints.is_dir():
            raise RunDirError(f"{str(run.checkpoints)!r} is a file; the run's checkpoints "
                              "cannot go there")
        for parent in run.path.absolute().parents:
            if parent.exists():
                if not parent.is_dir():
                    raise RunDirError(f"{str(run.path)!r} lies under {str(parent)!r}, "
                                      "which is a file")
                break
        run.checked = True
        return run

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunDir) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    # --- the layout ---------------------------------------------------------------------

    @property
    def config_file(self) -> Path:
        """config.json."""
        return self.path / CONFIG_FILE

    @property
    def metrics_file(self) -> Path:
        """metrics.jsonl."""
        return self.path / METRICS_FILE

    @property
    def provenance_file(self) -> Path:
        """provenance.jsonl."""
        return self.path / PROVENANCE_FILE

    @property
    def lock_file(self) -> Path:
        """The lock file of the process writing the run (`azjax.run.lock`)."""
        return self.path / LOCK_FILE

    @property
    def checkpoints(self) -> Path:
        """The folder of the checkpoints, one step folder each."""
        return self.path / CHECKPOINT_DIR

    @property
    def training_plot(self) -> Path:
        """The learning curves' picture."""
        return self.path / TRAINING_PLOT

    @property
    def tensorboard(self) -> Path:
        """The folder of TensorBoard's event files."""
        return self.path / TENSORBOARD_DIR

    @property
    def warm_up(self) -> RunDir:
        """The warm-up run's directory, inside this one."""
        return RunDir(self.path / WARM_UP_DIR)

    @property
    def league_files(self) -> tuple[Path, ...]:
        """The league's files (csv, markdown, json, plot)."""
        return tuple(self.path / name for name in LEAGUE_FILES)

    def exists(self) -> bool:
        """Whether the directory exists.

        Returns:
          True when it does.
        """
        return self.path.is_dir()

    def step_dir(self, step: int) -> Path:
        """The folder of checkpoint `step`.

        Args:
          step: the checkpoint's step (its training iteration).

        Returns:
          The folder's path (it may not exist).
        """
        return step_dir(self.path, step)

    def checkpoint_steps(self) -> list[int]:
        """The steps of the run's checkpoint folders, newest first (complete or not).

        Returns:
          The steps; [] for none.
        """
        return checkpoint_steps(self.path)

    # --- config.json --------------------------------------------------------------------

    def saved_config(self) -> TrainConfig | None:
        """The run's config: config.json, else the one in its newest intact checkpoint's
        manifest (config.json deleted), else None.

        Returns:
          The config, or None for no run here.

        Raises:
          RunDirError: for checkpoints none of which records its config.
        """
        if self.config_file.is_file():
            return self.load_config()
        steps = self.checkpoint_steps()
        for step in steps:
            manifest = read_manifest(self.step_dir(step))
            if manifest is not None and manifest.get("config") and verify(
                    self.path, step, manifest) is None:
                return TrainConfig.from_dict(manifest["config"])
        if steps:
            raise RunDirError(
                f"{str(self.path)!r} holds checkpoints but no {CONFIG_FILE} and no intact "
                "checkpoint records its config; restore config.json or use another --run-dir")
        return None

    def load_config(self) -> TrainConfig:
        """The config saved in the run (config.json, or the newest intact checkpoint's
        copy when it was deleted).

        Returns:
          The config.

        Raises:
          RunDirError: saying what is missing or unreadable.
        """
        if not self.path.exists():
            raise RunDirError(f"run directory {str(self.path)!r} does not exist")
        path = self.config_file
        if not path.is_file():
            try:
                config = self.saved_config()
            except OSError as err:
                raise RunDirError(f"cannot read {str(self.path)!r} "
                                  f"({os_error_text(err)})") from None
            if config is None:
                raise RunDirError(f"{str(self.path)!r} is not a training run "
                                  f"(no {CONFIG_FILE})")
            return config
        try:
            return TrainConfig.load(path)
        except OSError as err:
            raise RunDirError(f"cannot read {path} ({os_error_text(err)})") from None
        except (ValueError, TypeError) as err:
            raise RunDirError(f"{path} is not a valid config: {err}") from None

    def save_config(self, config: TrainConfig) -> None:
        """Writes the run's config.json (atomically).

        Args:
          config: the run's config.
        """
        config.save(self.config_file)

    def check(self, config: TrainConfig) -> None:
        """Checks that the run here, if any, is one of `config`'s program and seed (the
        run half may change on resume); nothing is written.

        Args:
          config: the config a command would train with.

        Raises:
          RunDirError: listing the differences, for a run of another program or seed.
        """
        if not self.path.is_dir():
            return
        saved = self.saved_config()
        if saved is not None:
            differences = saved.program_differences(config)
            if differences:
                raise RunDirError(
                    f"{self.path} holds a run with a different config; use another "
                    "--run-dir or the same options. Differences: " + "; ".join(differences))

    def check_device_count(self, count: int) -> None:
        """Checks that the run here (if any checkpoint) was trained on `count` devices: its
        self-play games and replay ring are laid out per device.

        Args:
          count: the devices the run would resume on.

        Raises:
          RunDirError: saying how many devices to resume on.
        """
        saved = self.saved_config() if self.checkpoint_steps() else None
        trained_on = max(saved.run.devices, 1) if saved is not None else count  # 0: before
        if trained_on != count:  # azjax ran on one device only
            raise RunDirError(
                f"{self.path} was trained on {trained_on} device{'s' * (trained_on > 1)} and "
                f"resumes on as many (its self-play games and replay ring are split per "
                f"device), not {count}: rerun with --devices {trained_on}")

    def cannot_write(self, err: OSError) -> RunDirError:
        """The one-line error for a run directory that cannot be created or written.

        Args:
          err: the OS error.

        Returns:
          The error to raise.
        """
        return cannot_write(self.path, err)

    # --- metrics.jsonl ------------------------------------------------------------------

    def append_metrics(self, records: Sequence[dict[str, Any]]) -> None:
        """Appends JSON lines to metrics.jsonl and flushes them to disk.

        Args:
          records: the records to append (none: nothing is written).
        """
        if not records:
            return
        with open(self.metrics_file, "a") as f:
            f.write(metrics_text(records))
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict[str, Any]]:
        """All records of metrics.jsonl (an unreadable line is skipped: the driver repairs
        the file from its checkpoints when it resumes).

        Returns:
          The records, oldest first; [] for no file.
        """
        return [r for r in _json_lines(self.metrics_file) if "iteration" in r]

    # --- provenance.jsonl ---------------------------------------------------------------

    def append_provenance(self, record: dict[str, Any]) -> None:
        """Appends one record (`azjax.run.process_record.start_record`) to
        provenance.jsonl as one line, in one write, flushed to disk.

        A process killed mid-write leaves a torn last line: `read_provenance` skips it,
        and this ends it first, so that it does not swallow the record after it.

        Args:
          record: the record.
        """
        path = self.provenance_file
        torn = False
        if path.is_file() and path.stat().st_size:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
        with open(path, "a") as f:
            f.write(("\n" if torn else "") + json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_provenance(self) -> list[dict[str, Any]]:
        """The records of provenance.jsonl: the training processes that started or
        resumed the run, in the order they started (a torn or unreadable line, or one
        without an integer iteration, is skipped: it cannot be placed in the run).

        Returns:
          The records, oldest first; [] for no file (a run from before azjax wrote it).
        """
        return [r for r in _json_lines(self.provenance_file)
                if isinstance(r.get("iteration"), int) and not isinstance(r["iteration"], bool)]


# --- the same operations for a caller holding a path ----------------------------------


def check_run_dir_path(run_dir: RunDir | Path | str) -> Path:
    """`run_dir` as a Path, checked (`RunDir.open`, which is what to use instead).

    Args:
      run_dir: the directory.

    Returns:
      Its path.

    Raises:
      RunDirError: for a path that cannot be a run directory.
    """
    return RunDir.open(run_dir).path


def saved_config(run_dir: RunDir | Path | str) -> TrainConfig | None:
    """`RunDir.saved_config` of `run_dir`.

    Args:
      run_dir: the directory.

    Returns:
      The run's config, or None for no run there.
    """
    return RunDir.open(run_dir).saved_config()


def check_run_dir(run_dir: RunDir | Path | str, config: TrainConfig) -> None:
    """`RunDir.check` of `run_dir`.

    Args:
      run_dir: the directory.
      config: the config a command would train with.
    """
    RunDir.open(run_dir).check(config)


def check_device_count(run_dir: RunDir | Path | str, count: int) -> None:
    """`RunDir.check_device_count` of `run_dir`.

    Args:
      run_dir: the directory.
      count: the devices the run would resume on.
    """
    RunDir.open(run_dir).check_device_count(count)


def save_config(run_dir: RunDir | Path | str, config: TrainConfig) -> None:
    """`RunDir.save_config` of `run_dir`.

    Args:
      run_dir: the directory.
      config: the run's config.
    """
    RunDir.open(run_dir).save_config(config)


def load_config(run_dir: RunDir | Path | str) -> TrainConfig:
    """`RunDir.load_config` of `run_dir`: the config saved there, or a RunDirError
    saying what is missing.

    Args:
      run_dir: the directory.

    Returns:
      The config.
    """
    return RunDir.open(run_dir).load_config()


def cannot_write(run_dir: RunDir | Path | str, err: OSError) -> RunDirError:
    """The one-line error for a run directory that cannot be created or written.

    Args:
      run_dir: the directory.
      err: the OS error.

    Returns:
      The error to raise.
    """
    return RunDirError(f"cannot write to run directory {str(run_dir)!r} "
                       f"({os_error_text(err)})")


def metrics_text(records: Sequence[dict[str, Any]]) -> str:
    """metrics.jsonl's text for `records`.

    Args:
      records: the records.

    Returns:
      One JSON line each.
    """
    return "".join(json.dumps(r) + "\n" for r in records)


def append_metrics(run_dir: RunDir | Path | str, records: Sequence[dict[str, Any]]) -> None:
    """`RunDir.append_metrics` of `run_dir`.

    Args:
      run_dir: the directory.
      records: the records to append.
    """
    RunDir.open(run_dir).append_metrics(records)


def read_metrics(run_dir: RunDir | Path | str) -> list[dict[str, Any]]:
    """`RunDir.read_metrics` of `run_dir`.

    Args:
      run_dir: the directory.

    Returns:
      The records of its metrics.jsonl.
    """
    return RunDir.open(run_dir).read_metrics()


def same_records(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> bool:
    """Whether two lists of records are the same, NaN fields included.

    Args:
      a: records.
      b: records.

    Returns:
      True when they are.
    """
    return metrics_text(a) == metrics_text(b)


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one per line; a line that is not one (torn
    by a killed write, or damaged) is skipped. [] for no file."""
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
