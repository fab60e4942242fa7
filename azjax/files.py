"""Writing files so that a failure loses nothing: whole or not at all, and OS errors told
in one line."""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path


def error_line(err: BaseException, limit: int = 200) -> str:
    """Any error as one short line: an OS error by `os_error_text`, another by the first
    line of its message (at most `limit` characters), or by its type."""
    if isinstance(err, OSError):
        return os_error_text(err)
    lines = str(err).strip().splitlines()
    return lines[0][:limit] if lines else type(err).__name__


def os_error_text(err: OSError) -> str:
    """An OS error as one line, `PATH: reason` (the reason alone when it names no path)."""
    reason = err.strerror or (errno.errorcode.get(err.errno, "") if err.errno else "") or str(err)
    paths = " -> ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
    return " ".join((f"{paths}: {reason}" if paths else reason).split())


def open_new(path: Path) -> int:
    """Creates `path`, which must not exist, for writing (mode 0o666 less the umask)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


def temporary_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Writes `data` (str as UTF-8) to `path` whole or not at all: into a temporary file
    in the same directory, synced, then renamed over `path`. On any failure (a full disk,
    a directory at `path`, an interrupt) the temporary file is removed, `path` keeps its
    old contents and the error propagates (an OSError naming `path`). Returns `path`."""
    path = Path(path)
    data = data.encode() if isinstance(data, str) else data
    temporary = temporary_name(path)
    try:
        fd = open_new(temporary)
    except OSError as err:
        raise _about(err, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException as err:
        temporary.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _about(err, path) from None
        raise
    return path


def _about(err: OSError, path: Path) -> OSError:
    """`err` naming `path` instead of the temporary file (same errno, so same subclass)."""
    if err.errno is None:
        return err
    return OSError(err.errno, err.strerror or os.strerror(err.errno), str(path))
