"""A guard for each process of a run of several: JAX's aborts become one line.

When process 0, the coordinator, dies, JAX's client in every other process learns it at
once and aborts its process from a C++ thread (SIGABRT, with a stack trace of some 40
lines) before Python can act. `guard` forks the process before JAX starts: the child
trains, with what native code writes to its stderr piped through the parent, which holds
back the lines of such an abort and, when the child dies of one, prints one line naming
the lost process and how to resume, and exits with `EXIT_PEER_LOST`. Python's own stderr
(messages, warnings, tracebacks) goes around the pipe, and held lines that were not an
abort are printed when the child ends otherwise: nothing else is held back or dropped.
Signals sent to the guard reach the child (`azjax.run.process.stop_signals` takes a repeat
within a second as the same one, since a scheduler, or a terminal's Ctrl-C, may signal
both); the child dies with the guard (Linux's parent-death signal).
Set `AZJAX_FAULT_DETAILS=1` to see what JAX printed as well.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys
from collections.abc import Iterator
from typing import BinaryIO, NoReturn

from azjax.run.process.peers import EXIT_PEER_LOST

FAULT_DETAILS = "AZJAX_FAULT_DETAILS"
_FATAL = "Terminating process because the JAX distributed service detected fatal errors"
_NATIVE_LOG = re.compile(rb"^[EFW]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+\] ")
_STACK = re.compile(rb"^(\*\*\* Check failure stack trace|\s+@\s+0x)")
_PR_SET_PDEATHSIG = 1


def guard(num_processes: int, coordinator: str, resume_hint: str) -> None:
    """Splits this process (call it before anything starts JAX's backend): returns in
    the child, which goes on; the parent guards the child and exits with its status
    (`EXIT_PEER_LOST` where JAX aborted it for a lost process). Does nothing where
    processes cannot fork."""
    if not hasattr(os, "fork"):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(read)
        python_stderr = os.dup(2)
        os.dup2(write, 2)
        os.close(write)
        _python_stderr_to(python_stderr)
        _die_with(parent)
        return
    os.close(write)
    _watch_child(child, read, num_processes, coordinator, resume_hint)


def _python_stderr_to(fd: int) -> None:
    """Points `sys.stderr` at `fd`, so that only native code's writes to fd 2 reach the
    guard."""
    encoding, errors = getattr(sys.stderr, "encoding", None), getattr(sys.stderr, "errors", None)
    # Open for the rest of the process's life, as the stderr it replaces.
    sys.stderr = open(fd, "w", buffering=1, encoding=encoding,  # noqa: SIM115
                      errors=errors or "backslashreplace")


def _die_with(parent: int) -> None:
    """Has the kernel kill this process when its parent dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the call
        os._exit(1)


def _watch_child(child: int, read: int, num_processes: int, coordinator: str,
                 resume_hint: str) -> NoReturn:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _f: os.kill(child, s))
    details = os.environ.get(FAULT_DETAILS, "") not in ("", "0")
    held: list[bytes] = []
    with os.fdopen(read, "rb", buffering=0) as pipe:
        for lines in _reads(pipe):
            shown = lines if details else _hold_faults(lines, held)
            if shown:
                os.write(2, b"".join(shown))
    status = _wait(child)
    text = b"".join(held).decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code < 0 and _FATAL in text:
        sys.stdout.flush()
        os.write(2, f"error: {lost_process(text, num_processes, coordinator)}; "
                    f"{resume_hint}\n".encode())
        os._exit(EXIT_PEER_LOST)
    for line in held:
        os.write(2, line)
    os._exit(code if code >= 0 else 128 - code)


def _reads(pipe: BinaryIO) -> Iterator[list[bytes]]:
    """The pipe's lines as they come, those completed by each read together (the last
    one maybe without a newline)."""
    buffer = b""
    while True:
        try:
            chunk = pipe.read(65536)
        except InterruptedError:
            continue
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        yield [line + b"\n" for line in complete]
    if buffer:
        yield [buffer]


def _hold_faults(lines: list[bytes], held: list[bytes]) -> list[bytes]:
    """Of the lines of one read, those to show now; the lines of a native fault go to
    `held` instead, with the lines that follow one in the same read (the rest of its
    message: a native log message is one write), up to a native log line of another
    kind."""
    shown: list[bytes] = []
    following = False
    for line in lines:
        following = _is_native_fault(line) or (following and not _NATIVE_LOG.match(line))
        (held if following else shown).append(line)
    return shown


def _wait(child: int) -> int:
    while True:
        try:
            return os.waitpid(child, 0)[1]
        except InterruptedError:
            continue


def _is_native_fault(line: bytes) -> bool:
    """Whether a line starts what JAX's runtime prints when it aborts for a lost process."""
    return bool((_NATIVE_LOG.match(line) and (b"coordination" in line or b"client.h" in line))
                or _STACK.match(line))


def lost_process(text: str, num_processes: int, coordinator: str) -> str:
    """What JAX's abort `text` says was lost, in our words."""
    dead = re.search(r"stopped sending heartbeats\):\s*([\d,\s]+)", text)
    if dead:
        names = ", ".join(n for n in re.split(r"[,\s]+", dead.group(1)) if n)
        return f"lost process {names} of {num_processes}: no heartbeat (killed, crashed or cut off)"
    if "coordination service" in text and ("RPC" in text or "leader" in text):
        where = f" at {coordinator}" if coordinator else ""
        return (f"lost process 0 of {num_processes}, the coordinator{where}: its coordination "
                "service is gone (killed, crashed or cut off)")
    first = next((line for line in text.splitlines() if _FATAL in line), _FATAL)
    return f"JAX's coordination service stopped the run ({first.split('] ', 1)[-1][:200]})"
