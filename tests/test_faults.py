"""A run of two processes (jax.distributed on 127.0.0.1, one device each) through the
faults of a cluster: resumed, with damage only one process sees; one process killed
(`kill -9`), either of them; SIGTERM to both (a scheduler's preemption) and SIGINT to
one; SIGTERM to a run of one process. After each, the same commands finish the run to
the state of a run that was never interrupted."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_devices import OPTIONS, SCRIPT, launch, same_leaves, saved_state

from azjax.run.directory.run_dir import RunDir
from azjax.run.process.peers import EXIT_PEER_LOST
from azjax.run.process.stop_signals import EXIT_STOPPED

pytestmark = pytest.mark.slow  # two processes per run, 20-60 s each; ~7 minutes in all

ITERATIONS = 50
RUN = ["--iterations", str(ITERATIONS), "--checkpoint-every", "10", "--eval-every", "10",
       "--heartbeat-timeout", "10"]
# Bad input: each process ends at once. Any wait for a peer is bounded by the heartbeat
# timeout (the watch, the coordinator outlasting its peers) or by JAX's own (longer)
# timeouts; with a heartbeat timeout far beyond what a start-up takes, a process that
# waits at all is still running when START_UP_S has passed.
NO_WAIT_HEARTBEAT_S = 900
START_UP_S = 150
STATUS_LINE = re.compile(r"^it +(\d+) \|", re.MULTILINE)


class Pair:
    """The two processes of one run, their output in files (no read can block)."""

    def __init__(self, run_dir: Path, *extra: str):
        self.run_dir, self.out = run_dir, run_dir.parent
        self.logs = [self.out / f"{run_dir.name}.{i}.{time.monotonic_ns()}" for i in (0, 1)]
        self.started = time.monotonic()
        self.processes = launch(lambda port: [
            [sys.executable, str(SCRIPT), *OPTIONS, "--run-dir", str(run_dir), *RUN,
             "--devices", "2", "--num-processes", "2", "--process-id", str(i),
             "--coordinator-address", f"127.0.0.1:{port}", *extra] for i in (0, 1)],
            self.logs, cwd=self.out)

    def stdout(self, i: int) -> str:
        return Path(f"{self.logs[i]}.out").read_text()

    def stderr(self, i: int) -> str:
        return Path(f"{self.logs[i]}.err").read_text()

    def wait_for_iteration(self, iteration: int, limit: float = 240) -> None:
        deadline = time.monotonic() + limit
        while f"it {iteration:5d} |" not in self.stdout(0):
            assert time.monotonic() < deadline, self.stdout(0)[-2000:] + self.stderr(0)[-2000:]
            assert all(p.poll() is None for p in self.processes), self.stderr(0)[-2000:]
            time.sleep(0.05)

    def logged(self) -> int:
        """The newest iteration process 0 has logged so far (0 before the first)."""
        return max(map(int, STATUS_LINE.findall(self.stdout(0))), default=0)

    def wait(self, i: int, limit: float = 300, from_start: bool = False) -> int:
        """Process i's exit status, waiting until `limit` seconds from now (or from the
        processes' start); after that both are killed and the test fails with what
        process i said."""
        began = self.started if from_start else time.monotonic()
        try:
            return self.processes[i].wait(timeout=max(0.0, began + limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            since = "its start" if from_start else "the wait began"
            raise AssertionError(f"process {i} still ran {limit:g} s after {since}:\n"
                                 f"{self.stderr(i)[-3000:]}") from None

    def finish(self) -> None:
        for i in (0, 1):
            assert self.wait(i) == 0, self.stderr(i)[-3000:]

    def kill(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                p.kill()


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The run trained by two processes without a fault."""
    run_dir = tmp_path_factory.mktemp("faults") / "whole"
    Pair(run_dir).finish()
    return run_dir


def same_as_whole(run_dir: Path, whole: Path) -> bool:
    step, state = saved_state(run_dir)
    whole_step, whole_state = saved_state(whole)
    return step == whole_step == ITERATIONS and same_leaves(state, whole_state)


def stopped_there(run_dir: Path, signalled_after: int) -> int:
    """The iteration a run stopped at by a signal sent after iteration `signalled_after`
    was logged: it finished the iteration the signal met (a later one: no earlier
    iteration can have seen it), before its last, and saved a complete checkpoint of
    that iteration (its manifest, written once every process saved its part, names it)
    with the metrics up to it."""
    checkpoints = RunDir(run_dir).checkpoints
    stopped_at = checkpoints.steps()[0]
    assert signalled_after < stopped_at < ITERATIONS, (signalled_after, stopped_at)
    manifest = checkpoints.manifest(stopped_at)
    assert manifest["step"] == stopped_at
    assert RunDir(run_dir).metrics.read()[-1]["iteration"] == stopped_at
    return stopped_at


def test_two_processes_resume_and_fall_back_together_from_damage_one_sees(tmp_path, whole):
    run_dir = tmp_path / "run"
    Pair(run_dir, "--iterations", "20").finish()
    # Damage a file that only process 1 checks (the second of the manifest's files).
    manifest = RunDir(run_dir).checkpoints.manifest(20)
    damaged = RunDir(run_dir).checkpoints.step_dir(20) / sorted(manifest["files"])[1]
    damaged.write_bytes(damaged.read_bytes() + b"!")

    resumed = Pair(run_dir)
    resumed.finish()
    out = resumed.stdout(0)
    assert "passed over damaged checkpoint 20:" in out and "(process 1)" in out, out
    assert f"resumed {run_dir} at iteration 10" in out
    assert same_as_whole(run_dir, whole)


