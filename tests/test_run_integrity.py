"""Runs that lose nothing without a word: one writer per run directory, nothing written
before a command is known to be valid, checked checkpoints with a fall back to the newest
intact one, metrics.jsonl repaired from the checkpoints, one-line errors for the run
directory's OS faults."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from child_io import read_line
from cli_in_process import experiment
from test_resume import final_state, without_timing
from test_training import ROOT, SMALL, leaves_equal
from tiny import FLAGS

from azjax import Agent, train
from azjax.core import counters
from azjax.core.iteration import init_train_state
from azjax.driver.status import TrainingDiverged
from azjax.run.directory.checkpoint import DamagedCheckpointWarning
from azjax.run.directory.checkpoint_files import ITEM_DIR, MANIFEST_FILE
from azjax.run.directory.layout import (
    CHECKPOINT_DIR,
    CONFIG_FILE,
    DAMAGED_DIR,
    LOCK_FILE,
    METRICS_FILE,
    RunDirError,
)
from azjax.run.directory.lock import RunLock
from azjax.run.directory.run_dir import RunDir

# Checkpoints at 2, 4 and 6 (the newest three are kept): the tiny program, not evaluated.
RUN = SMALL.replace(iterations=6, eval_every=0)
# RUN's program and cadences on the command line of experiments/tictactoe.py.
TINY = [*FLAGS, "--checkpoint-every", "2"]


def cli(run_dir, *args, env=None, max_file_bytes=None) -> subprocess.CompletedProcess:
    """The tic-tac-toe experiment script with the tiny settings, in a process of its own
    (under a file size limit, if given: writes past it fail as on a full disk)."""
    command = [str(ROOT / "experiments" / "tictactoe.py"), "--run-dir", str(run_dir),
               *TINY, *args]
    if max_file_bytes is not None:
        command = ["-c", textwrap.dedent(f"""
            import os, resource, signal, sys
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, ({max_file_bytes}, {max_file_bytes}))
            os.execv(sys.executable, [sys.executable] + sys.argv[1:])
        """), *command]
    return subprocess.run([sys.executable, *command], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600)


def command(run_dir, *args) -> subprocess.CompletedProcess:
    """What `cli` gives, from the script run in this process (its exit status and output):
    for the cases that need no process of their own."""
    return experiment("tictactoe", "--run-dir", run_dir, *TINY, *args)


def one_line_error(result: subprocess.CompletedProcess, *words: str) -> str:
    """The one `error:` line of a failed command (asserting there is nothing else)."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module", autouse=True)
def no_plots():
    """Runs trained in this module's tests draw no plot (a second or so each; none of these
    tests looks at one: tests/test_training.py and tests/test_sweep.py do)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunDir, "plot", lambda run, records: None)
        yield


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`trained(n)`: the run directory and result of RUN trained for n iterations, each
    trained once for the module. Copy the directory (`copy_of`) to change it."""
    made = {}

    def get(iterations: int):
        if iterations not in made:
            path = tmp_path_factory.mktemp(f"trained{iterations}") / "run"
            made[iterations] = path, train(RUN.replace(iterations=iterations), path,
                                           progress=None)
        return made[iterations]

    return get


def copy_of(trained, iterations: int, to: Path) -> Path:
    """A copy, at `to`, of the run trained for `iterations` iterations."""
    return Path(shutil.copytree(trained(iterations)[0], to))


@pytest.fixture(scope="module")
def straight(trained):
    """An uninterrupted run of RUN: its final state and records."""
    return trained(6)[1]


def data_files(run_dir: Path, step: int) -> list[Path]:
    """The array data files of a checkpoint, largest first."""
    item = RunDir(run_dir).checkpoints.step_dir(step) / ITEM_DIR
    files = [p for p in item.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
             and p.parent.name != "process_0"]
    return sorted(files, key=lambda p: -p.stat().st_size)


def flip_bytes(path: Path, count: int = 400) -> None:
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(0)
    for i in rng.choice(len(data), size=min(count, len(data)), replace=False):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def params_file(run_dir: Path, step: int) -> Path:
    return next(p for p in data_files(run_dir, step) if p.parent.name.startswith("params."))


