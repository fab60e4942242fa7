"""Faults a run survives, checked in one process: SIGTERM and Ctrl-C stop training after
the iteration, skipping (or abandoning) its evaluation, with a checkpoint that resumes
exactly; a second signal raises KeyboardInterrupt and the process lives on; a script
interrupted before a run of several processes trains leaves at once; the watch on a
run's other processes and the guard's reading of JAX's aborts. Runs of two processes
killed and signalled: tests/test_faults.py (slow)."""

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
from azjax.evaluation.evaluators import PositionEvaluator
from azjax.run import EXIT_STOPPED, Stopped
from azjax.run.directory.checkpoint_files import step_dir, verify
from azjax.run.directory.run_dir import RunDir
from azjax.run.process.guard import _is_native_fault, lost_process
from azjax.run.process.peers import EXIT_PEER_LOST, PeerWatch
from azjax.run.process.stop_signals import StopSignals

# Iteration 4 is no checkpoint of its own: only the stop writes one there.
STOPPABLE = SMALL.replace(iterations=7, checkpoint_every=5, eval_every=2)


@pytest.fixture(scope="module")
def straight():
    """The run trained without a stop (its `TrainResult`)."""
    return train(STOPPABLE, run_dir=None, progress=None)


def evaluated_at(records) -> list[int]:
    """The iterations whose evaluation ran, or was due and skipped by a stop."""
    return [r["iteration"] for r in records if "perfect" in r or "evaluation_skipped" in r]


# SIGTERM comes while iteration 4 trains (its evaluation is due), SIGINT during that
# evaluation, which then waits to be cut short (a GNU Go match, say).
@pytest.mark.parametrize("signum, during", [(signal.SIGTERM, "iteration"),
                                            (signal.SIGINT, "evaluation")])
def test_a_signal_stops_after_the_iteration_with_a_checkpoint_that_resumes_exactly(
        tmp_path, straight, monkeypatch, signum, during):
    run_dir = tmp_path / "run"
    before = signal.getsignal(signum)
    evaluations = []
    evaluate = PositionEvaluator.network_metrics

    def signal_at_three(iterations):
        if iterations == [3] and during == "iteration":
            os.kill(os.getpid(), signum)

    def signal_in_the_second(self, player):
        evaluations.append(player)
        if len(evaluations) == 2 and during == "evaluation":  # iteration 4's
            os.kill(os.getpid(), signum)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                time.sleep(0.01)
        return evaluate(self, player)

    monkeypatch.setattr(PositionEvaluator, "network_metrics", signal_in_the_second)
    with pytest.raises(Stopped) as stopped:
        train_group([STOPPABLE], [run_dir], progress=None, on_iteration=signal_at_three)
    assert isinstance(stopped.value, KeyboardInterrupt)
    assert stopped.value.signum == signum and stopped.value.iterations == [4]
    assert stopped.value.message() == (
        f"stopped by {signal.Signals(signum).name} after iteration 4, with a checkpoint in "
        f"{run_dir}; rerun the same command to resume")
    assert signal.getsignal(signum) is before  # the handlers are put back
    assert RunDir(run_dir).checkpoints.steps()[0] == 4
    stop = RunDir(run_dir).metrics.read()[-1]
    assert stop["iteration"] == 4 and stop["evaluation_skipped"] == 1.0  # it was due
    assert "perfect" not in stop

    messages = []
    resumed = train(STOPPABLE, run_dir, progress=messages.append)
    assert any("resumed" in m and "iteration 4" in m for m in messages)
    assert int(resumed.train_state.iteration) == 7
    assert same_leaves(resumed.train_state, straight.train_state)
    # The resumed run keeps the uninterrupted run's evaluation cadence: 2, 4 (skipped), 6
    # and the last, 7, evaluated alike.
    records = RunDir(run_dir).metrics.read()
    assert evaluated_at(records) == evaluated_at(straight.records) == [2, 4, 6, 7]
    after = [r for r in records if r["iteration"] > 4 and "perfect" in r]
    assert after == [{**r, "wall_time": a["wall_time"], "positions_per_s": a["positions_per_s"]}
                     for r, a in zip([r for r in straight.records if r["iteration"] > 4
                                      and "perfect" in r], after, strict=True)]


