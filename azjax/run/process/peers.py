"""A watch on the other processes of a run: a lost peer ends this process in one line.

A run of several processes steps in lockstep: when one dies (killed, crashed, its machine
gone), the others wait in a collective or fail inside one, and JAX's own coordination
service only notices after its heartbeat timeout, then aborts with a C++ stack trace.
`PeerWatch` keeps a heartbeat of its own through the coordination service's key-value
store: every process bumps a counter each `timeout / 10` seconds (at most 1 s), writes it
with its state and the counters it has read from the others, and reads theirs, all in one
write and one read. A peer whose counter has not moved for `timeout` seconds, or that said it
failed, is lost; so is the coordinator (process 0) when it cannot be reached for
`timeout` seconds. This process then prints one line that names the lost process and
how to resume, and exits at once with `EXIT_PEER_LOST` (its checkpoints are complete or
set aside by their manifests, so nothing checkpointed is lost). JAX's own heartbeat
timeout is set longer (`jax_heartbeat_timeout`), so that its abort never comes first.

When the coordinator itself dies, JAX's client in every other process learns it at once
and aborts the process; `azjax.run.process.guard` turns that abort into the same one line.

A process that finished (or stopped at a signal) says so, and is not waited for. A
process that failed says so too; when it is the coordinator, it waits until its peers
have read that and left, so that each tells its own failure, not a lost coordinator. A
process interrupted (Ctrl-C before training, a second signal) says that, and the others
end with it, whatever failed in them meanwhile (a collective it left).
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
from jax._src import distributed

HEARTBEAT_TIMEOUT_S = 30.0
"""Default seconds without a peer's heartbeat before the run is stopped."""

EXIT_PEER_LOST = 76
"""Exit status of a process whose run lost another process (EX_PROTOCOL: a remote
failure); every process's command, rerun, resumes from the newest checkpoint."""

_PREFIX = "azjax/peers"
_RUNNING, _FINISHED, _FAILED = "running", "finished", "failed"
_INTERRUPTED = "interrupted"


def jax_heartbeat_timeout(timeout: float) -> int:
    """The heartbeat timeout to give JAX's coordination service: long enough that the
    watch always speaks first."""
    return int(2 * timeout + 30)