def test_run_directory_with_glob_characters_saves_resumes_and_loads(tmp_path, trained,
                                                                    straight):
    run_dir = copy_of(trained, 4, tmp_path / "run[1]*?")
    messages = []
    resumed = train(RUN, run_dir, progress=messages.append)
    assert "resumed" in messages[0] and "iteration 4" in messages[0]
    assert leaves_equal(resumed.train_state.params, straight.train_state.params)
    assert leaves_equal(Agent.load(run_dir).params, straight.train_state.params)
    assert RunDir(run_dir).checkpoints.steps() == [6, 4, 2]


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import os, time
            from azjax.run.directory.lock import RunLock
            os.mkdir({str(run_dir)!r})
            lock = RunLock({str(run_dir)!r}).acquire()
            print("locked", flush=True)
            time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert read_line(holder, timeout=120).strip() == "locked"
        in_use = f"in use by another process \\(PID {holder.pid}\\)"
        with pytest.raises(RunDirError, match=in_use):
            train(RUN.replace(iterations=2), run_dir, progress=None)
        line = one_line_error(command(run_dir, "--iterations", "2"),
                              f"PID {holder.pid}")
        assert "--run-dir" in line
        assert sorted(p.name for p in run_dir.iterdir()) == [LOCK_FILE]
    finally:
        holder.kill()
        holder.wait()
    # The lock dies with its holder.
    result = train(RUN.replace(iterations=2), run_dir, progress=None)
    assert [r["iteration"] for r in RunDir(run_dir).metrics.read()] == [1, 2]
    assert len(result.records) == 2


def test_the_lock_is_released_when_a_run_ends_or_fails(tmp_path):
    run_dir = tmp_path / "run"
    train(RUN.replace(iterations=2), run_dir, progress=None)
    with pytest.raises(RunDirError, match="different config"):
        train(RUN.replace(iterations=2, seed=5), run_dir, progress=None)
    train(RUN.replace(iterations=2), run_dir, progress=None)  # not locked out by either
    lock = RunLock(run_dir).acquire()
    try:
        with pytest.raises(RunDirError, match=f"PID {os.getpid()}"):
            train(RUN.replace(iterations=2), run_dir, progress=None)
    finally:
        lock.release()


def test_a_deleted_config_is_recovered_and_a_changed_program_refused(tmp_path, trained):
    run_dir = copy_of(trained, 4, tmp_path / "run")
    (run_dir / CONFIG_FILE).unlink()
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))

    wider = RUN.replace(network=dataclasses.replace(RUN.program.network, channels=64))
    with pytest.raises(RunDirError, match="network.channels: saved 16, given 64"):
        train(wider, run_dir, progress=None)
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == before

    # what it was given, and the device count it trained on
    assert RunDir(run_dir).load_config() == RUN.replace(iterations=4, devices=1)
    assert Agent.load(run_dir).evaluate(
        np.zeros((1, *Agent.load(run_dir).env.observation_shape), np.float32))[0].shape == (1, 9)
    messages = []
    train(RUN, run_dir, progress=messages.append)
    assert any("config.json was missing; wrote it again (its program and seed are those "
               "checkpoint 4 records)" in m for m in messages)
    assert RunDir(run_dir).load_config() == RUN.replace(devices=1)


def test_checkpoints_without_a_config_anywhere_are_refused(tmp_path, trained):
    run_dir = copy_of(trained, 2, tmp_path / "run")
    (run_dir / CONFIG_FILE).unlink()
    manifest = RunDir(run_dir).checkpoints.step_dir(2) / MANIFEST_FILE
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "config": None}))
    with pytest.raises(RunDirError, match="no config.json"):
        train(RUN, run_dir, progress=None)
    assert not (run_dir / CONFIG_FILE).exists()


