"""Where a run's metrics go: metrics.jsonl, and optionally TensorBoard event files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from azjax import checkpoint as ckpt

TENSORBOARD_DIR = "tensorboard"
# Bookkeeping fields of a record that are not curves worth plotting.
NOT_SCALARS = ("iteration",)


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


class MetricsLog:
    """Appends metrics records of a run (one per logged iteration).

    `resume_from(step)` keeps the records up to a restored checkpoint and drops the rest
    (they belong to iterations the resumed run will redo); TensorBoard is told to drop its
    events from those iterations too.
    """

    def __init__(self, run_dir: Path, tensorboard: bool = False):
        self.run_dir = Path(run_dir)
        self.tensorboard = tensorboard
        self._writer = None

    def resume_from(self, step: int | None) -> list[dict[str, Any]]:
        """The records up to `step` (none for a fresh run); rewrites metrics.jsonl to them."""
        records = []
        if step is not None:
            records = [r for r in ckpt.read_metrics(self.run_dir) if r["iteration"] <= step]
        (self.run_dir / ckpt.METRICS_FILE).write_text(
            "".join(json.dumps(r) + "\n" for r in records)
        )
        if self.tensorboard:
            purge = step + 1 if step is not None else None
            self._writer = tensorboard_writer(self.run_dir / TENSORBOARD_DIR, purge)
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Writes one record to metrics.jsonl (and its scalars to TensorBoard)."""
        ckpt.append_metrics(self.run_dir, record)
        if self._writer is not None:
            step = int(record["iteration"])
            for key, value in record.items():
                if key not in NOT_SCALARS and isinstance(value, (int, float)):
                    self._writer.add_scalar(re.sub(r"[^\w./-]", "_", key), value, step)
            self._writer.flush()

    def close(self) -> None:
        """Flushes and closes the TensorBoard writer, if any."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
