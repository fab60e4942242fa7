"""Runs that survive interruption: exact resume (twice), a process killed during a save.

Both kinds of run go through the one driver: a plain run (`train`, one experiment) and a
sweep's compile group (`train_group`, several experiments vmapped in one program, each
with a run directory of its own)."""

from __future__ import annotations

import json
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

from azjax import TrainConfig, train, train_group
from azjax import checkpoint as ckpt
from azjax.loop import init_train_state
from azjax.sweep import merge, parse_params, run_sweep

# Fields that measure the machine, not the run.
TIMING = ("wall_time", "positions_per_s")

RESUMABLE = SMALL.replace(
    iterations=6, eval_every=2, eval_search_every=2, checkpoint_every=2,
    eval_opponents=("random",), eval_games=8,
)
# A compile group of two experiments: another seed and another learning rate (traced).
GROUP = [RESUMABLE, RESUMABLE.replace(
    seed=1, learner=RESUMABLE.program.learner.replace(learning_rate=1e-2))]


class Interrupted(Exception):
    pass


def interrupt_after(iteration: int):
    """An `on_iteration` callback that stops training once every experiment has done
    `iteration` iterations (after their records and checkpoints of that iteration)."""

    def on_iteration(iterations: list[int]) -> None:
        if min(iterations) >= iteration:
            raise Interrupted

    return on_iteration