@pytest.mark.parametrize("damage", ["flipped bytes", "truncated data", "no _METADATA",
                                    "emptied", "no manifest"])
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, trained,
                                                                    straight, damage):
    run_dir = copy_of(trained, 6, tmp_path / "run")
    newest = RunDir(run_dir).checkpoints.step_dir(6)
    if damage == "flipped bytes":
        flip_bytes(params_file(run_dir, 6))
    elif damage == "truncated data":
        for path in data_files(run_dir, 6)[:3]:
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "no _METADATA":
        (newest / ITEM_DIR / "_METADATA").unlink()
    elif damage == "emptied":
        shutil.rmtree(newest)
        newest.mkdir()
    else:
        (newest / MANIFEST_FILE).unlink()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = Agent.load(run_dir)
    assert [w.category for w in caught] == [DamagedCheckpointWarning]
    assert "checkpoint 6" in str(caught[0].message) and "using checkpoint 4" in str(
        caught[0].message)
    step4 = RunDir(run_dir).checkpoints.restore(straight.train_state, step=4)
    assert leaves_equal(agent.params, step4.params)

    messages = []
    resumed = train(RUN, run_dir, progress=messages.append)
    assert any("damaged checkpoint 6" in m and "using checkpoint 4" in m for m in messages)
    assert any("resumed" in m and "iteration 4" in m for m in messages)
    assert any("dropped 2 records" in m for m in messages)
    # The same run as if never damaged, on disk too.
    assert leaves_equal(resumed.train_state.params, straight.train_state.params)
    assert leaves_equal(final_state(RUN, run_dir).params, straight.train_state.params)
    assert without_timing(RunDir(run_dir).metrics.read()) == without_timing(straight.records)
    assert RunDir(run_dir).checkpoints.verify(6) is None
    assert len(list((run_dir / DAMAGED_DIR).iterdir())) == 1


def test_no_intact_checkpoint_is_a_clear_error_and_nothing_is_overwritten(tmp_path, trained):
    run_dir = copy_of(trained, 4, tmp_path / "run")
    for step in (2, 4):
        flip_bytes(params_file(run_dir, step))
    metrics = (run_dir / METRICS_FILE).read_text()
    with pytest.raises(RunDirError, match="no intact checkpoint") as err:
        train(RunDir(run_dir).load_config().replace(iterations=6), run_dir, progress=None)
    assert "checkpoint 4" in str(err.value) and "checkpoint 2" in str(err.value)
    assert "\n" not in str(err.value)
    assert (run_dir / METRICS_FILE).read_text() == metrics
    assert RunDir(run_dir).checkpoints.steps() == [4, 2]
    with pytest.raises(RunDirError, match="no intact checkpoint"):
        Agent.load(run_dir)
    one_line_error(command(run_dir, "--iterations", "6"), "no intact checkpoint")


