"""One writer per run directory: an OS file lock that dies with its holder."""

from __future__ import annotations

import os
from pathlib import Path

from azjax.run.directory.layout import LOCK_FILE, RunDirError, cannot_write

try:
    import fcntl
except ImportError:  # not a POSIX system
    fcntl = None


class RunLock:
    """One writer per run directory: an exclusive OS file lock on the run's lock file,
    held until `release` (or until the process dies). Holds the holder's PID for the
    message a second writer gets. `RunDir.lock()` takes it."""

    def __init__(self, run_path: Path):
        self.run_path = Path(run_path)
        self.path = self.run_path / LOCK_FILE
        self._file = None

    def acquire(self) -> RunLock:
        """Takes the lock.

        Returns:
          This lock, held.

        Raises:
          RunDirError: naming the holder when another process has it, or for a lock file
            that cannot be written.
        """
        if fcntl is None:  # no POSIX locks on this platform: one writer is on the user
            return self
        try:
            handle = open(self.path, "a+")  # noqa: SIM115 - held open: it is the lock
        except OSError as err:
            raise cannot_write(self.run_path, err) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise RunDirError(
                f"{str(self.run_path)!r} is in use by another process (PID {holder}); "
                "wait for it to finish or stop it, or use another --run-dir") from None
        self._file = handle
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
        except OSError as err:
            self.release()
            raise cannot_write(self.run_path, err) from None
        return self

    def release(self) -> None:
        """Releases the lock (the lock file stays; it is empty of meaning unlocked)."""
        if self._file is not None:
            self._file.close()
            self._file = None
