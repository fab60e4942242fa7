"""Faults a run survives, checked in one process: SIGTERM and Ctrl-C stop training after
the iteration with a checkpoint that resumes exactly; a second signal ends the process
at once; the watch on a run's other processes and the guard's reading of JAX's aborts.
Runs of two processes killed and signalled: tests/test_faults.py (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from test_devices import same_leaves
from test_training import ROOT, SMALL

from azjax import train
from azjax.driver import train_group
from azjax.run import EXIT_STOPPED, Stopped
from azjax.run.checkpoint import checkpoint_steps, read_metrics
from azjax.run.checkpoint_files import step_dir, verify
from azjax.run.guard import _is_native_fault, lost_process
from azjax.run.peers import EXIT_PEER_LOST, PeerWatch
from azjax.run.stop_signals import StopSignals

# Iteration 4 is no checkpoint of its own: only the stop writes one there.
STOPPABLE = SMALL.replace(iterations=7, checkpoint_every=5, eval_every=2)


@pytest.fixture(scope="module")
def straight():
    """The run trained without a stop."""
    return train(STOPPABLE, run_dir=None, progress=None).train_state


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_after_the_iteration_with_a_checkpoint_that_resumes_exactly(
        tmp_path, straight, signum):
    run_dir = tmp_path / "run"
    before = signal.getsignal(signum)

    def signal_at_three(iterations):
        if iterations == [3]:
            os.kill(os.getpid(), signum)

    with pytest.raises(Stopped) as stopped:
        train_group([STOPPABLE], [run_dir], progress=None, on_iteration=signal_at_three)
    assert isinstance(stopped.value, KeyboardInterrupt)
    assert stopped.value.signum == signum and stopped.value.iterations == [4]
    assert stopped.value.message() == (
        f"stopped by {signal.Signals(signum).name} after iteration 4, with a checkpoint in "
        f"{run_dir}; rerun the same command to resume")
    assert signal.getsignal(signum) is before  # the handlers are put back
    assert checkpoint_steps(run_dir)[0] == 4
    assert [r["iteration"] for r in read_metrics(run_dir)][-1] == 4

    messages = []
    resumed = train(STOPPABLE, run_dir, progress=messages.append)
    assert any("resumed" in m and "iteration 4" in m for m in messages)
    assert int(resumed.train_state.iteration) == 7
    assert same_leaves(resumed.train_state, straight)


SECOND_SIGNAL = """
import os, signal, time
from azjax.run.stop_signals import StopSignals
with StopSignals() as stop:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)  # within a second: the first one's echo
    time.sleep(0.05)
    print("received", stop.received, flush=True)
    time.sleep(1.5)
    os.kill(os.getpid(), signal.SIGTERM)  # a second signal
    time.sleep(30)
print("still here", flush=True)
"""


def test_a_second_signal_ends_the_process_at_once():
    done = subprocess.run([sys.executable, "-c", SECOND_SIGNAL], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.stdout.splitlines() == [f"received {int(signal.SIGTERM)}"], done.stderr
    assert done.returncode == -signal.SIGTERM


def test_signals_are_left_alone_outside_the_main_thread():
    before = signal.getsignal(signal.SIGTERM)
    seen = []

    def enter():
        with StopSignals() as stop:
            seen.append(signal.getsignal(signal.SIGTERM))
            seen.append(stop.received)

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert seen == [before, 0]


def test_the_docs_give_the_exit_statuses_the_scripts_use():
    table = (ROOT / "docs" / "trust.md").read_text()
    assert f"| {EXIT_STOPPED} | stopped by SIGTERM or Ctrl-C after saving a checkpoint" in table
    assert f"| {EXIT_PEER_LOST} | another process of the run was lost" in table
    cluster = (ROOT / "docs" / "scaling.md").read_text()
    assert cluster.count(f'[ $? -eq {EXIT_STOPPED} ] && scontrol requeue') == 2


# --- a run of several processes: the guard and the watch, without a second process ----

# What JAX 0.10's client printed in the survivor when process 0 / process 1 was killed.
COORDINATOR_GONE = """\
E1126 10:34:01.387646    2555 coordination_service_agent.cc:289] Polled an error from coordination service (this can be an error from this or another task).
F1126 10:34:01.387735    2555 client.h:80] Terminating process because the JAX distributed service detected fatal errors. This most likely indicates that another task died; see the other task logs for more details. Disable Python buffering, i.e. `python -u`, to be sure to see all the previous output. absl::Status: UNAVAILABLE: Failed to send RPC to coordination service. Either the leader task was preempted/died/restarted unexpectedly or this task is experiencing network issues.
*** Check failure stack trace: ***
    @     0x7f1b85840634  absl::lts_20260107::log_internal::LogMessage::SendToLog()
