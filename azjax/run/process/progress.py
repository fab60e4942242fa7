"""Status lines for long-running commands: how far, how fast, and how long is left."""

from __future__ import annotations

import time
from typing import Callable


def format_duration(seconds: float) -> str:
    """'42s', '3m05s' or '2h07m'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts units of work towards `total` and reports them as one status line.

    `update(done)` returns (and passes to `write`) a line such as
    ``league: 12/45 games | 3.1 games/s | 4s elapsed | ETA 11s``.
    `initial` is work already done before this object was made (a resumed run); the
    rate and the ETA count only the work done since. With `every` > 0, `update` writes
    at most one line per `every` seconds (and always the last one).
    """

    def __init__(self, total: int, unit: str = "it", label: str = "", initial: int = 0,
                 write: Callable[[str], None] | None = print, every: float = 0.0,
                 clock: Callable[[], float] = time.perf_counter):
        if total < 0 or not 0 <= initial <= max(total, initial):
            raise ValueError(f"need total >= 0 and initial >= 0, got {total}, {initial}")
        self.total = total
        self.unit = unit
        self.label = label
        self.initial = initial
        self.write = write
        self.every = every
        self.clock = clock
        self.start = clock()
        self._written_at: float | None = None

    def rate(self, done: int) -> float:
        """Units per second since this object was made."""
        elapsed = self.clock() - self.start
        return (done - self.initial) / elapsed if elapsed > 0 else 0.0

    def eta(self, done: int) -> float | None:
        """Seconds left at the current rate (None before any progress)."""
        rate = self.rate(done)
        return max(self.total - done, 0) / rate if rate > 0 else None

    def line(self, done: int, extra: str = "", limit: float | None = None) -> str:
        """The status line for `done` units, without writing it; `limit` caps the ETA
        (the seconds a time budget leaves)."""
        parts = [f"{self.label + ': ' if self.label else ''}{done}/{self.total} {self.unit}"]
        rate = self.rate(done)
        if rate > 0:
            parts.append(f"{rate:.3g} {self.unit}/s")
        parts.append(f"{format_duration(self.clock() - self.start)} elapsed")
        eta = self.eta(done)
        if limit is not None:
            eta = max(0.0, min(limit, float("inf") if eta is None else eta))
        if done >= self.total:
            parts.append("done")
        elif eta is not None:
            parts.append(f"ETA {format_duration(eta)}")
        if extra:
            parts.append(extra)
        return " | ".join(parts)

    def update(self, done: int, extra: str = "", limit: float | None = None) -> str | None:
        """Writes and returns the status line for `done` units; None (nothing written)
        when the last line is less than `every` seconds old and the work is not done."""
        now = self.clock()
        if (self._written_at is not None and now - self._written_at < self.every
                and done < self.total):
            return None
        self._written_at = now
        text = self.line(done, extra, limit)
        if self.write is not None:
            self.write(text)
        return text
