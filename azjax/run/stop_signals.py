"""Stopping at a signal with a checkpoint: what a scheduler's preemption needs.

Slurm, Kubernetes and cloud schedulers send SIGTERM some seconds before they kill a job;
a person at a terminal presses Ctrl-C (SIGINT). While a run trains, `StopSignals` turns
the first of either into a request that the training loop reads after each iteration:
the run finishes that iteration, saves a checkpoint and stops (`Stopped`; the scripts
exit with `EXIT_STOPPED`, which a requeue can tell from a failure). Every process of a
run stops at the same iteration: the loop agrees on the request
(`azjax.run.devices.agreed_max`), so a signal that reached one process stops all. A
second signal ends the process at once, by the signal's default action; the same signal
again within `REPEAT_S` is taken as the first one's echo (a scheduler may signal both a
process and its guard, `azjax.run.guard`, which passes it on).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

EXIT_STOPPED = 75
"""Exit status of a run stopped by a signal after saving a checkpoint (EX_TEMPFAIL:
try again later); the same command resumes it."""

SIGNALS = (signal.SIGTERM, signal.SIGINT)
REPEAT_S = 1.0


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


class StopSignals:
    """While entered: SIGTERM and SIGINT request a stop (`received`) instead of ending
    the process; a second one ends it at once. Outside the main thread (where Python
    cannot take signals) it does nothing. `notice`, when given, is written to stderr
    at the first signal. `clock` (seconds) tells an echo from a second signal: a test
    gives its own, so that no answer depends on how fast the signals came."""

    def __init__(self, notice: str | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.received = 0
        self.received_at = 0.0
        self.notice = notice
        self._clock = clock
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        now = self._clock()
        if self.received:
            if signum == self.received and now - self.received_at < REPEAT_S:
                return  # the first one's echo
            signal.signal(signum, signal.SIG_DFL)  # the second: at once, as if uncaught
            os.kill(os.getpid(), signum)
            return
        self.received, self.received_at = signum, now
        if self.notice:
            os.write(2, f"\n{signal_name(signum)}: {self.notice}\n".encode())

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
