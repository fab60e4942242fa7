"""Commands run in the test's own process, as their command lines run them: no child
process to start (2-2.5 s of importing JAX each) and no program compiled again that this
process has compiled already.

`command(main, *args)` runs `azjax.commands.errors.run_script(main, *args)`, which is
what each `python -m azjax.X` does (`if __name__ == "__main__": run_script(main)`), and
`script(path, *argv)` runs an experiment script's own `__main__` block with `sys.argv`
set. Both give what `subprocess.run(..., capture_output=True, text=True)` gives: a
`CompletedProcess` with the exit status and what was printed on stdout and stderr, and
take the standard input as text or bytes.

What only a real process shows (its exit status as the shell sees it, signals, output
from outside Python, resource limits) is left to the tests that start one.
"""

from __future__ import annotations

import contextlib
import gc
import io
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

from azjax.commands.errors import run_script

ROOT = Path(__file__).resolve().parents[1]


def _exit_status(code: object) -> int:
    """The status a process would exit with after `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits with 1
    return 1


def _run(body: Callable[[], object], args: list[str], stdin: str | bytes) -> CompletedProcess:
    """Runs `body` (which ends in SystemExit, as a script does) with `stdin` as its standard
    input and its stdout and stderr captured."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    code: object = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                body()
                raise AssertionError(f"{args!r} returned instead of exiting")
            except SystemExit as ended:
                code = _exit_status(ended.code)
    finally:
        sys.stdin = saved_stdin
        gc.unfreeze()  # run_script froze this process's objects; let the collector have them
    return CompletedProcess(args, code, out.getvalue(), err.getvalue())


def command(main: Callable[..., int], *args: object, stdin: str | bytes = ""
            ) -> CompletedProcess:
    """`run_script(main, *args)` (a command line's `__main__`), its status and output; a
    list of arguments is passed as `main`'s argv, so `command(arena.main, [...])`."""
    return _run(lambda: run_script(main, *args), [getattr(main, "__module__", "?"), *args],
                stdin)


def script(path: str | Path, *argv: str | Path, stdin: str | bytes = "") -> CompletedProcess:
    """`python PATH ARGV`, its status and output: the script's own `__main__` block run by
    `runpy` with `sys.argv` set and the script's directory first on `sys.path`, as Python
    puts it (both as they were afterwards)."""
    argv = [str(a) for a in argv]
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(Path(path).resolve().parent))
    try:
        return _run(lambda: runpy.run_path(str(path), run_name="__main__"), sys.argv[:],
                    stdin)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def experiment(name: str, *argv: str | Path, stdin: str | bytes = "") -> CompletedProcess:
    """`python experiments/NAME.py ARGV` in this process (`script`)."""
    return script(ROOT / "experiments" / f"{name}.py", *argv, stdin=stdin)
