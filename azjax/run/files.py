"""Writing files so that a failure loses nothing: whole or not at all, outputs checked
before the work that produces them, and OS errors told in one line."""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
from pathlib import Path


def sha256_digest(path: str | os.PathLike) -> str:
    """A file's SHA-256, read a block at a time.

    Args:
      path: the file.

    Returns:
      Its hex digest.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def _check_writable(directory: Path, what: str) -> None:
    """ValueError unless a file can be created in `directory` (tried, then removed)."""
    probe = temporary_name(directory / "azjax-write-check")
    try:
        os.close(open_new(probe))
    except OSError as err:
        reason = err.strerror or os_error_text(err)
        raise ValueError(f"{what}: cannot write to {str(directory)!r} ({reason})") from None
    probe.unlink(missing_ok=True)


def _refuse_under_a_file(path: Path, places: tuple[Path, ...], what: str) -> None:
    """ValueError when the nearest existing of `places` (`path` or its ancestors, nearest
    first) is a file rather than a directory."""
    for place in places:
        if place.exists():
            if place.is_dir():
                return
            where = "is" if place == path else f"lies under {str(place)!r}, which is"
            raise ValueError(f"{what}: {str(path)!r} {where} a file, not a directory")


def check_output_dir(path: str | Path, what: str) -> Path:
    """`path` as a Path, checked before the work whose outputs go into it: a writable
    directory, or one that can be made (its nearest existing ancestor is a writable
    directory). ValueError naming `what` otherwise; nothing is created."""
    path = Path(path)
    _refuse_under_a_file(path, (path, *path.parents), what)
    existing = next(p for p in (path, *path.parents, Path(".")) if p.is_dir())
    _check_writable(existing, what)
    return path


def check_output_path(path: str | Path, what: str) -> Path:
    """`path` as a Path, checked before the work that produces the file: refuses
    (ValueError naming `what`) a directory, a path whose directory is missing or is a
    file, and a directory where no file can be created. Nothing is left behind."""
    if not str(path).strip():
        raise ValueError(f"{what}: the file name is empty")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{what}: {str(path)!r} is a directory; give a file name")
    _refuse_under_a_file(path, tuple(path.parents), what)
    directory = path.parent
    if not directory.is_dir():
        raise ValueError(f"{what}: the directory {str(directory)!r} of {str(path)!r} "
                         "does not exist")
    _check_writable(directory, what)
    return path
