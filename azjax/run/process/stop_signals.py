"""Stopping at a signal with a checkpoint: what a scheduler's preemption needs.

Slurm, Kubernetes and cloud schedulers send SIGTERM some seconds before they kill a job;
a person at a terminal presses Ctrl-C (SIGINT), and Jupyter's Interrupt sends the same.
While a run trains, `StopSignals` turns the first of either into a request that the
training loop reads after each iteration: the run finishes that iteration, skips the
evaluations due (one under way is abandoned: `StopSignals.unless_stopped`), saves a
checkpoint and stops (`Stopped`; the scripts exit with `EXIT_STOPPED`, which a requeue
can tell from a failure). Every process of a run stops at the same iteration: the loop
agrees on the request (`StopSignals.agree`, with `azjax.run.process.devices.agreed_max`), so a
signal that reached one process stops all. A second signal raises `Interrupted`, a
KeyboardInterrupt, wherever the run stands (the newest checkpoint is complete, or set
aside on resume if it was being written), so that the process cleans up and never dies
of the signal; the same signal again within `REPEAT_S` is taken as the first one's echo
and ignored (a scheduler may signal both a process and its guard, `azjax.run.process.guard`,
which passes it on; a terminal's Ctrl-C reaches both too).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

EXIT_STOPPED = 75
"""Exit status of a run stopped by a signal after saving a checkpoint (EX_TEMPFAIL:
try again later); the same command resumes it."""

SIGNALS = (signal.SIGTERM, signal.SIGINT)
REPEAT_S = 1.0
"""Seconds after a signal within which the same signal again is its echo, ignored."""

T = TypeVar("T")


def signal_name(signum: int) -> str:
    """`SIGTERM` for 15, and so on."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Stopped(KeyboardInterrupt):
    """Training stopped at a signal, after saving a checkpoint of every run. A
    KeyboardInterrupt, so that code which stops at Ctrl-C stops at it too."""

    def __init__(self, signum: int, iterations: Sequence[int], run_dirs: Sequence[Path | None]):
        self.signum, self.iterations, self.run_dirs = signum, list(iterations), list(run_dirs)
        super().__init__(self.message())

    def message(self, commands: int = 1) -> str:
        """One line: the signal, where each run stopped, and how to resume (by rerunning
        `commands` commands: one per process)."""
        saved = [d for d in self.run_dirs if d is not None]
        where = (f"iteration {self.iterations[0]}" if len(set(self.iterations)) == 1
                 else f"iterations {min(self.iterations)}-{max(self.iterations)}")
        if not saved:
            return f"stopped by {signal_name(self.signum)} after {where} (nothing saved: no run directory)"
        dirs = str(saved[0]) if len(saved) == 1 else f"{len(saved)} run directories"
        return (f"stopped by {signal_name(self.signum)} after {where}, with a checkpoint in "
                f"{dirs}; rerun the same "
                + ("command" if commands == 1 else f"{commands} commands") + " to resume")


class Interrupted(KeyboardInterrupt):
    """A second signal while a run stops at the first: the run is left where it stands
    (its newest complete checkpoint resumes it). `signum`: that signal."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by a second {signal_name(signum)}")


class _Abandoned(KeyboardInterrupt):
    """Raised by the first signal inside `StopSignals.unless_stopped`, and caught there."""


class StopSignals:
    """While entered: SIGTERM and SIGINT request a stop (`received`) instead of ending
    the process; a second one raises `Interrupted` (the same signal within `REPEAT_S` is
    the first one's echo, ignored). Outside the main thread (where Python cannot take
    signals) it does nothing.

    Args:
      notice: written to stderr at the first signal (nothing if None).
      clock: seconds, that tell an echo from a second signal: a test gives its own, so
        that no answer depends on how fast the signals came.
      agree: the signal every process of a run stops at, from this process's `received`
        (called at the same points in every process: `azjax.run.process.devices.agreed_max`);
        by default this process's own.
    """

    def __init__(self, notice: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 agree: Callable[[int], int] = int):
        self.received = 0
        self.received_at = 0.0
        self.agreed = 0
        self.notice = notice
        self._clock = clock
        self._agree = agree
        self._abandoning = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        now = self._clock()
        if self.received:
            if signum == self.received and now - self.received_at < REPEAT_S:
                return  # the first one's echo
            raise Interrupted(signum)
        self.received, self.received_at = signum, now
        if self.notice:
            os.write(2, f"\n{signal_name(signum)}: {self.notice}\n".encode())
        if self._abandoning:
            raise _Abandoned

    def agree(self) -> int:
        """Agrees with the run's other processes on a stop; every process calls it at
        the same points.

        Returns:
          The signal that stops the run, any process's (0: none yet); also kept in
          `agreed`.
        """
        self.agreed = self._agree(self.received)
        return self.agreed

    def unless_stopped(self, work: Callable[[], T]) -> T | None:
        """Runs work that a stop may skip, such as an evaluation: a signal during it
        raises inside it (in the main thread), and it is left where it stands. Code that
        must not be cut short (a checkpoint) has no place in it.

        Args:
          work: what to run.

        Returns:
          What `work()` returned, or None where a signal came before it or during it.
        """
        try:
            try:
                self._abandoning = True
                if self.received:
                    return None
                return work()
            finally:
                self._abandoning = False
        except _Abandoned:  # also one raised as the finally clause began
            return None

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            # A handler installed outside Python (None) cannot be put back: the default.
            signal.signal(signum, signal.SIG_DFL if previous is None else previous)
        self._previous.clear()
