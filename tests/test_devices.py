"""Training split over devices: two host devices in one process, two processes of one
device each (jax.distributed on 127.0.0.1 with CPU collectives), replay sampling per
device, and the errors for device counts that cannot be used.

The session runs on one CPU device (conftest); runs on two devices are experiment
scripts started here with `--devices 2`, sharing the session's compilation cache.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import pytest
from binomial import FALSE_FAILURE, interval
from test_training import ROOT

from azjax import Agent, TrainConfig, train
from azjax.core.device_split import nearest_multiple, per_device
from azjax.core.iteration import init_train_state
from azjax.run.directory.layout import CONFIG_FILE, METRICS_FILE, RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.run.process.devices import arrange, device_count, misfits
from azjax.run.recipes import RECIPES, recipe

SCRIPT = ROOT / "experiments" / "tictactoe.py"
# A small tic-tac-toe run: 4 iterations, evaluated (network alone) and checkpointed at 2
# and 4.
ITERATIONS = 4
OPTIONS = [
    "--selfplay.num-games", "16", "--learner.batch-size", "32", "--replay-capacity", "1152",
    "--gradient-steps", "4", "--network.channels", "16", "--network.policy-filters", "4",
    "--search.num-simulations", "8", "--iterations", str(ITERATIONS), "--eval-every", "2",
    "--eval-search-every", "0", "--checkpoint-every", "2", "--no-stop-when-perfect",
]
TIMING = ("wall_time", "positions_per_s")


def script(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, str(SCRIPT), *OPTIONS, "--run-dir", str(run_dir), *extra]


def free_port() -> int:
    """A port free now; another process may take it before the coordinator binds it, so
    the processes of a run are started with `launch`, which retries on a new port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# What process 0 writes when jax.distributed's coordinator cannot bind its port.
PORT_TAKEN = ("Failed to start RPC server", "Failed to add port to server", "the port is taken")


def launch(commands: Callable[[int], list[list[str]]], logs: list[Path], cwd: Path,
           tries: int = 3, limit: float = 240) -> list[subprocess.Popen]:
    """Starts the processes of one run, `commands(port)` (process 0 first) with the
    coordinator at `port`, process i's output in `logs[i]`.out and .err; when process 0
    exits because another process took the port since `free_port`, kills them all and
    starts again on a new port (`tries` times in all). Waits until process 0 has written
    output or exited (at most `limit` s) to know its port was bound."""
    for _ in range(tries):
        port = free_port()
        processes = []
        for command, log in zip(commands(port), logs, strict=True):
            with open(f"{log}.out", "w") as out, open(f"{log}.err", "w") as err:
                processes.append(subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd))
        first, out, err = processes[0], Path(f"{logs[0]}.out"), Path(f"{logs[0]}.err")
        deadline = time.monotonic() + limit
        while first.poll() is None and not out.stat().st_size and time.monotonic() < deadline:
            time.sleep(0.1)
        if first.poll() is None or not any(m in err.read_text() for m in PORT_TAKEN):
            return processes
        for process in processes:
            process.kill()
            process.wait()
    raise AssertionError(f"the coordinator's port was taken {tries} times: "
                         f"{err.read_text()[-2000:]}")


def records(run_dir: Path) -> list[dict]:
    lines = (run_dir / METRICS_FILE).read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in lines]


def saved_state(run_dir: Path):
    """The run's newest checkpoint, restored whole on this process's one device."""
    config = RunDir(run_dir).load_config()
    template = init_train_state(config.make_env(), config.program, jax.random.key(0))
    restored = RunDir(run_dir).checkpoints.restore_newest(template)
    return restored.step, restored.tree