@pytest.mark.parametrize("damage", ["truncated", "garbled line", "deleted", "not appended"])
def test_damaged_metrics_are_repaired_from_the_checkpoint(tmp_path, trained, straight,
                                                          damage):
    run_dir = copy_of(trained, 4, tmp_path / "run")
    path = run_dir / METRICS_FILE
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    if damage == "truncated":
        path.write_text(text[: len(text) // 3])
    elif damage == "garbled line":
        path.write_text("".join(lines[:1] + ["{garbage\n"] + lines[2:]))
    elif damage == "deleted":
        path.unlink()
    else:  # killed between the checkpoint's manifest and the append of its records
        path.write_text("".join(lines[:2]))
    messages = []
    resumed = train(RUN, run_dir, progress=messages.append)
    expected = {
        "truncated": "metrics.jsonl was damaged (1 readable records, checkpoint 4 holds 4); "
                     "rewrote it from the checkpoint",
        "garbled line": "metrics.jsonl was damaged (3 readable records, checkpoint 4 holds 4)",
        "deleted": "metrics.jsonl lacked the records after iteration 0",
        "not appended": "metrics.jsonl lacked the records after iteration 2 (the process "
                        "stopped before appending them); added them from checkpoint 4",
    }[damage]
    assert any(expected in m for m in messages), messages
    assert without_timing(resumed.records) == without_timing(straight.records)
    records = RunDir(run_dir).metrics.read()
    assert without_timing(records) == without_timing(straight.records)
    times = [r["wall_time"] for r in records]
    assert times == sorted(times)  # the clock goes on from the checkpoint's records


def test_a_finished_run_with_truncated_metrics_does_not_train_again(tmp_path):
    config = SMALL.replace(iterations=4, max_minutes=1e-9)  # over after one iteration
    run_dir = tmp_path / "run"
    first = train(config, run_dir, progress=None)
    assert len(first.records) == 1
    path = run_dir / METRICS_FILE
    path.write_text("")
    messages = []
    again = train(config, run_dir, progress=messages.append)
    assert any("already used its" in m for m in messages)
    assert without_timing(again.records) == without_timing(first.records)
    assert int(again.train_state.iteration) == 1


def test_metrics_hold_only_checkpointed_iterations(tmp_path):
    run_dir = tmp_path / "run"

    class Stop(Exception):
        pass

    def stop_at_3(iterations):
        if iterations[0] >= 3:
            raise Stop

    from azjax import train_group
    with pytest.raises(Stop):
        train_group([RUN], [run_dir], progress=None, on_iteration=stop_at_3)
    assert [r["iteration"] for r in RunDir(run_dir).metrics.read()] == [1, 2]
    assert RunDir(run_dir).checkpoints.steps() == [2]


def test_a_diverging_run_stops_without_saving_the_diverged_state(tmp_path, trained,
                                                                  monkeypatch):
    run_dir = copy_of(trained, 2, tmp_path / "run")
    from azjax.driver import driver

    real = driver.group_step

    def poisoned(env, program, num, mesh=None):
        step = real(env, program, num, mesh)

        def run(state, active):
            state, metrics = step(state, active)
            return state, {**metrics, "loss": metrics["loss"] * np.nan}

        return run

    monkeypatch.setattr(driver, "group_step", poisoned)
    with pytest.raises(TrainingDiverged, match="loss is nan at iteration 3; nothing after "
                                               "iteration 2 was saved \\(train again in a "
                                               "new --run-dir"):
        train(RUN, run_dir, progress=None)
    assert RunDir(run_dir).checkpoints.steps() == [2]
    assert [r["iteration"] for r in RunDir(run_dir).metrics.read()] == [1, 2]


@pytest.mark.parametrize("where", ["empty", "a file", "under a file"])
def test_run_directories_that_cannot_be_refused_before_any_work(tmp_path, where):
    (tmp_path / "file").write_text("not a directory\n")
    run_dir = {"empty": "", "a file": tmp_path / "file",
               "under a file": tmp_path / "file" / "run"}[where]
    with pytest.raises(RunDirError):
        train(RUN, run_dir, progress=None)
    words = {"empty": "must not be empty", "a file": "is a file",
             "under a file": "which is a file"}[where]
    one_line_error(command(run_dir), words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert (tmp_path / "file").read_text() == "not a directory\n"


def test_unwritable_run_and_checkpoint_directories_are_one_line_errors(tmp_path):
    # /sys refuses new directories even to root, where chmod would not.
    one_line_error(command("/sys/azjax-run"), "cannot write to run directory")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / CHECKPOINT_DIR).write_text("in the way\n")
    one_line_error(command(run_dir, "--iterations", "2"), "checkpoints' is a file")
    assert sorted(p.name for p in run_dir.iterdir()) == [CHECKPOINT_DIR]


def test_a_full_disk_is_one_line_and_the_run_resumes_after(tmp_path):
    """A file size limit (as a full disk: writes fail) hits the first checkpoint, in a
    process of its own; the same command, without the limit, resumes the run."""
    run_dir = tmp_path / "run"
    # Without JAX's cache settings, the script keeps its own compilation cache (the
    # tests': AZJAX_COMPILE_CACHE), whose writes may fail under the limit unsaid; on the
    # one device this process computes on, it runs (and loads) this process's programs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["JAX_NUM_CPU_DEVICES"] = "1"

    result = cli(run_dir, "--iterations", "4", env=env, max_file_bytes=10_000)
    one_line_error(result, "could not write the checkpoint of iteration 2",
                   "File too large")
    checkpoints = RunDir(run_dir).checkpoints
    assert checkpoints.steps() == [] or checkpoints.verify(2) is not None
    assert RunDir(run_dir).metrics.read() == []
    resumed = command(run_dir, "--iterations", "4")
    assert resumed.returncode == 0, resumed.stderr
    assert [r["iteration"] for r in RunDir(run_dir).metrics.read()] == [1, 2, 3, 4]


def test_a_first_save_that_did_not_finish_starts_the_run_afresh(tmp_path, trained):
    """Killed after orbax's arrays of the first checkpoint, before its manifest: nothing
    of the run was committed, so it starts again (and says so) rather than refusing."""
    run_dir = copy_of(trained, 2, tmp_path / "run")
    config = RUN.replace(iterations=2)
    first = trained(2)[1]
    (RunDir(run_dir).checkpoints.step_dir(2) / MANIFEST_FILE).unlink()
    (run_dir / METRICS_FILE).write_text("")  # records follow the manifest
    messages = []
    again = train(config, run_dir, progress=messages.append)
    assert any("checkpoint 2: it is incomplete" in m and "starting afresh" in m
               for m in messages)
    assert not any("resumed" in m for m in messages)
    assert without_timing(again.records) == without_timing(first.records)
    assert leaves_equal(again.train_state.params, first.train_state.params)
    assert RunDir(run_dir).checkpoints.verify(2) is None


def test_a_checked_checkpoint_that_fails_to_restore_is_an_error_not_damage(tmp_path,
                                                                           trained):
    run_dir = copy_of(trained, 2, tmp_path / "run")
    env = RUN.make_env()
    other = init_train_state(env, RUN.replace(replay_capacity=4096).program,
                             jax.random.key(0))
    with pytest.raises(RunDirError, match="checkpoint 2 of .* passed its checksums but "
                                               "cannot be read"):
        RunDir(run_dir).checkpoints.restore_newest(other)
    # A state whose fields changed since the run was written (a new field in a game's
    # state, as Go's superko hashes): the same error, saying why and what still works.
    changed = {"state": init_train_state(env, RUN.program, jax.random.key(0)),
               "new field": jnp.zeros(2)}
    with pytest.raises(RunDirError, match="laid out otherwise than this version of "
                                               "azjax .* its network still loads"):
        RunDir(run_dir).checkpoints.restore_newest(changed)
    # A new array beside a new field left None (a setting off): the None field alone
    # may be missing from an older checkpoint (tests/test_old_runs.py), an array not.
    changed["off"] = None
    with pytest.raises(RunDirError, match="laid out otherwise than this version of "):
        RunDir(run_dir).checkpoints.restore_newest(changed)
    assert RunDir(run_dir).checkpoints.steps() == [2]
    assert not (run_dir / DAMAGED_DIR).exists()


def poison(monkeypatch, experiment: int, after: int, what: str):
    """Makes the jitted step report a NaN loss (or NaN parameters) for `experiment` from
    iteration `after` + 1 on."""
    from azjax.driver import driver

    real = driver.group_step

    def poisoned(env, program, num, mesh=None):
        step = real(env, program, num, mesh)

        def run(state, active):
            state, metrics = step(state, active)
            hit = (np.arange(num) == experiment) & (counters.array(state.iteration) > after)
            if what == "loss":
                metrics = {**metrics, "loss": np.where(hit, np.nan, metrics["loss"])}
            else:
                state = state.replace(params=jax.tree.map(
                    lambda x: np.where(hit.reshape((-1,) + (1,) * (x.ndim - 1)), np.nan, x),
                    state.params))
            return state, metrics

        return run

    monkeypatch.setattr(driver, "group_step", poisoned)


def test_non_finite_parameters_are_never_saved(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    poison(monkeypatch, 0, after=3, what="params")  # the loss of iteration 4 is finite
    with pytest.raises(TrainingDiverged, match="the network's parameters are not finite at "
                                               "iteration 4; nothing after iteration 2"):
        train(RUN, run_dir, progress=None)
    assert RunDir(run_dir).checkpoints.steps() == [2]


def test_one_diverging_experiment_of_a_group_stops_alone(tmp_path, monkeypatch):
    from azjax import train_group
    configs = [RUN, RUN.replace(seed=1)]
    run_dirs = [tmp_path / "e0", tmp_path / "e1"]
    poison(monkeypatch, 1, after=2, what="loss")
    messages = []
    results = train_group(configs, run_dirs, progress=messages.append)
    assert any(m.startswith("[e1] training diverged: loss is nan at iteration 3")
               and "the other experiments go on" in m for m in messages)
    assert RunDir(run_dirs[0]).checkpoints.steps() == [6, 4, 2]
    assert RunDir(run_dirs[1]).checkpoints.steps() == [2]
    assert [r["iteration"] for r in results[0].records] == list(range(1, 7))
    assert [r["iteration"] for r in RunDir(run_dirs[1]).metrics.read()] == [1, 2]