class PeerWatch:
    """Watches the other processes of a run through `client` (JAX's distributed
    runtime client); see the module's docstring.

    `start` runs the two rounds, `beat_once` and `check_once`, each in a thread of its
    own. `clock` (seconds) and `sleep` are the time the verdicts and the waits of
    `settle` and `leave` go by: a test gives its own and drives the rounds itself, so
    that no verdict depends on how the threads are scheduled."""

    def __init__(self, client: Any, process_id: int, num_processes: int, timeout: float,
                 coordinator: str = "", clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if timeout <= 0:
            raise ValueError(f"--heartbeat-timeout must be > 0 seconds, got {timeout}")
        self.client, self.process_id, self.num = client, process_id, num_processes
        self.timeout, self.coordinator = float(timeout), coordinator
        self.interval = min(1.0, self.timeout / 10)
        self.resume_hint = "rerun every process's command to resume from the newest checkpoint"
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._beats = 0
        self.peers = [p for p in range(num_processes) if p != process_id]
        now = clock()
        # peer -> (its counter, when it moved)
        self._seen: dict[int, tuple[int, float]] = {p: (0, now) for p in self.peers}
        self._said: dict[int, str] = {}  # peer -> its state
        self._echo: dict[int, int] = {}  # peer -> the newest of our counters it has read
        self._contact = now
        self._state = _RUNNING
        self._settling = False
        self._stop = threading.Event()
        self._ending = threading.Lock()

    def start(self) -> PeerWatch:
        """Starts the heartbeat and the check (daemon threads)."""
        now = self._clock()
        self._seen = {p: (0, now) for p in self.peers}
        self._contact = now
        for target, name in ((self._beat, "azjax-heartbeat"), (self._check, "azjax-peer-watch")):
            threading.Thread(target=target, name=name, daemon=True).start()
        return self

    def _record(self) -> str:
        """What this process says each round: its counter, its state, and the newest
        counter it has read from every process (its echo: proof that it read them)."""
        with self._lock:
            seen = [self._beats if p == self.process_id else self._seen.get(p, (0, 0.0))[0]
                    for p in range(self.num)]
            return f"{self._beats}|{self._state}|{','.join(map(str, seen))}"

    @staticmethod
    def _parse(key: str, value: str) -> tuple[int, int, str, list[int]]:
        """A record as `_record` writes it: (its process, counter, state, echoes)."""
        beat, state, seen = value.split("|")
        return int(key.rsplit("/", 1)[-1]), int(beat), state, [int(s) for s in seen.split(",")]

    def _write(self) -> None:
        self.client.key_value_set(f"{_PREFIX}/{self.process_id}", self._record(),
                                  allow_overwrite=True)

    def _beat(self) -> None:
        """The heartbeat thread: `beat_once` every `interval` seconds."""
        while not self._stop.is_set():
            self.beat_once()
            self._stop.wait(self.interval)

    def beat_once(self) -> None:
        """One round of the heartbeat: bumps this process's counter, writes its record,
        and reads every record in one call (the RPCs: they may block, so the verdict is
        `check_once`'s). A round without contact changes nothing but the counter."""
        try:
            with self._lock:
                self._beats += 1
            self._write()
            now = self._clock()
            records = self.client.key_value_dir_get(_PREFIX + "/")
            with self._lock:
                self._contact = now
                for key, value in records:
                    peer, beat, state, seen = self._parse(key, value)
                    if peer == self.process_id or peer not in self._seen:
                        continue
                    if beat != self._seen[peer][0]:
                        self._seen[peer] = (beat, now)
                    self._said[peer] = state
                    self._echo[peer] = seen[self.process_id]
        except Exception:  # noqa: BLE001 - no contact this round; `check_once` counts it
            pass

    def verdict(self) -> str | None:
        """Why the run lost a process (None while every peer is alive or finished)."""
        now = self._clock()
        with self._lock:
            if self._state != _RUNNING:
                return None
            if self.process_id != 0 and now - self._contact > self.timeout:
                where = f" at {self.coordinator}" if self.coordinator else ""
                return (f"lost process 0 of {self.num}, the coordinator{where}: not reachable "
                        f"for {self.timeout:g} s (killed, crashed or cut off)")
            for peer in self.peers:
                state = self._said.get(peer)
                if state == _FINISHED:
                    continue
                if state == _FAILED:
                    if self._settling:
                        continue
                    return f"lost process {peer} of {self.num}: it failed (see its output)"
                if state == _INTERRUPTED:  # even while settling: it caused what failed here
                    return f"lost process {peer} of {self.num}: it was interrupted"
                if now - self._seen[peer][1] > self.timeout:
                    return (f"lost process {peer} of {self.num}: no heartbeat for "
                            f"{self.timeout:g} s (killed, crashed or cut off)")
        return None

    def _check(self) -> None:
        """The check thread: `check_once` every `interval` seconds."""
        while not self._stop.wait(self.interval):
            self.check_once()

    def check_once(self) -> None:
        """One round of the check: ends the process (`_end`) when the run lost a peer."""
        why = self.verdict()
        if why is not None:
            self._end(why)

    def _end(self, why: str) -> None:
        """Says why, with how to resume, and exits at once (no atexit: JAX's shutdown
        would wait for the lost process)."""
        if not self._ending.acquire(blocking=False):  # the other thread is ending it
            threading.Event().wait()
        try:
            sys.stdout.flush()
            print(f"error: {why}; {self.resume_hint}", file=sys.stderr, flush=True)
        finally:
            os._exit(EXIT_PEER_LOST)

    def settle(self) -> None:
        """After this process failed (inside a collective, perhaps): waits until every
        peer has read a counter this process wrote since (so it was alive after the
        failure), and returns, so that the failure is reported as it is; or until the
        check finds a peer lost, which ends the process with that instead. A peer that
        failed too is no reason to end: each tells its own."""
        with self._lock:
            self._settling = True
            sent = self._beats  # a peer that echoes a later counter read it after now
        while True:
            why = self.verdict()
            if why is not None:
                self._end(why)
            with self._lock:
                alive = all(self._said.get(p) in (_FINISHED, _FAILED)
                            or self._echo.get(p, 0) > sent for p in self.peers)
            if alive:
                return
            self._sleep(self.interval / 2)

    def leave(self, ok: bool, interrupted: bool = False) -> None:
        """Says this process finished (`ok`), or failed or was `interrupted` (Ctrl-C: the
        others stop at once, whatever failed in them since), and stops watching. The
        coordinator, failing, then outlasts its peers (`_outlast_peers`)."""
        with self._lock:
            self._state = _FINISHED if ok else _INTERRUPTED if interrupted else _FAILED
        self._stop.set()
        try:
            self._write()
        except Exception:  # noqa: BLE001 - the coordinator may be gone; nothing to tell
            return
        if not ok and self.process_id == 0:
            self._outlast_peers()

    def _outlast_peers(self) -> None:
        """Waits (at most `timeout` seconds) until every peer has said it finished or
        failed, or has stopped beating (it ended on reading this failure): the
        coordination service goes with process 0, and a peer that saw it go first would
        say that it lost the coordinator instead of telling its own failure."""
        now = self._clock()
        deadline, quiet = now + self.timeout, 3 * self.interval
        with self._lock:
            last = {p: (self._seen.get(p, (0, now))[0], now) for p in self.peers}
        waiting = set(self.peers)
        while waiting and self._clock() < deadline:
            try:
                records = self.client.key_value_dir_get(_PREFIX + "/")
            except Exception:  # noqa: BLE001 - no service to outlast
                return
            now = self._clock()
            for key, value in records:
                peer, beat, state, _ = self._parse(key, value)
                if peer not in waiting:
                    continue
                if state != _RUNNING:
                    waiting.discard(peer)
                elif beat != last[peer][0]:
                    last[peer] = (beat, now)
            waiting = {p for p in waiting if now - last[p][1] <= quiet}
            self._sleep(self.interval / 2)


_WATCH: PeerWatch | None = None


def initialize(coordinator_address: str, num_processes: int, process_id: int,
               timeout: float) -> None:
    """`jax.distributed.initialize`, and (`timeout` > 0) a watch on the other processes:
    one line and `EXIT_PEER_LOST` when one is lost, before JAX's own abort."""
    longer = {"heartbeat_timeout_seconds": jax_heartbeat_timeout(timeout)} if timeout else {}
    if process_id == 0:
        _check_port_free(coordinator_address)
    try:
        jax.distributed.initialize(coordinator_address, num_processes=num_processes,
                                   process_id=process_id, **longer)
    except jax.errors.JaxRuntimeError as err:
        if process_id == 0 and "Failed to start RPC server" in str(err):
            raise ValueError(_taken_message(coordinator_address)) from None
        raise
    if timeout:
        watch(distributed.global_state.client, process_id, num_processes, timeout,
              coordinator_address)


def _taken_message(address: str) -> str:
    return (f"cannot start the coordinator at {address}: the port is taken or the address "
            "is not this machine's (choose another --coordinator-address)")


def _check_port_free(address: str) -> None:
    """ValueError if the coordinator's port cannot be bound here: JAX's own attempt
    sometimes crashes the process (a segmentation fault) instead of raising."""
    port = address.rpartition(":")[2]
    if not port.isdigit():
        return  # jax.distributed says what is wrong with the address
    for family, host in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 here
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, int(port)))
            except OSError as err:
                if err.errno == errno.EADDRINUSE:
                    raise ValueError(_taken_message(address)) from None
                continue  # no such address family here: try the next
        return


def watch(client: Any, process_id: int, num_processes: int, timeout: float,
          coordinator: str = "") -> PeerWatch:
    """Starts this process's watch on its peers (once)."""
    global _WATCH
    if _WATCH is None:
        _WATCH = PeerWatch(client, process_id, num_processes, timeout, coordinator).start()
    return _WATCH


def current() -> PeerWatch | None:
    """This process's watch, or None (one process, or a watch turned off)."""
    return _WATCH