def same_leaves(a, b) -> bool:
    def data(x):
        return jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype,
                                                              jax.dtypes.prng_key) else x
    pairs = zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    return all(np.array_equal(np.asarray(data(x)), np.asarray(data(y))) for x, y in pairs)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The same run twice: in one process on two host devices, and by two processes of
    one device each (its tests run with `pytest -m slow`). The first is also the
    uninterrupted run that a run on two devices, stopped and resumed, must repeat."""
    out = tmp_path_factory.mktemp("devices")
    dirs = {name: out / name for name in ("two_devices", "two_processes")}
    done = subprocess.run(script(dirs["two_devices"], "--devices", "2"), capture_output=True,
                          check=False, text=True, timeout=300, cwd=out)
    assert done.returncode == 0, done.stderr[-2000:]
    logs = [out / "first_process", out / "second_process"]
    processes = launch(lambda port: [
        script(dirs["two_processes"], "--devices", "2", "--num-processes", "2",
               "--process-id", str(i), "--coordinator-address", f"127.0.0.1:{port}")
        for i in range(2)], logs, cwd=out)
    try:
        codes = [process.wait(timeout=300) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    for code, log in zip(codes, logs):
        assert code == 0, Path(f"{log}.err").read_text()[-2000:]
    return dirs


@pytest.mark.slow  # the `runs` fixture: three processes, ~55 s
def test_two_processes_train_the_run_two_devices_of_one_process_train(runs):
    """Bit for bit: the same seed on two devices, however they are spread over processes,
    is the same run (so a run on two devices repeats itself exactly)."""
    ours, theirs = runs["two_processes"], runs["two_devices"]
    assert records(ours) == records(theirs)
    step, state = saved_state(ours)
    assert step == ITERATIONS and int(state.iteration) == ITERATIONS
    assert int(state.games) == records(theirs)[-1]["games"]
    assert same_leaves(state, saved_state(theirs)[1])
    out = ours.parent
    assert f"it {ITERATIONS:5d}" in (out / "first_process.out").read_text()
    second = (out / "second_process.out").read_text()  # process 0 alone reports
    assert "it " not in second and "run directory" not in second
    agent = Agent.load(ours)
    assert same_leaves(agent.params, Agent.load(theirs).params)
    states = jax.vmap(agent.env.init)(jax.random.split(jax.random.key(1), 8))
    actions = np.asarray(agent.act(states, jax.random.key(2)))
    assert np.asarray(states.legal_action_mask)[np.arange(8), actions].all()


@pytest.mark.slow  # the `runs` fixture: three processes, ~55 s
def test_the_two_devices_play_different_games(runs):
    _, state = saved_state(runs["two_devices"])
    boards = np.asarray(state.selfplay.state.observation).reshape(16, -1)
    first, second = boards[:8], boards[8:]
    assert not np.array_equal(first, second)  # each device has a key of its own
    replay = state.replay.data
    assert (np.asarray(replay.slot) < 8).all()  # each ring holds its own device's games
    assert not np.array_equal(np.asarray(replay.policy[:576]), np.asarray(replay.policy[576:]))


@pytest.mark.slow  # the `runs` fixture: three processes, ~55 s
def test_a_run_resumes_only_on_the_device_count_it_was_trained_on(runs):
    config = RunDir(runs["two_devices"]).load_config()
    with pytest.raises(RunDirError) as err:
        train(config.replace(devices=1), runs["two_devices"], progress=None)
    assert "trained on 2 devices" in str(err.value) and "--devices 2" in str(err.value)
    assert records(runs["two_devices"])[-1]["iteration"] == ITERATIONS  # nothing was written


def test_each_device_samples_its_own_ring_uniformly():
    rounds = 4000
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "two_devices.py"),
                           str(rounds)], capture_output=True, check=False, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    sampleable = [1, 3, 4, 6, 9, 11, 12, 14]
    assert out["first_device"] == [1, 3, 4, 6] and out["second_device"] == [9, 11, 12, 14]
    draws = out["draws"]
    assert sum(out["counts"][i] for i in sampleable) == draws  # never an unknown outcome
    # Nine two-sided binomial bounds, each at FALSE_FAILURE / 9 (split over its two
    # tails by `interval`): family-wise false-failure rate < 1e-3 (Bonferroni).
    alpha = FALSE_FAILURE / 9
    # uniform over each ring: a device draws draws / 2 times (with replacement), each
    # time one of its 4 sampleable entries with chance 1/4, so each count ~ B(draws/2, 1/4)
    low, high = interval(draws // 2, 1 / 4, alpha)
    for i in sampleable:
        assert low <= out["counts"][i] <= high, (i, out["counts"])
    # independent keys: the devices pick the same local entry 1/4 of the time, not always
    pairs = draws // 2
    low, high = interval(pairs, 1 / 4, alpha)
    assert low <= out["same_local_index"] <= high


INIT_PLACED = """
import sys, tempfile
from pathlib import Path
import jax, numpy as np
jax.config.update("jax_num_cpu_devices", 2)
from azjax.run.process.devices import data_mesh
from azjax.run.directory.run_dir import RunDir
from azjax.core.iteration import init_train_state
from azjax.run.recipes import RECIPES, recipe
from azjax.core.stacked import init_placed, placed
config = recipe("tictactoe", "cpu")
program = config.program
env, mesh, key = program.make_env(), data_mesh(2), jax.random.key(5)
state = init_placed(env, program, key, mesh)
ours = jax.tree.leaves(state)
theirs = jax.tree.leaves(placed(init_train_state(env, program, key), mesh, stacked=False))
def data(x):
    return jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x
def same(a, b):
    return len(a) == len(b) and all(np.array_equal(np.asarray(data(x)), np.asarray(data(y)))
                                    for x, y in zip(a, b))
