"""Runs that survive interruption: exact resume (twice), a process killed during a save."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from test_training import ROOT, SMALL, leaves_equal

from azjax import TrainConfig, train
from azjax import checkpoint as ckpt
from azjax.loop import init_train_state

# Fields that measure the machine, not the run.
TIMING = ("wall_time", "positions_per_s")

RESUMABLE = dataclasses.replace(
    SMALL, iterations=6, eval_every=2, eval_search_every=2, checkpoint_every=2,
    eval_opponents=("random",), eval_games=8,
)


class Interrupted(Exception):
    pass


def interrupt_after(iteration: int):
    """A progress callback that stops training once it reports `iteration`."""

    def progress(message: str) -> None:
        if message.startswith("it ") and int(message.split("|")[0].split()[1]) >= iteration:
            raise Interrupted

    return progress


def without_timing(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def final_state(config: TrainConfig, run_dir: Path):
    env = config.make_env()
    manager = ckpt.checkpoint_manager(run_dir)
    try:
        return ckpt.restore(manager, init_train_state(env, config, jax.random.key(0)))
    finally:
        manager.close()


def test_twice_interrupted_run_matches_the_uninterrupted_run(tmp_path):
    straight = train(RESUMABLE, tmp_path / "straight", progress=None)

    run_dir = tmp_path / "interrupted"
    for stop in (3, 5):  # killed after iterations 3 and 5; checkpoints at 2 and 4
        with pytest.raises(Interrupted):
            train(RESUMABLE, run_dir, progress=interrupt_after(stop))
        assert ckpt.read_metrics(run_dir)[-1]["iteration"] == stop - 1
    messages = []
    resumed = train(RESUMABLE, run_dir, progress=messages.append)
    assert "resumed" in messages[0] and "iteration 4" in messages[0]

    records = ckpt.read_metrics(run_dir)
    assert [r["iteration"] for r in records] == list(range(1, 7))
    # Evaluation history included: network, search and arena metrics at 2, 4 and 6.
    assert {"net_optimal_share", "search_optimal_share", "vs random"} <= set(records[-1])
    assert "search_optimal_share" in records[3]
    assert without_timing(records) == without_timing(straight.records)
    assert without_timing(records) == without_timing(ckpt.read_metrics(tmp_path / "straight"))
    a, b = straight.train_state, resumed.train_state
    for field in ("params", "opt_state", "replay", "selfplay", "iteration", "games", "positions"):
        assert leaves_equal(getattr(a, field), getattr(b, field)), field
    assert np.array_equal(jax.random.key_data(a.key), jax.random.key_data(b.key))
    # What is on disk is that same state.
    assert leaves_equal(final_state(RESUMABLE, run_dir).params, a.params)


KILLED_ARGS = [
    "--network.channels", "32", "--network.policy-filters", "8",
    "--search.num-simulations", "8", "--selfplay.num-games", "32",
    "--learner.batch-size", "64", "--replay-capacity", "2048", "--gradient-steps", "8",
    "--iterations", "10", "--eval-every", "2", "--eval-search-every", "0",
    "--checkpoint-every", "1", "--no-stop-when-perfect",
]


def start_training(run_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "experiments" / "tictactoe.py"), "--run-dir", str(run_dir),
         *KILLED_ARGS],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )


def kill_during_a_save(process: subprocess.Popen, checkpoints: Path, after_step: int) -> bool:
    """SIGKILLs `process` as soon as orbax is writing a checkpoint past `after_step`
    (a temporary directory appears); True if it was caught mid-save."""
    deadline = time.monotonic() + 240
    while process.poll() is None and time.monotonic() < deadline:
        names = os.listdir(checkpoints) if checkpoints.is_dir() else []
        steps = [int(n) for n in names if n.isdigit()]
        if steps and max(steps) >= after_step and any("tmp" in n for n in names):
            process.send_signal(signal.SIGKILL)
            process.wait()
            return True
        time.sleep(0.0005)
    process.kill()
    process.wait()
    return False


def test_a_process_killed_during_a_save_resumes_and_loses_nothing_complete(tmp_path):
    run_dir = tmp_path / "run"
    killed = start_training(run_dir)
    assert kill_during_a_save(killed, run_dir / "checkpoints", after_step=3)
    assert killed.returncode == -signal.SIGKILL
    complete = sorted(int(n) for n in os.listdir(run_dir / "checkpoints") if n.isdigit())
    last = complete[-1]
    logged = [r["iteration"] for r in ckpt.read_metrics(run_dir)]
    assert last >= 3 and logged[-1] >= last  # the records of every complete checkpoint

    resumed = start_training(run_dir)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert f"resumed {run_dir} at iteration {last}" in out

    config = ckpt.load_config(run_dir)
    straight = train(config, tmp_path / "straight", progress=None)
    assert without_timing(ckpt.read_metrics(run_dir)) == without_timing(straight.records)
    assert leaves_equal(final_state(config, run_dir).params, straight.train_state.params)
