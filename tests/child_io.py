"""Reads from child processes that cannot hang a test: every read has a timeout, after
which the child is killed and the test fails."""

from __future__ import annotations

import queue
import subprocess
import threading


def read_line(process: subprocess.Popen, timeout: float = 120, stream: str = "stdout") -> str:
    """The next line of the child's `stream` (a pipe), waiting at most `timeout` seconds
    for all of it: a reader thread does the blocking read, so a child that writes half a
    line, or nothing, and never exits fails the test (AssertionError, the child killed)."""
    lines: queue.Queue[str] = queue.Queue()
    pipe = getattr(process, stream)
    threading.Thread(target=lambda: lines.put(pipe.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        process.kill()
        process.wait()
        raise AssertionError(f"no line on the {stream} of {process.args!r} in {timeout} s") \
            from None


def finish(process: subprocess.Popen, timeout: float = 300) -> tuple[str, str]:
    """The child's stdout and stderr once it has exited, waiting at most `timeout`
    seconds (AssertionError, the child killed, otherwise); both pipes are drained while
    it runs, so a child that writes much cannot block on a full pipe."""
    if process.stdin is not None and process.stdin.closed:
        process.stdin = None  # communicate would flush it
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"{process.args!r} still ran after {timeout} s\n"
                             f"stdout:\n{out}\nstderr:\n{err}") from None