assert same(ours, theirs) and all(x.sharding == y.sharding for x, y in zip(ours, theirs))
split = [x for x in ours if not x.sharding.is_fully_replicated]
halves = [len({str(s.index) for s in x.addressable_shards}) for x in split]
compiled = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, *_, **__: compiled.append(event) if "backend_compile" in event else None)
run_dir = Path(tempfile.mkdtemp())
checkpoints = RunDir(run_dir).checkpoints
checkpoints.open_for_saving()
checkpoints.save(1, state, config, records=[])
checkpoints.close()
saving_compiled = len(compiled)
restored = checkpoints.restore_newest(state)
assert restored.step == 1 and same(jax.tree.leaves(restored.tree), ours)
print(len(ours), len(split), min(halves), saving_compiled)
"""


def test_a_fresh_state_is_made_where_placing_it_would_put_it_and_saves_as_it_is():
    """`init_placed` on two host devices is the state `placed` lays out from
    `init_train_state`: leaf for leaf the same sharding and the same bits, the games and
    the replay ring split in two halves (one program, not a copy per leaf). Saving it
    compiles nothing (each replicated array is written whole, not sliced per replica op
    by op) and it restores bit for bit."""
    done = subprocess.run([sys.executable, "-c", INIT_PLACED], capture_output=True,
                          check=False, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    leaves, split, halves, saving_compiled = map(int, done.stdout.split())
    assert leaves > 20 and split >= 10 and halves == 2 and saving_compiled == 0


def test_sizes_that_do_not_split_name_the_nearest_that_do():
    assert [nearest_multiple(v, 4) for v in (1, 4, 5, 6, 7, 255)] == [4, 4, 4, 8, 8, 256]
    program = recipe("tictactoe", "cpu").with_value("selfplay.num_games", 255).program
    assert misfits(program, 2) == [
        "selfplay.num_games 255 is not a multiple of 2 (nearest that is: 256)"]
    assert misfits(recipe("tictactoe", "cpu").program, 2) == []
    with pytest.raises(ValueError, match="only 1 device here"):
        device_count(2, recipe("tictactoe", "cpu").program)
    assert device_count(0, program) == (1, None)


EVERY_SPLIT = """
import json, sys, tempfile
from pathlib import Path
import jax
from azjax.core.device_split import per_device
from azjax.driver.preflight import _devices
from azjax.driver.warm_up import warm_up_config
from azjax.run.process.devices import device_count
from azjax.run.recipes import PRESETS, RECIPES, recipe
from azjax.run.directory.run_dir import RunDir
assert jax.device_count() == 16
out = []
for name in RECIPES:
    for preset in PRESETS:
        config = recipe(name, preset)
        for count in range(1, 17):
            run_dir = RunDir(Path(tempfile.mkdtemp()) / "run")
            asked = config.replace(devices=count)
            warm = warm_up_config(asked, run_dir) if config.run.warm_up else None
            row = {"recipe": name, "preset": preset, "count": count}
            try:
                configs, warms, mesh = _devices([asked], [run_dir], [warm], print)
            except ValueError as error:
                row["refused"] = str(error)
            else:
                # What each device runs, for the run and its warm-up: the shares, each
                # device's fully searched games, and the whole run's rules kept whole.
                for program in [configs[0].program] + [w.program for w in warms if w]:
                    share = per_device(program, count)
                    assert share.selfplay.num_games * count == program.selfplay.num_games
                    assert share.selfplay.full_search_games >= 1
                    assert (share.selfplay.full_search_games * count
                            == program.selfplay.full_search_games)
                    assert share.replay_capacity * count == program.replay_capacity
                row["mesh"] = 1 if mesh is None else mesh.size
            # Automatic: `count` devices there, every one of them asked for.
            chosen, _ = device_count(0, config.program, [warm.program] if warm else [],
                                     available=count)
            per_device(config.program, chosen)
            if warm:
                per_device(warm.program, chosen)
            row["automatic"] = chosen
            out.append(row)
print(json.dumps(out))
"""


def test_every_recipe_fits_or_is_refused_in_one_line_on_1_to_16_devices():
    """Every shipped recipe, in each preset, on 1 to 16 host devices, config level: the
    run and its warm-up split over the devices (each device's share is a program of its
    own, with a whole number of fully searched games), or the count is refused in one
    line that names the devices, before anything would train; with every device
    offered, the automatic count is one that splits. go9x9 splits over 8, its whole-run
    rule (learn_after against the whole replay) not checked again on a device's share."""
    done = subprocess.run(
        [sys.executable, "-c", EVERY_SPLIT], capture_output=True, check=False, text=True,
        timeout=300, cwd=ROOT,
        env={**os.environ, "JAX_NUM_CPU_DEVICES": "16",
             "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=16")})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.splitlines()[-1])
    assert len(rows) == len(RECIPES) * 2 * 16
    for row in rows:
        if "refused" in row:
            message = row["refused"]
            assert "\n" not in message and message.startswith(
                f"cannot split the run over {row['count']} devices: "), row
        else:
            assert row["mesh"] == row["count"], row
        assert 1 <= row["automatic"] <= row["count"]
    fits = {(r["recipe"], r["preset"], r["count"]) for r in rows if "refused" not in r}
    for preset in ("cpu", "gpu"):
        assert {("go9x9", preset, n) for n in (1, 2, 4, 8, 16)} <= fits
        assert {(name, preset, 8) for name in RECIPES} <= fits
    assert ("go9x9", "gpu", 3) not in fits  # 1,024 games do not split over 3


