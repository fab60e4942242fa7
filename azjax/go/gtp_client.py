"""Talking to a Go engine over GTP version 2: a child process, one command at a time.

    with GtpProcess(gnugo_command(level=1)) as engine:
        engine.send("boardsize 9")
        engine.send_all(["clear_board", "komi 7.5", "play black D5"])
        move = engine.send("genmove white")      # e.g. "E5", "PASS", "resign"

A reply `= text` returns `text`; a reply `? message` raises `GtpError(message)`; an engine
that exits (its exit status or signal is named), closes its output, stays silent past
`timeout` or answers what is not a GTP reply raises `EngineDied` with the tail of its
stderr, and is killed rather than asked to quit when closed. An engine whose start or
close is cut short (Ctrl-C) is killed: it runs in a session of its own, which the
terminal's Ctrl-C does not reach. GNU Go is found by `find_gnugo` (`$AZJAX_GNUGO` if set,
else PATH, then Debian's `/usr/games`), which says how to install it when it is missing.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence

from azjax.run.grammar.specs import PlayerFailed

GNUGO_LOCATIONS = ("/usr/games/gnugo", "/usr/local/games/gnugo")
GNUGO_ENV = "AZJAX_GNUGO"
"""An environment variable naming the GNU Go executable to use (a path, or a name looked
up on PATH); unset or empty: `gnugo` on PATH, then `GNUGO_LOCATIONS`."""
INSTALL_GNUGO = ("install it with 'apt-get install gnugo' (Debian, Ubuntu; it goes to "
                 "/usr/games/gnugo) or 'brew install gnu-go' (macOS)")
GNUGO_LEVELS = (0, 10)
"""GNU Go's `--level` range (10 is its default, 0 its weakest and fastest)."""


class GtpError(RuntimeError):
    """The engine answered `? message` (the message is the error's text)."""


class EngineDied(RuntimeError):
    """The engine exited, closed its output, or did not answer in time."""


class GnuGoMissing(FileNotFoundError):
    """GNU Go is not installed."""


class GnuGoFailed(PlayerFailed):
    """GNU Go failed a move: one line naming the player, the game (once the match that
    plays it adds it, `in_game`) and move, and what GNU Go did. `batch_index`: where the
    failed game is in the batch the player was given."""


def find_gnugo() -> str:
    """The path of the `gnugo` executable: `$AZJAX_GNUGO` if set, else `gnugo` on PATH,
    then in /usr/games (GnuGoMissing, naming what was looked for and how to install GNU
    Go, if there is none).

    Returns:
      The executable's path.

    Raises:
      GnuGoMissing: GNU Go is not found.
    """
    chosen = os.environ.get(GNUGO_ENV, "").strip()
    if chosen:
        found = shutil.which(chosen)
        if found:
            return found
        raise GnuGoMissing(
            f"GNU Go not found: ${GNUGO_ENV} names {chosen!r}, which is not an executable "
            f"file; {INSTALL_GNUGO}, or set ${GNUGO_ENV} to its path")
    found = shutil.which("gnugo")
    if found:
        return found
    for path in GNUGO_LOCATIONS:
        if os.access(path, os.X_OK):
            return path
    raise GnuGoMissing(
        "GNU Go is not installed (no 'gnugo' on PATH or in /usr/games): "
        f"{INSTALL_GNUGO}, or set ${GNUGO_ENV} to its path")


def gnugo_command(level: int = 10, seed: int = 0, executable: str | None = None) -> list[str]:
    """The command line of GNU Go as a GTP engine at `level` (0-10), scoring by area
    (Chinese rules) and capturing every dead stone before it passes, so that a finished
    game's board counts correctly under Tromp-Taylor rules.

    Args:
      level: GNU Go's strength, 0-10.
      seed: GNU Go's random seed.
      executable: the `gnugo` path (None: `find_gnugo()`).

    Returns:
      The command and its arguments.

    Raises:
      ValueError: `level` is not an integer in 0-10.
      GnuGoMissing: no executable was given and GNU Go is not found.
    """
    low, high = GNUGO_LEVELS
    if isinstance(level, bool) or not isinstance(level, int) or not low <= level <= high:
        raise ValueError(f"GNU Go's level must be an integer from {low} to {high}, got {level!r}")
    return [executable or find_gnugo(), "--mode", "gtp", "--chinese-rules",
            "--capture-all-dead", "--level", str(level), "--seed", str(int(seed))]