def without_timing(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def final_state(config: TrainConfig, run_dir: Path):
    env = config.make_env()
    manager = ckpt.checkpoint_manager(run_dir)
    try:
        return ckpt.restore(manager, init_train_state(env, config.program, jax.random.key(0)))
    finally:
        manager.close()


@pytest.mark.parametrize("kind", ["run", "group"])
def test_twice_interrupted_run_matches_the_uninterrupted_run(tmp_path, kind):
    configs = [RESUMABLE] if kind == "run" else GROUP
    names = [f"e{i}" for i in range(len(configs))]
    straight = train_group(configs, [tmp_path / "straight" / n for n in names], progress=None)

    run_dirs = [tmp_path / "interrupted" / n for n in names]
    for stop in (3, 5):  # killed after iterations 3 and 5; checkpoints at 2 and 4
        with pytest.raises(Interrupted):
            train_group(configs, run_dirs, progress=None, on_iteration=interrupt_after(stop))
        for run_dir in run_dirs:  # records are written with the checkpoint they belong to
            assert ckpt.read_metrics(run_dir)[-1]["iteration"] == stop - 1
    messages = []
    resumed = train_group(configs, run_dirs, progress=messages.append)
    assert sum("resumed" in m and "iteration 4" in m for m in messages) == len(configs)

    for config, run_dir, a, b in zip(configs, run_dirs, straight, resumed):
        records = ckpt.read_metrics(run_dir)
        assert [r["iteration"] for r in records] == list(range(1, 7))
        # Evaluation history included: network, search and arena metrics at 2, 4 and 6.
        assert {"net_optimal_share", "search_optimal_share", "vs random"} <= set(records[-1])
        assert "search_optimal_share" in records[3]
        assert without_timing(records) == without_timing(a.records)
        assert without_timing(records) == without_timing(ckpt.read_metrics(
            tmp_path / "straight" / run_dir.name))
        s, r = a.train_state, b.train_state
        for field in ("params", "opt_state", "replay", "selfplay", "iteration", "games",
                      "positions"):
            assert leaves_equal(getattr(s, field), getattr(r, field)), field
        assert np.array_equal(jax.random.key_data(s.key), jax.random.key_data(r.key))
        # What is on disk is that same state.
        assert leaves_equal(final_state(config, run_dir).params, s.params)
    if kind == "group":  # the two experiments really differ
        assert not leaves_equal(straight[0].train_state.params, straight[1].train_state.params)


def test_a_group_resumes_experiments_cut_off_between_their_saves(tmp_path):
    """A kill between two experiments' saves leaves one a checkpoint behind: the resumed
    group brings it level first, and both end as the uninterrupted group ends."""
    names = ("e0", "e1")
    straight = train_group(GROUP, [tmp_path / "straight" / n for n in names], progress=None)
    run_dirs = [tmp_path / "cut" / n for n in names]
    with pytest.raises(Interrupted):
        train_group(GROUP, run_dirs, progress=None, on_iteration=interrupt_after(4))
    # As if killed after e0's checkpoint of iteration 4 but before e1's.
    ckpt_dir = run_dirs[1] / "checkpoints" / "4"
    for path in sorted(ckpt_dir.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    ckpt_dir.rmdir()
    messages = []
    resumed = train_group(GROUP, run_dirs, progress=messages.append)
    assert any("[e0] resumed" in m and "iteration 4" in m for m in messages)
    assert any("[e1] resumed" in m and "iteration 2" in m for m in messages)
    for run_dir, a, b in zip(run_dirs, straight, resumed):
        assert without_timing(ckpt.read_metrics(run_dir)) == without_timing(a.records)
        assert leaves_equal(a.train_state.params, b.train_state.params)


KILLED_ARGS = [
    "--network.channels", "32", "--network.policy-filters", "8",
    "--search.num-simulations", "8", "--selfplay.num-games", "32",
    "--learner.batch-size", "64", "--replay-capacity", "2048", "--gradient-steps", "8",
    "--iterations", "10", "--eval-every", "2", "--eval-search-every", "0",
    "--checkpoint-every", "1", "--no-stop-when-perfect",
]
SWEPT = ["--param", "learning_rate=0.001,0.003", "--seeds", "1"]


def start(kind: str, out: Path) -> subprocess.Popen:
    if kind == "run":
        command = [ROOT / "experiments" / "tictactoe.py", "--run-dir", out]
    else:
        command = [ROOT / "experiments" / "sweep.py", "--game", "tictactoe", "--out", out,
                   *SWEPT]
    return subprocess.Popen(
        [sys.executable, *map(str, command), *KILLED_ARGS],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )


def checkpoint_dirs(kind: str, out: Path) -> list[Path]:
    if kind == "run":
        return [out / "checkpoints"]
    # <out>/runs/learning_rate=<v>/seed=0/checkpoints (not a recursive walk: orbax
    # renames directories inside checkpoints/ while it saves)
    return sorted((out / "runs").glob("*/*/checkpoints"))


def kill_during_a_save(process: subprocess.Popen, kind: str, out: Path, after_step: int
                       ) -> bool:
    """SIGKILLs `process` as soon as orbax is writing a checkpoint past `after_step`
    (a temporary directory appears); True if it was caught mid-save."""
    deadline = time.monotonic() + 240
    while process.poll() is None and time.monotonic() < deadline:
        for checkpoints in checkpoint_dirs(kind, out):
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


@pytest.mark.parametrize("kind", ["run", "group"])
def test_a_process_killed_during_a_save_resumes_and_loses_nothing_complete(tmp_path, kind):
    out = tmp_path / "out"
    killed = start(kind, out)
    assert kill_during_a_save(killed, kind, out, after_step=3)
    assert killed.returncode == -signal.SIGKILL
    run_dirs = [d.parent for d in checkpoint_dirs(kind, out)]
    assert len(run_dirs) == (1 if kind == "run" else 2)
    lasts = {}
    for run_dir in run_dirs:
        complete = sorted(int(n) for n in os.listdir(run_dir / "checkpoints") if n.isdigit())
        logged = [r["iteration"] for r in ckpt.read_metrics(run_dir)]
        assert complete and logged[-1] >= complete[-1]  # the records of every checkpoint
        lasts[run_dir] = complete[-1]
    assert max(lasts.values()) >= 3

    resumed = start(kind, out)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    for run_dir, last in lasts.items():
        assert f"resumed {run_dir} at iteration {last}" in stdout

    if kind == "run":
        config = ckpt.load_config(out)
        straight = train(config, tmp_path / "straight", progress=None)
        assert without_timing(ckpt.read_metrics(out)) == without_timing(straight.records)
        assert leaves_equal(final_state(config, out).params, straight.train_state.params)
        return
    # The same sweep, never killed, in this process.
    saved = json.loads((out / "sweep.json").read_text())
    base = TrainConfig.from_dict(saved["base"])
    reference = tmp_path / "straight"
    run_sweep(base, parse_params(SWEPT[1:2]), [0], reference, write=None)
    for run_dir in run_dirs:
        twin = reference / run_dir.relative_to(out)
        assert without_timing(ckpt.read_metrics(run_dir)) == without_timing(
            ckpt.read_metrics(twin))
        config = ckpt.load_config(run_dir)
        assert leaves_equal(final_state(config, run_dir).params,
                            final_state(config, twin).params)
    assert [r["config"] for r in merge(out, write=None).table] == [
        r["config"] for r in merge(reference, write=None).table]
