"""What every command line of azjax shares: one-line errors, outputs checked before the
work, and atomic writes.

    @one_line_errors
    def main(argv=None) -> int:
        args = parser.parse_args(argv)
        out = check_output_path(args.json, "--json")   # before the work, not after
        result = expensive_work()
        print(result)                                  # the result first...
        write_atomic(out, json.dumps(result))          # ...then the file
        return 0

`one_line_errors` turns the failures a user can cause or meet (a bad value, a missing or
unwritable path, a full disk, a damaged run, memory) into `error: ...` on stderr and exit
status 2; a KeyboardInterrupt and programming errors pass through untouched.
"""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import jax

from azjax import files
from azjax.files import os_error_text, write_atomic  # noqa: F401 - write_atomic re-exported

EXIT_ERROR = 2
MAX_SEED = 2**63 - 1  # JAX keys take a signed 64-bit seed; NumPy's generators no negative


def is_user_error(err: BaseException) -> bool:
    """Whether `err` is a failure to report in one line rather than a bug: a ValueError
    (RunDirError, AgentFileError, tensorstore's errors included), an OSError, an
    OverflowError (a number too large for the library), MemoryError, or the device
    running out of memory."""
    if isinstance(err, (ValueError, OSError, OverflowError, MemoryError)):
        return True
    return isinstance(err, jax.errors.JaxRuntimeError) and "RESOURCE_EXHAUSTED" in str(err)


def error_text(err: BaseException) -> str:
    """`err` as one line: an OSError as `PATH: reason`, anything else by its message."""
    if isinstance(err, OSError) and (err.strerror or err.errno):
        text = os_error_text(err)
    elif isinstance(err, MemoryError):
        text = f"out of memory{': ' + str(err) if str(err) else ''}"
    else:
        text = str(err) or type(err).__name__
    return " ".join(text.split())


def report_error(err: BaseException) -> int:
    """Prints `error: <err as one line>` on stderr (after flushing stdout, so that a result
    printed before stays before it); returns the exit status, 2."""
    sys.stdout.flush()
    print(f"error: {error_text(err)}", file=sys.stderr, flush=True)
    return EXIT_ERROR


def one_line_errors(main: Callable[..., int]) -> Callable[..., int]:
    """Decorates a command line's `main`: a user error (`is_user_error`) becomes one
    `error: ...` line on stderr and the return value 2; anything else propagates."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except Exception as err:
            if not is_user_error(err):
                raise
            return report_error(err)

    return wrapped


def run_script(main: Callable[..., int], *args: Any, **kwargs: Any) -> NoReturn:
    """Runs a command line's `main(*args, **kwargs)` as a script and exits with its code.
    The objects the imports made are frozen first (`gc.freeze`) and all of them at the
    end, so the garbage collector never walks JAX's, Flax's and matplotlib's modules:
    about 0.3 s of a short training run, and 0.4 s at exit."""
    gc.freeze()
    try:
        code = main(*args, **kwargs)
    finally:
        gc.freeze()
    sys.exit(code)


def check_seed(seed: int, what: str = "--seed") -> int:
    """`seed`, or a ValueError when it is not an integer from 0 to 2**63 - 1."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"{what} must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    return seed


def _check_writable(directory: Path, what: str) -> None:
    """ValueError unless a file can be created in `directory` (tried, then removed)."""
    probe = files.temporary_name(directory / "azjax-write-check")
    try:
        os.close(files.open_new(probe))
    except OSError as err:
        reason = err.strerror or error_text(err)
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
