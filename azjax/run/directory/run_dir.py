"""A training run's directory as one object, `RunDir`: its parts, its checks, its
config and its provenance.

A `RunDir` composes the parts of a run directory, each a member:

    run.checkpoints   the checkpoints (`checkpoint.Checkpoints`): list, save, restore
                      the newest, read a step's parameters, set aside
    run.metrics       metrics.jsonl (`metrics_log.Metrics`): append, read, resume
    run.lock()        the one writer's lock (`lock.RunLock`)
    run.plot(records) the learning curves, training.png (`plots`)

and owns `config.json` (saved, loaded, compared with a command's config) and
`provenance.jsonl` (appended, read) itself. The names of the files and folders are
`layout`'s (modules of `azjax.run.directory`).

A path becomes a `RunDir` where it enters (`RunDir.open`, which checks it: the commands,
`train` and `train_group`, `Agent.load`); what the run's modules pass each other from
there on is the `RunDir`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from azjax.run.config import TrainConfig
from azjax.run.directory.checkpoint import Checkpoints
from azjax.run.directory.layout import (
    CONFIG_FILE,
    LEAGUE_FILES,
    PROVENANCE_FILE,
    TRAINING_PLOT,
    WARM_UP_DIR,
    RunDirError,
    cannot_write,
    json_lines,
)
from azjax.run.directory.lock import RunLock
from azjax.run.directory.metrics_log import Metrics
from azjax.run.directory.plots import plot_run
from azjax.run.files import os_error_text


class RunDir(os.PathLike):
    """A training run's directory: the paths of its files and the operations on them,
    its own (config.json, provenance.jsonl) and its parts' (members `checkpoints` and
    `metrics`, `lock()` and `plot(records)`).

    `RunDir.open(path)` checks the path and is how a path becomes one; `RunDir(path)`
    names a directory without checking it (to word or look at a path that is not to be
    used; `open` checks it when it is). It is a path-like object (`Path(run)`, `open`,
    `os.fspath` take it), and says its path in messages.
    """

    def __init__(self, path: RunDir | Path | str):
        self.path = Path(path)
        self.checked = False
        self.checkpoints = Checkpoints(self.path)
        self.metrics = Metrics(self.path, self.checkpoints)
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
        folder = run.checkpoints.folder
        if folder.exists() and not folder.is_dir():
            raise RunDirError(f"{str(folder)!r} is a file; the run's checkpoints "
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
    def provenance_file(self) -> Path:
        """provenance.jsonl."""
        return self.path / PROVENANCE_FILE

    @property
    def training_plot(self) -> Path:
        """The learning curves' picture."""
        return self.path / TRAINING_PLOT

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
        recorded = self.checkpoints.recorded_config()
        if recorded is not None:
            return TrainConfig.from_dict(recorded)
        if self.checkpoints.steps():
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
        saved = self.saved_config() if self.checkpoints.steps() else None
        trained_on = saved.run.devices if saved is not None else count
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

    def plot(self, records: list[dict[str, Any]]) -> None:
        """Draws the learning curves of `records` into training.png.

        Args:
          records: the run's metrics records.
        """
        plot_run(records, self.training_plot)

    def lock(self) -> RunLock:
        """Creates the directory (and its parents) and takes its lock: one writer per run.

        Returns:
          The lock, held (`release` it).

        Raises:
          RunDirError: for a directory that cannot be created or written, or that another
            process holds.
        """
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise self.cannot_write(err) from None
        return RunLock(self.path).acquire()

    # --- provenance.jsonl ---------------------------------------------------------------

    def append_provenance(self, record: dict[str, Any]) -> None:
        """Appends one record (`azjax.run.directory.process_record.start_record`) to
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
        return [r for r in json_lines(self.provenance_file)
                if isinstance(r.get("iteration"), int) and not isinstance(r["iteration"], bool)]