def test_a_stop_during_the_last_iteration_evaluates_it_when_resumed(tmp_path, straight):
    """The final evaluation, skipped by a stop during the last iteration, runs when the
    run is resumed: the record of the last iteration, in metrics.jsonl and in the
    checkpoint's copy, then holds it (as an uninterrupted run's does), and a run that
    is resumed again evaluates nothing more."""
    run_dir = tmp_path / "run"

    def signal_at_six(iterations):
        if iterations == [6]:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(Stopped):
        train_group([STOPPABLE], [run_dir], progress=None, on_iteration=signal_at_six)
    stopped = RunDir(run_dir).metrics.read()[-1]
    assert stopped["iteration"] == 7 and "evaluation_skipped" in stopped
    assert "perfect" not in stopped

    messages = []
    resumed = train(STOPPABLE, run_dir, progress=messages.append)
    assert any("final evaluation of iteration 7" in m for m in messages)
    last, expected = resumed.records[-1], straight.records[-1]
    assert "evaluation_skipped" not in last
    evaluation = {k: v for k, v in expected.items() if k.startswith(("net_", "perfect"))}
    assert evaluation and {k: last[k] for k in evaluation} == evaluation
    assert RunDir(run_dir).metrics.read() == resumed.records
    assert verify(run_dir, 7) is None  # the amended checkpoint is intact
    again = train(STOPPABLE, run_dir, progress=messages.append)
    assert again.records == resumed.records
    assert sum("final evaluation" in m for m in messages) == 1


def test_a_second_signal_in_training_raises_at_once_and_the_next_call_resumes(
        tmp_path, straight, monkeypatch):
    """A second signal (Ctrl-C after SIGTERM) as the stop's checkpoint begins: the run
    raises `Interrupted` without writing it, the signal handlers are the caller's again,
    and training again resumes from the newest checkpoint to the same end."""
    from azjax.run.directory.checkpoint import Checkpoints
    from azjax.run.process.stop_signals import Interrupted

    run_dir = tmp_path / "run"
    before = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)]
    save = Checkpoints.save

    def interrupted_save(checkpoints, step, *args, **kwargs):
        if step == 6:
            os.kill(os.getpid(), signal.SIGINT)
        return save(checkpoints, step, *args, **kwargs)

    def signal_at_five(iterations):
        if iterations == [5]:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(Checkpoints, "save", interrupted_save)
    with pytest.raises(Interrupted) as interrupted:
        train_group([STOPPABLE], [run_dir], progress=None, on_iteration=signal_at_five)
    assert interrupted.value.signum == signal.SIGINT
    assert [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)] == before
    assert RunDir(run_dir).checkpoints.steps() == [5]  # nothing of iteration 6, whole or in part
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["5"]
    assert RunDir(run_dir).metrics.read()[-1]["iteration"] == 5
    monkeypatch.setattr(Checkpoints, "save", save)
    resumed = train(STOPPABLE, run_dir, progress=None)
    assert same_leaves(resumed.train_state, straight.train_state)


# The handler's verdicts go by the clock StopSignals is given: the echo comes half the
# echo window after the first signal, the second signal half a window after it closes,
# however slowly the process runs. Each signal is waited for (the handler has run)
# before the next is sent. The module needs only the standard library: loaded alone,
# from its file, it spares the process JAX's import.
SECOND_SIGNAL = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("stop_signals", sys.argv[1])
stop_signals = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stop_signals)
now = [0.0]

class Counted(stop_signals.StopSignals):
    handled = 0

    def _handle(self, signum, frame):
        super()._handle(signum, frame)
        self.handled += 1

def signal_and_wait(stop, count):
    os.kill(os.getpid(), signal.SIGTERM)
    while stop.handled < count:
        pass

with Counted(clock=lambda: now[0]) as stop:
    signal_and_wait(stop, 1)
    now[0] = stop_signals.REPEAT_S / 2
    signal_and_wait(stop, 2)  # within the window: the first one's echo
    print("received", stop.received, flush=True)
    now[0] = stop_signals.REPEAT_S * 1.5
    try:
        signal_and_wait(stop, 3)  # after it: a second signal
    except KeyboardInterrupt as interrupt:
        print(type(interrupt).__name__, interrupt.signum, interrupt, flush=True)