def test_a_playout_cap_share_is_a_whole_number_of_games_on_every_device():
    """A quarter of 12 games is 3 a move, but a quarter of each device's 6 is not whole:
    refused with the nearest game count that is, and skipped by the automatic count."""
    program = recipe("go7x7", "gpu").with_values({
        "selfplay.num_games": 12, "learner.batch_size": 12, "replay_capacity": 12 * 8 * 64,
        "learn_after": 0}).program
    assert program.selfplay.full_search_games == 3
    assert misfits(program, 1) == []
    assert misfits(program, 2) == [
        "selfplay.full_search_prob x selfplay.num_games per device must be a whole number "
        "of fully searched games, at least 1, on each of the 2 devices: 0.25 x 12 / 2 = 1.5 "
        "(nearest selfplay.num_games that is: 16)"]
    with pytest.raises(ValueError, match="cannot split the run over 2 devices: selfplay"):
        per_device(program, 2)
    assert device_count(0, program, available=2)[0] == 1
    assert device_count(0, program, available=3)[0] == 3  # 0.25 x 4 = 1 on each
    assert device_count(0, program.replace(selfplay=program.selfplay.replace(
        num_games=16)), available=4)[0] == 4


@pytest.mark.parametrize("kwargs, message", [
    ({"devices": -1}, "--devices must be an integer >= 0"),
    ({"num_processes": 2}, "need --coordinator-address HOST:PORT"),
    ({"num_processes": 2, "process_id": 2, "coordinator_address": "h:1"},
     "--process-id must be below --num-processes"),
    ({"devices": 3, "num_processes": 2, "coordinator_address": "h:1"},
     "cannot be split evenly over 2 processes"),
    ({"coordinator_address": "h:1"}, "needs --num-processes of 2 or more"),
    ({"devices": 2}, "JAX has already started its devices"),
])
def test_bad_device_arrangements_are_one_clear_error(kwargs, message):
    jax.devices()  # this session's JAX is running
    with pytest.raises(ValueError, match=message):
        arrange(**kwargs)


def test_a_device_count_the_batch_does_not_split_over_is_one_error_line(tmp_path):
    run_dir = tmp_path / "run"
    done = subprocess.run(script(run_dir, "--devices", "3"), capture_output=True,
                          check=False, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot split the run over 3 "), lines
    assert "selfplay.num_games 16 is not a multiple of 3 (nearest that is: 15)" in lines[0]
    assert "learner.batch_size 32 is not a multiple of 3 (nearest that is: 33)" in lines[0]
    assert not run_dir.exists()


@pytest.mark.slow  # the `runs` fixture: three processes, ~55 s
def test_train_config_records_the_device_count(runs):
    saved = json.loads((runs["two_processes"] / CONFIG_FILE).read_text())
    assert saved["run"]["devices"] == 2
    assert TrainConfig.from_dict(saved).run.devices == 2


@pytest.mark.slow  # the `runs` fixture: three processes, ~55 s
def test_process_0_alone_records_the_provenance_of_a_run_of_two(runs):
    """One provenance.jsonl record for the run (process 0's), counting both processes."""
    [record] = RunDir(runs["two_processes"]).read_provenance()
    assert (record["iteration"], record["processes"], record["devices"]) == (0, 2, 2)
    assert record["script"] == str(SCRIPT) and " --process-id 0 " in record["command"]


@pytest.mark.slow  # the `runs` fixture, and two runs on two devices
def test_a_run_on_two_devices_resumes_exactly(runs, tmp_path):
    """Stopped after iteration 2 and resumed, a run on two devices is the run that was
    never stopped (the fixture's, in one process on two devices), bit for bit."""
    whole, cut = runs["two_devices"], tmp_path / "cut"
    commands = [script(cut, "--devices", "2", "--iterations", "2"),
                script(cut, "--devices", "2")]
    for command in commands:
        done = subprocess.run(command, capture_output=True, check=False, text=True, timeout=300,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
    assert f"resumed {cut} at iteration 2" in done.stdout
    assert records(whole) == records(cut)
    assert same_leaves(saved_state(whole)[1], saved_state(cut)[1])