@pytest.mark.parametrize("victim", [1, 0])
def test_a_killed_process_stops_the_other_in_one_line_and_the_run_resumes(tmp_path, whole,
                                                                          victim):
    run_dir = tmp_path / "run"
    pair = Pair(run_dir)
    pair.wait_for_iteration(30)
    pair.processes[victim].send_signal(signal.SIGKILL)
    survivor = 1 - victim
    code = pair.wait(survivor, limit=120)
    lines = pair.stderr(survivor).splitlines()
    lost = [line for line in lines if not line.startswith("[Gloo]")]
    assert code == EXIT_PEER_LOST, lines
    # The line says which mechanism stopped it: the watch after --heartbeat-timeout, or the
    # guard at JAX's abort; benchmarks/fault_tolerance_overhead.py --faults times both.
    assert len(lost) == 1, lines
    named = ("lost process 1 of 2: no heartbeat for 10 s" if victim == 1
             else "lost process 0 of 2, the coordinator at 127.0.0.1:")
    assert lost[0].startswith(f"error: {named}"), lost
    assert lost[0].endswith(f"rerun the same 2 commands to resume from the newest checkpoint "
                            f"in {run_dir}")
    assert not any("stack trace" in line or " @ " in line for line in lines)

    Pair(run_dir).finish()
    assert same_as_whole(run_dir, whole)


def test_sigterm_to_both_processes_saves_the_iteration_and_the_run_resumes_there(tmp_path,
                                                                                 whole):
    run_dir = tmp_path / "run"
    pair = Pair(run_dir)
    pair.wait_for_iteration(40)
    signalled_after = pair.logged()
    for process in pair.processes:
        process.send_signal(signal.SIGTERM)
    codes = [pair.wait(i, limit=120) for i in (0, 1)]
    assert codes == [EXIT_STOPPED] * 2, pair.stderr(0)
    stopped_at = stopped_there(run_dir, signalled_after)
    assert pair.stderr(0).splitlines()[-1] == (
        f"stopped by SIGTERM after iteration {stopped_at}, with a checkpoint in {run_dir}; "
        "rerun the same 2 commands to resume")

    resumed = Pair(run_dir)
    resumed.finish()
    assert f"resumed {run_dir} at iteration {stopped_at}" in resumed.stdout(0)
    assert same_as_whole(run_dir, whole)


def test_sigint_to_one_process_stops_both_at_the_same_iteration(tmp_path):
    run_dir = tmp_path / "run"
    pair = Pair(run_dir)
    pair.wait_for_iteration(15)
    signalled_after = pair.logged()
    pair.processes[1].send_signal(signal.SIGINT)
    codes = [pair.wait(i, limit=120) for i in (0, 1)]
    assert codes == [EXIT_STOPPED] * 2, pair.stderr(0)
    # Process 0, which no signal reached, stopped where process 1 did: one checkpoint
    # of both processes' parts, at the iteration process 0 names.
    stopped_at = stopped_there(run_dir, signalled_after)
    assert f"stopped by SIGINT after iteration {stopped_at}, with a checkpoint" in pair.stderr(0)


def test_sigterm_to_a_run_of_one_process_saves_the_iteration_and_it_resumes_there(tmp_path,
                                                                                  whole):
    """One process on two devices trains the two processes' run bit for bit."""
    run_dir = tmp_path / "run"
    command = [sys.executable, str(SCRIPT), *OPTIONS, "--run-dir", str(run_dir), *RUN,
               "--devices", "2"]
    out_path, err_path = tmp_path / "first.out", tmp_path / "first.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=tmp_path)
    deadline = time.monotonic() + 240
    while "it    40 |" not in out_path.read_text():
        assert time.monotonic() < deadline and process.poll() is None, err_path.read_text()
        time.sleep(0.05)
    signalled_after = max(map(int, STATUS_LINE.findall(out_path.read_text())))
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=120)
    assert code == EXIT_STOPPED, err_path.read_text()
    stopped_at = stopped_there(run_dir, signalled_after)
    assert err_path.read_text().splitlines()[-1] == (
        f"stopped by SIGTERM after iteration {stopped_at}, with a checkpoint in {run_dir}; "
        "rerun the same command to resume")

    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resumed {run_dir} at iteration {stopped_at}" in done.stdout
    assert same_as_whole(run_dir, whole)


@pytest.mark.parametrize("option, value, error", [
    # found before the processes join each other
    ("--learner.learning-rate", "nan",
     "learner.learning_rate must be a finite number > 0, got nan"),
    # found after they joined: the coordinator outlasts its peer, which tells its own error
    ("--selfplay.num-games", "15", "cannot split the run over 2 devices: selfplay.num_games "
     "15 is not a multiple of 2 (nearest that is: 16)"),
])
def test_bad_input_to_both_processes_is_one_line_from_each_and_no_wait(tmp_path, option,
                                                                      value, error):
    """Each process says its error and exits: neither waits for the other (a wait would
    last the heartbeat timeout, far beyond START_UP_S)."""
    pair = Pair(tmp_path / "run", option, value,
                "--heartbeat-timeout", str(NO_WAIT_HEARTBEAT_S))
    for i in (0, 1):
        code = pair.wait(i, limit=START_UP_S, from_start=True)
        lines = [line for line in pair.stderr(i).splitlines() if not line.startswith("[Gloo]")]
        assert code == 2, lines
        assert lines == [f"error: {error}"]
    assert not (tmp_path / "run").exists()