print("still here", flush=True)
"""


def test_a_second_signal_raises_keyboard_interrupt_and_the_process_lives_on():
    done = subprocess.run(
        [sys.executable, "-c", SECOND_SIGNAL, str(ROOT / "azjax" / "run" / "process" / "stop_signals.py")],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.stdout.splitlines() == [
        f"received {int(signal.SIGTERM)}",
        f"Interrupted {int(signal.SIGTERM)} interrupted by a second SIGTERM",
        "still here"], done.stderr
    assert done.returncode == 0


class Exited(BaseException):
    """`os._exit`, as a test sees it: the process would end here with `code`."""

    def __init__(self, code: int):
        self.code = code


def test_ctrl_c_before_a_run_of_several_processes_trains_leaves_at_once(monkeypatch,
                                                                       tmp_path):
    """The script tells the other processes (its watch says it failed) and exits at
    once: JAX's shutdown at a normal exit would wait for them. A terminal's Ctrl-C,
    passed on by the guard too, cannot cut that short."""
    from azjax.commands import train as train_command

    left, exits = [], []

    class Watch:
        resume_hint = ""

        def leave(self, ok, interrupted=False):
            left.append((ok, interrupted))

    def exit_now(code):
        exits.append((code, signal.getsignal(signal.SIGINT)))
        raise Exited(code)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    for name, value in (("arrange", lambda *a: None), ("guard", lambda *a: None),
                        ("train", interrupted)):
        monkeypatch.setattr(train_command, name, value)
    monkeypatch.setattr(train_command.peers, "current", Watch)
    monkeypatch.setattr(train_command.compile_cache, "enable", lambda: None)
    monkeypatch.setattr(train_command.os, "_exit", exit_now)
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(Exited):
            train_command.main(["--run-dir", str(tmp_path / "run"), "--num-processes", "2",
                       "--coordinator-address", "127.0.0.1:1"], defaults=STOPPABLE)
    finally:
        signal.signal(signal.SIGINT, before)
    assert left == [(False, True)]
    assert exits == [(130, signal.SIG_IGN)]


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


# A guarded process that JAX aborts: it writes from native code (fd 2) a coordination
# error that is no abort yet, Python's own notice, an XLA warning, then the abort of
# argv[2] (COORDINATOR_GONE), and dies of SIGABRT. The guard needs only the standard
# library and one constant: loaded alone, from its file, it spares the process JAX's
# import.
GUARDED = """
import importlib.util, os, resource, signal, sys, types
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
for name in ("azjax", "azjax.run", "azjax.run.process.peers"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["azjax.run.process.peers"].EXIT_PEER_LOST = 76
spec = importlib.util.spec_from_file_location("guard", sys.argv[1])
guard = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guard)
guard.guard(2, "10.0.0.1:1234", "rerun both")
os.write(2, b"E1126 10:33:00.000000    2555 coordination_service_agent.cc:100] slow\\n")
print("notice: a line of azjax's own", file=sys.stderr, flush=True)
os.write(2, b"W1126 10:33:30.000000    2555 xla_compiler.cc:1] a warning of XLA's\\n")
os.write(2, sys.argv[2].encode())
os.kill(os.getpid(), signal.SIGABRT)
"""


def test_the_guard_drops_only_the_abort_and_shows_the_rest():
    done = subprocess.run(
        [sys.executable, "-c", GUARDED, str(ROOT / "azjax" / "run" / "process" / "guard.py"),
         COORDINATOR_GONE], capture_output=True, text=True, timeout=120, cwd=ROOT,
        check=False)
    lines = done.stderr.splitlines()
    assert done.returncode == EXIT_PEER_LOST, done.stderr
    assert "notice: a line of azjax's own" in lines
    assert any(line.endswith("] a warning of XLA's") for line in lines), lines
    assert lines[-1].startswith("error: lost process 0 of 2, the coordinator at "
                                "10.0.0.1:1234: "), lines
    assert lines[-1].endswith("; rerun both")
    assert not any("Terminating process" in line or "stack trace" in line
                   for line in lines), lines


class FakeStore:
    """JAX's coordination key-value store, as the watch uses it; `down` makes it
    unreachable; `before_read`, when set, runs before each read (another process's
    write that lands between a round's write and its read)."""

    def __init__(self):
        self.data: dict[str, str] = {}
        self.down = False
        self.before_read = None

    def key_value_set(self, key, value, allow_overwrite=False):
        if self.down:
            raise RuntimeError("UNAVAILABLE: Failed to send RPC to coordination service")
        self.data[key] = value

    def key_value_dir_get(self, prefix):
        if self.down:
            raise RuntimeError("UNAVAILABLE: Failed to send RPC to coordination service")
        if self.before_read is not None:
            self.before_read()
        return [(k, v) for k, v in list(self.data.items()) if k.startswith(prefix)]


class FakePeer:
    """Process `peer` of two as the watch sees it, beating when the test says: its
    counter, its state, and its echo of the other process's counter. `alive = False`
    ends it as SIGKILL would; so does a store that is down."""

    def __init__(self, store: FakeStore, peer: int):
        self.store, self.peer, self.state = store, peer, "running"
        self.alive, self.count = True, 0

    def beat(self) -> None:
        if not self.alive or self.store.down:
            return
        self.count += 1
        other = self.store.data.get(f"azjax/peers/{1 - self.peer}", "0|running|0,0")
        echo = [0, 0]
        echo[self.peer], echo[1 - self.peer] = self.count, int(other.split("|")[0])
        self.store.key_value_set(f"azjax/peers/{self.peer}",
                                 f"{self.count}|{self.state}|{echo[0]},{echo[1]}", True)


# Simulated time: whole seconds, so that every sum of them is exact.
TIMEOUT = 10.0  # the watch's rounds: every second
NO_HEARTBEAT = "lost process 1 of 2: no heartbeat for 10 s (killed, crashed or cut off)"


class Watched:
    """A watch of process `process_id` of two and its peer, run in simulated time: the
    watch's clock moves only when `run` (or the watch's own waits) move it, by rounds of
    the watch's interval, in each of which the peer beats, then the watch beats and
    checks, as their threads would. What ended the watch is in `ended`."""

    def __init__(self, process_id: int):
        self.store, self.now, self.ended = FakeStore(), 0.0, []
        self.peer = FakePeer(self.store, 1 - process_id)
        self.watch = PeerWatch(self.store, process_id, 2, TIMEOUT, "127.0.0.1:1",
                               clock=lambda: self.now, sleep=self._wait)
        self.watch._end = self._end
        self.rounds = 0

    def _end(self, why: str) -> None:
        """As the watch ends the process, without ending it: its threads stop."""
        self.ended.append(why)
        self.watch._stop.set()

    def _round(self, seconds: float) -> None:
        self.rounds += 1
        assert self.rounds < 10_000, "the watch waited for ever"
        self.now += seconds
        self.peer.beat()
        if not self.watch._stop.is_set():  # its heartbeat stops when it leaves or ends
            self.watch.beat_once()

    def _wait(self, seconds: float) -> None:
        """The watch's own waits (`settle`, `leave`): the world goes on meanwhile."""
        self._round(seconds)

    def run(self, seconds: float) -> None:
        """`seconds` of both threads' rounds, or fewer if the watch ends."""
        for _ in range(round(seconds / self.watch.interval)):
            if self.ended:
                return
            self._round(self.watch.interval)
            self.watch.check_once()


def test_the_watch_ends_the_run_when_a_peer_stops_beating():
    world = Watched(0)
    assert world.watch.interval == 1.0
    world.run(3 * TIMEOUT)  # the peer beating: no verdict
    assert world.ended == [] and world.watch.verdict() is None
    world.peer.alive = False  # the peer dies
    world.run(TIMEOUT)  # its last heartbeat just a timeout old: not yet
    assert world.ended == []
    world.run(2.0)
    assert world.ended == [NO_HEARTBEAT]


@pytest.mark.parametrize("state, lost", [("finished", False), ("failed", True)])
def test_the_watch_lets_a_finished_peer_go_and_stops_for_a_failed_one(state, lost):
    world = Watched(0)
    world.run(2.0)
    world.peer.state = state
    world.peer.beat()  # says so
    world.peer.alive = False
    world.run(3 * TIMEOUT)  # three timeouts without a heartbeat
    assert world.ended == (["lost process 1 of 2: it failed (see its output)"] if lost else [])
    world.watch.leave(ok=True)
    assert world.store.data["azjax/peers/0"].split("|")[1] == "finished"


def test_the_watch_ends_the_run_when_the_coordinator_is_gone():
    world = Watched(1)
    world.run(3 * TIMEOUT)
    assert world.ended == []
    world.store.down = True  # process 0, and its store with it
    world.run(TIMEOUT)
    assert world.ended == []
    world.run(2.0)
    assert world.ended == [("lost process 0 of 2, the coordinator at 127.0.0.1:1: not "
                            "reachable for 10 s (killed, crashed or cut off)")]


def test_after_a_failure_the_watch_tells_a_lost_peer_from_a_live_or_failed_one():
    world = Watched(0)
    world.run(2.0)
    world.watch.settle()  # the peer echoes on: this process's own failure is told as it is
    assert world.ended == []
    world.peer.state = "failed"  # failed as well: no reason to end, each tells its own
    world.peer.beat()
    world.peer.alive = False
    world.watch.settle()
    assert world.ended == []
    world.watch.leave(ok=False)  # the coordinator outlasts its peer: it has said it failed
    assert world.store.data["azjax/peers/0"].split("|")[1] == "failed"

    # The peer's last heartbeat, read after this process failed, is no proof of life:
    # only an echo of a counter written after the failure is.
    world = Watched(0)
    world.run(2.0)
    # The peer's last beat lands between this process's write and its read: it echoes
    # the newest counter, which this process reads; then the peer dies as this process
    # fails inside a collective with it.
    world.store.before_read = world.peer.beat
    world.now += 1.0
    world.watch.beat_once()
    world.store.before_read = None
    assert world.watch._echo[1] == world.watch._beats  # (the echo, as the setup means)
    world.peer.alive = False
    before = world.now

    def end(why):  # as the watch ends the process: in the main thread, SystemExit
        world.ended.append(why)
        sys.exit(EXIT_PEER_LOST)

    world.watch._end = end
    with pytest.raises(SystemExit):
        world.watch.settle()
    assert world.ended == [NO_HEARTBEAT]
    assert world.now - before > TIMEOUT  # not before the last heartbeat was a timeout old


def test_a_peer_that_was_interrupted_ends_the_run_whatever_failed_here():
    """A process interrupted before training (Ctrl-C) leaves a collective its peer waits
    in: the peer's failure there is told as the interrupt, at once."""
    world = Watched(0)
    world.run(2.0)
    world.peer.state = "interrupted"
    world.peer.beat()
    world.peer.alive = False
    before = world.now

    def end(why):  # as the watch ends the process: in the main thread, SystemExit
        world.ended.append(why)
        sys.exit(EXIT_PEER_LOST)

    world.watch._end = end
    with pytest.raises(SystemExit):
        world.watch.settle()  # this process failed meanwhile, in the collective
    assert world.ended == ["lost process 1 of 2: it was interrupted"]
    assert world.now - before < TIMEOUT


def test_a_failed_coordinator_waits_for_its_peers_to_read_it():
    """Process 0, failing, stays until its peer has said it failed or has gone quiet,
    so that the peer tells its own failure, not a lost coordinator."""
    world = Watched(0)
    world.run(2.0)
    start = world.now
    world.watch.leave(ok=False)  # the peer beats on and never says it failed
    assert world.now - start >= TIMEOUT  # waited for it, until the timeout
    world = Watched(0)
    world.run(2.0)
    world.peer.alive = False
    start = world.now
    world.watch.leave(ok=False)  # a peer already quiet is not waited for
    assert world.now - start < TIMEOUT / 2


def test_the_watch_threads_end_the_run_when_no_peer_beats():
    """The watch's own threads, in real time: with no peer ever beating, the check thread
    ends the run once the timeout has passed (only a verdict that must come is awaited,
    however slowly the threads run); the heartbeat thread has written this process's
    record."""
    store = FakeStore()
    watch = PeerWatch(store, 0, 2, 0.5, "127.0.0.1:1")
    ended = []
    watch._end = lambda why: (ended.append(why), watch._stop.set())
    watch.start()
    deadline = time.monotonic() + 120
    while not ended and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ended[:1] == [("lost process 1 of 2: no heartbeat for 0.5 s (killed, crashed or "
                          "cut off)")]
    assert int(store.data["azjax/peers/0"].split("|")[0]) >= 1


def test_each_process_checks_its_share_of_a_checkpoint(tiny_run_copy):
    run_dir = tiny_run_copy
    manifest = json.loads((step_dir(run_dir, 2) / "azjax_manifest.json").read_text())
    names = sorted(manifest["files"])
    second = names[1]  # the share of process 1 of 2: the second, fourth, ... files
    path = step_dir(run_dir, 2) / second
    path.write_bytes(path.read_bytes() + b"!")
    assert verify(run_dir, 2, share=(0, 2)) is None
    assert verify(run_dir, 2, share=(1, 2)) == f"{second} does not match its checksum"
    assert verify(run_dir, 2) == f"{second} does not match its checksum"