"""
TASK_GONE = """\
E1126 10:28:46.350282     347 coordination_service.cc:1549] [83] Use error polling to propagate the following error to all tasks: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):
1
The tasks have crashed.
F1126 10:28:46.351135     358 client.h:80] Terminating process because the JAX distributed service detected fatal errors. absl::Status: UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):
1
"""


def test_the_guard_names_the_process_jax_lost():
    assert lost_process(COORDINATOR_GONE, 2, "10.0.0.1:1234").startswith(
        "lost process 0 of 2, the coordinator at 10.0.0.1:1234: ")
    assert lost_process(TASK_GONE, 3, "").startswith("lost process 1 of 3: no heartbeat")
    other = "F1126 10:28:46.351135 358 client.h:80] Terminating process because the JAX " \
            "distributed service detected fatal errors. absl::Status: INTERNAL: something new"
    assert "something new" in lost_process(other, 2, "")


def test_the_guard_holds_back_only_the_lines_of_a_native_abort():
    held = [line for line in (COORDINATOR_GONE + TASK_GONE).encode().splitlines(keepends=True)
            if _is_native_fault(line)]
    assert len(held) == 6  # the E and F lines and the stack trace's
    for ordinary in (b"it    30 | games 449\n", b"error: --devices must be an integer\n",
                     b"E1126 10:00:00.000000 1 gloo.cc:1] an error of gloo's\n",
                     b"[Gloo] Rank 0 is connected to 1 peer ranks.\n"):
        assert not _is_native_fault(ordinary)


class FakeStore:
    """JAX's coordination key-value store, as the watch uses it; `down` makes it
    unreachable."""

    def __init__(self):
        self.data: dict[str, str] = {}
        self.down = False

    def key_value_set(self, key, value, allow_overwrite=False):
        if self.down:
            raise RuntimeError("UNAVAILABLE: Failed to send RPC to coordination service")
        self.data[key] = value

    def key_value_dir_get(self, prefix):
        if self.down:
            raise RuntimeError("UNAVAILABLE: Failed to send RPC to coordination service")
        return [(k, v) for k, v in list(self.data.items()) if k.startswith(prefix)]


class FakePeer:
    """Process `peer` of two as the watch sees it: its counter, its state, and its echo of
    the other process's counter; `stop` ends it as SIGKILL would."""

    def __init__(self, store: FakeStore, peer: int):
        self.store, self.peer, self.state = store, peer, "running"
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        count = 0
        while not self.stop.is_set() and not self.store.down:
            count += 1
            other = self.store.data.get(f"azjax/peers/{1 - self.peer}", "0|running|0,0")
            echo = [0, 0]
            echo[self.peer], echo[1 - self.peer] = count, int(other.split("|")[0])
            self.store.key_value_set(f"azjax/peers/{self.peer}",
                                     f"{count}|{self.state}|{echo[0]},{echo[1]}", True)
            time.sleep(0.02)


def watched(store: FakeStore, process_id: int, timeout: float = 0.5):
    watch = PeerWatch(store, process_id, 2, timeout, "127.0.0.1:1")
    ended = []
    watch._end = lambda why: (ended.append(why), watch._stop.set())
    return watch.start(), ended


def wait_for(condition, limit: float = 10.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_the_watch_ends_the_run_when_a_peer_stops_beating():
    store = FakeStore()
    peer = FakePeer(store, 1)
    watch, ended = watched(store, 0)
    time.sleep(1.0)  # twice the timeout with the peer beating: no verdict
    assert ended == [] and watch.verdict() is None
    peer.stop.set()  # the peer dies
    assert wait_for(lambda: ended)
    assert ended[0] == ("lost process 1 of 2: no heartbeat for 0.5 s (killed, crashed or "
                        "cut off)")


@pytest.mark.parametrize("state, lost", [("finished", False), ("failed", True)])
def test_the_watch_lets_a_finished_peer_go_and_stops_for_a_failed_one(state, lost):
    store = FakeStore()
    peer = FakePeer(store, 1)
    watch, ended = watched(store, 0)
    peer.state = state
    time.sleep(0.1)
    peer.stop.set()
    if lost:
        assert wait_for(lambda: ended)
        assert ended[0] == "lost process 1 of 2: it failed (see its output)"
    else:
        time.sleep(1.5)  # three timeouts without a heartbeat
        assert ended == []
    watch.leave(ok=True)
    assert store.data["azjax/peers/0"].split("|")[1] == "finished"


def test_the_watch_ends_the_run_when_the_coordinator_is_gone():
    store = FakeStore()
    FakePeer(store, 0)
    watch, ended = watched(store, 1)
    time.sleep(0.8)
    assert ended == []
    store.down = True  # process 0, and its store with it
    assert wait_for(lambda: ended)
    assert ended[0].startswith("lost process 0 of 2, the coordinator at 127.0.0.1:1: not "
                               "reachable for 0.5 s")


def test_after_a_failure_the_watch_tells_a_lost_peer_from_a_live_or_failed_one():
    store = FakeStore()
    peer = FakePeer(store, 1)
    watch, ended = watched(store, 0)
    time.sleep(0.2)
    watch.settle()  # the peer echoes on: this process's own failure is told as it is
    assert ended == []
    peer.state = "failed"  # failed as well: no reason to end, each tells its own
    time.sleep(0.1)
    peer.stop.set()
    watch.settle()
    assert ended == []
    watch.leave(ok=False)

    # The peer's last heartbeat, read after this process failed, is no proof of life:
    # only an echo of a counter written after the failure is.
    store = FakeStore()
    peer = FakePeer(store, 1)
    watch, ended = watched(store, 0)
    time.sleep(0.2)
    peer.stop.set()  # the peer dies as this process fails inside a collective with it
    def end(why):  # as the watch ends the process: in the main thread, SystemExit
        ended.append(why)
        watch._stop.set()
        if threading.current_thread() is threading.main_thread():
            sys.exit(76)

    watch._end = end
    with pytest.raises(SystemExit):
        watch.settle()
    assert ended[-1].startswith("lost process 1 of 2: no heartbeat")
    watch.leave(ok=False)


def test_each_process_checks_its_share_of_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    train(SMALL.replace(iterations=2), run_dir, progress=None)
    manifest = json.loads((step_dir(run_dir, 2) / "azjax_manifest.json").read_text())
    names = sorted(manifest["files"])
    second = names[1]  # the share of process 1 of 2: the second, fourth, ... files
    path = step_dir(run_dir, 2) / second
    path.write_bytes(path.read_bytes() + b"!")
    assert verify(run_dir, 2, share=(0, 2)) is None
    assert verify(run_dir, 2, share=(1, 2)) == f"{second} does not match its checksum"
    assert verify(run_dir, 2) == f"{second} does not match its checksum"
