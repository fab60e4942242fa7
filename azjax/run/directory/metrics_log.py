"""A run's metrics (`Metrics`, a run directory's `RunDir.metrics`): metrics.jsonl, and
optionally TensorBoard event files (`MetricsLog`)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.run.directory.checkpoint import Checkpoints, Restored
from azjax.run.directory.layout import METRICS_FILE, TENSORBOARD_DIR, json_lines, records_text
from azjax.run.files import write_atomic
from azjax.run.metric_schema import ITERATION

# Bookkeeping fields of a record that are not curves worth plotting (a scalar's tag is
# its key, `azjax.run.metric_schema`, so that a resumed run's curves go on).
NOT_SCALARS = (ITERATION.name,)


def same_records(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> bool:
    """Whether two lists of records are the same, NaN fields included.

    Args:
      a: records.
      b: records.

    Returns:
      True when they are.
    """
    return records_text(a) == records_text(b)


def check_tensorboard() -> None:
    """A ValueError saying how to install tensorboardX when it is missing."""
    try:
        import tensorboardX  # noqa: F401
    except ImportError:
        raise ValueError(
            "--tensorboard needs the tensorboardX package: pip install 'azjax[tensorboard]'"
        ) from None


def tensorboard_writer(log_dir: Path, purge_step: int | None):
    """A tensorboardX writer (ValueError when tensorboardX is missing)."""
    check_tensorboard()
    from tensorboardX import SummaryWriter

    return SummaryWriter(logdir=str(log_dir), purge_step=purge_step)


class Metrics:
    """A run's metrics records: its metrics.jsonl, one JSON record per logged iteration,
    which only ever holds records of checkpointed iterations (a checkpoint holds a copy
    of the records up to it, from which `resume` repairs the file)."""

    def __init__(self, run_path: Path, checkpoints: Checkpoints):
        self.file = Path(run_path) / METRICS_FILE
        self.tensorboard = Path(run_path) / TENSORBOARD_DIR
        self.checkpoints = checkpoints

    def __repr__(self) -> str:
        return f"Metrics({str(self.file)!r})"

    def read(self) -> list[dict[str, Any]]:
        """Every record of metrics.jsonl (an unreadable line is skipped: `resume`
        repairs the file from the checkpoints).

        Returns:
          The records, oldest first; [] for no file.
        """
        return [r for r in json_lines(self.file) if "iteration" in r]

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        """Appends records to metrics.jsonl and flushes them to disk.

        Args:
          records: the records (none: nothing is written).
        """
        if not records:
            return
        with open(self.file, "a") as f:
            f.write(records_text(records))
            f.flush()
            os.fsync(f.fileno())

    def rewrite(self, records: Sequence[dict[str, Any]]) -> None:
        """Replaces metrics.jsonl by `records`, atomically.

        Args:
          records: the records.
        """
        write_atomic(self.file, records_text(records))

    def resume(self, restored: Restored | None) -> tuple[list[dict[str, Any]], str | None]:
        """The metrics records a run resumed from `restored` (None: a fresh run) continues
        from, and a notice when metrics.jsonl must be rewritten to them (None: it holds
        exactly them). Reads only.

        A checkpoint holds a copy of the records up to it, so a truncated or damaged file is
        repaired from the newest intact checkpoint, and records past it (they belong to a
        damaged checkpoint) are dropped, saying so.

        Args:
          restored: the checkpoint the run resumes from (None: it starts afresh).

        Returns:
          The records, and the notice (None when the file holds exactly them).
        """
        path = self.file
        text = path.read_text(errors="replace") if path.is_file() else ""
        found = self.read()
        if restored is None:
            if found:
                return [], (f"{path} held {len(found)} records but the run has no checkpoint; "
                            "starting the run afresh")
            return [], None if not text else f"cleared {path} (the run has no checkpoint)"
        copy = self.checkpoints.records(restored)
        if text == records_text(copy):
            return copy, None
        if same_records(found, copy):
            return copy, f"dropped the unreadable lines of {path}"
        if same_records(found[:len(copy)], copy):
            return copy, (f"dropped {len(found) - len(copy)} records of metrics.jsonl after "
                          f"iteration {restored.step} (they belong to damaged checkpoints)")
        if text == records_text(copy[:len(found)]):
            return copy, (f"metrics.jsonl lacked the records after iteration "
                          f"{found[-1]['iteration'] if found else 0} (the process stopped before "
                          f"appending them); added them from checkpoint {restored.step}")
        return copy, (f"metrics.jsonl was damaged ({len(found)} readable records, checkpoint "
                      f"{restored.step} holds {len(copy)}); rewrote it from the checkpoint")


class MetricsLog:
    """The metrics records of a run (one per logged iteration) and where they go.

    metrics.jsonl only ever holds records of checkpointed iterations: `append` keeps a
    record until `flush(step)`, called once the checkpoint of `step` is complete, writes
    it. TensorBoard gets every record at once (and drops the events of iterations a
    resumed run redoes).
    """

    def __init__(self, metrics: Metrics, tensorboard: bool = False):
        self.metrics = metrics
        self.tensorboard = tensorboard
        self._writer = None
        self._pending: list[dict[str, Any]] = []

    def start(self, records: list[dict[str, Any]], rewrite: bool, step: int | None) -> None:
        """Begins logging after the records of `step` (None: a fresh run); rewrites
        metrics.jsonl to `records` first when `rewrite`."""
        if rewrite:
            self.metrics.rewrite(records)
        if self.tensorboard:
            purge = (step or 0) + 1  # events of iterations that run again are dropped
            self._writer = tensorboard_writer(self.metrics.tensorboard, purge)

    def append(self, record: dict[str, Any]) -> None:
        """Takes one record (written to metrics.jsonl by `flush`; to TensorBoard now)."""
        self._pending.append(record)
        self._to_tensorboard(record)

    def amend_last(self, records: list[dict[str, Any]]) -> None:
        """Rewrites metrics.jsonl to `records`, all checkpointed, whose last record the
        checkpoint now holds amended (`azjax.run.directory.checkpoint.amend_records`)."""
        self.metrics.rewrite(records)
        self._to_tensorboard(records[-1])

    def _to_tensorboard(self, record: dict[str, Any]) -> None:
        if self._writer is not None:
            step = int(record[ITERATION.name])
            for key, value in record.items():
                if key not in NOT_SCALARS and isinstance(value, (int, float)):
                    self._writer.add_scalar(re.sub(r"[^\w./-]", "_", key), value, step)
            self._writer.flush()

    def flush(self, step: int) -> None:
        """Appends the records up to `step` (checkpointed) to metrics.jsonl."""
        done = [r for r in self._pending if r["iteration"] <= step]
        self.metrics.append(done)
        self._pending = self._pending[len(done):]

    def close(self) -> None:
        """Flushes and closes the TensorBoard writer, if any."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
