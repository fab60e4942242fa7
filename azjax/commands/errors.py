"""What every command line of azjax shares: one-line errors, seeds checked, and the exit
of a script. Outputs are checked before the work and written atomically with
`azjax.run.files` (`check_output_path`, `write_atomic`):

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
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import jax

from azjax.run.files import os_error_text

EXIT_ERROR = 2


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
    end, so the garbage collector never walks JAX's, Flax's and matplotlib's modules,
    which never become garbage (docs/results.md#what-took-time-off)."""
    gc.freeze()
    try:
        code = main(*args, **kwargs)
    finally:
        gc.freeze()
    sys.exit(code)