class GtpProcess:
    """A GTP engine running as a child process.

    Args:
      command: the engine's command line (e.g. `gnugo_command(1)`).
      timeout: seconds to wait for one reply before `EngineDied`.
      name: what the engine is called in errors (`NAME ('program')`).

    After an `EngineDied` the engine is `broken`: `close` kills it.
    """

    def __init__(self, command: Sequence[str], timeout: float = 120.0,
                 name: str = "GTP engine"):
        self.command = list(command)
        self.timeout = timeout
        self.name = name
        self.broken = False
        try:
            # A session of its own: a terminal's Ctrl-C (or Jupyter's Interrupt, sent to
            # the kernel's process group) reaches only this process, which stops the
            # engine itself; the engine ends when this process does (its input closes).
            self._process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, bufsize=1, start_new_session=True)
        except OSError as err:
            raise EngineDied(f"cannot start {self.command[0]!r}: {err.strerror or err}") from None
        try:
            self._lines: queue.Queue[str | None] = queue.Queue()
            self._stderr: list[str] = []
            threading.Thread(target=self._read, args=(self._process.stdout, self._lines.put),
                             daemon=True).start()
            threading.Thread(target=self._read, args=(self._process.stderr,
                                                      self._keep_stderr), daemon=True).start()
        except BaseException:  # Ctrl-C too: the engine's own session never gets it
            self._kill()
            raise

    @staticmethod
    def _read(stream, put) -> None:
        for line in stream:
            put(line)
        put(None)

    def _keep_stderr(self, line: str | None) -> None:
        if line is not None:
            self._stderr = (self._stderr + [line.rstrip("\n")])[-20:]

    def _died(self, why: str) -> EngineDied:
        self.broken = True
        tail = " | ".join(line for line in self._stderr if line.strip())
        return EngineDied(f"{self.name} ({self.command[0]!r}) {why}"
                          + (f": {tail}" if tail else ""))

    def _exited(self) -> str:
        """How the process ended: its exit status or signal (waiting a second for it)."""
        try:
            code = self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "closed its output"
        if code < 0:
            try:
                return f"was killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with status {code}"

    def _write(self, commands: Sequence[str]) -> None:
        for command in commands:
            if "\n" in command or not command.strip():
                raise ValueError(f"a GTP command is one non-empty line, got {command!r}")
        try:
            self._process.stdin.write("".join(c + "\n" for c in commands))
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise self._died(self._exited()) from None

    def _reply(self, command: str) -> str:
        lines: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=self.timeout)
            except queue.Empty:
                raise self._died(f"did not answer {command!r} in {self.timeout:g} s") from None
            if line is None:
                self._lines.put(None)  # every later read sees the end too, at once
                raise self._died(f"{self._exited()} while answering {command!r}")
            line = line.rstrip("\r\n")
            if not lines and not line.strip():
                continue  # blank lines before a reply
            if lines and not line.strip():
                break
            lines.append(line)
        head, body = lines[0], "\n".join(lines[1:])
        if head[:1] not in ("=", "?"):
            raise self._died(f"answered {command!r} with {head!r}, not a GTP reply")
        text = head[1:].lstrip("0123456789").strip()
        text = f"{text}\n{body}" if body else text
        if head[0] == "?":
            raise GtpError(text or f"{command!r} failed")
        return text

    def send(self, command: str) -> str:
        """Sends one command; returns the reply's text (GtpError for `? ...`).

        Args:
          command: one GTP command line, without the newline.

        Returns:
          The reply's text, without `=`, id and the closing blank line.

        Raises:
          GtpError: the engine answered `? ...`.
          EngineDied: the engine exited or did not answer within `timeout`.
          ValueError: `command` is empty or holds a newline.
        """
        self._write([command])
        return self._reply(command)

    def send_all(self, commands: Sequence[str]) -> list[str]:
        """Sends commands in one write and reads their replies in order (the first `?`
        reply raises GtpError once every reply has been read).

        Args:
          commands: GTP command lines, without newlines.

        Returns:
          One reply text per command, in order.

        Raises:
          GtpError: a command was answered `? ...`, naming the first such command.
          EngineDied: the engine exited or did not answer within `timeout`.
          ValueError: a command is empty or holds a newline.
        """
        self._write(commands)
        replies: list[str] = []
        error: GtpError | None = None
        for command in commands:
            try:
                replies.append(self._reply(command))
            except GtpError as err:
                error = error or GtpError(f"{command!r}: {err}")
                replies.append("")
        if error is not None:
            raise error
        return replies

    @property
    def alive(self) -> bool:
        """Whether the process is still running."""
        return self._process.poll() is None

    def _kill(self) -> None:
        """Kills the process (if it still runs), waits for it and closes its pipes."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            try:
                stream.close()
            except OSError:
                pass

    def close(self) -> None:
        """Asks the engine to quit; kills it if it has not exited after a few seconds, at
        once if it is `broken`, and whatever cuts the close short (Ctrl-C)."""
        try:
            if self.alive and not self.broken:
                try:
                    self._write(["quit"])
                    self._reply("quit")
                except (EngineDied, GtpError):
                    pass
            try:
                self._process.wait(timeout=0 if self.broken else 5)
            except subprocess.TimeoutExpired:
                pass
        finally:
            self._kill()

    def __enter__(self) -> "GtpProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
