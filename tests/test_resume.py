"""Runs that survive interruption: exact resume (twice), a process killed during a save,
run options changed on resume (the program may not change).

Both kinds of run go through the one driver: a plain run (`train`, one experiment) and a
sweep's compile group (`train_group`, several experiments vmapped in one program, each
with a run directory of its own)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from test_training import ROOT, SMALL, leaves_equal
from tiny import FLAGS

from azjax import TrainConfig, train, train_group
from azjax.core.iteration import init_train_state
from azjax.run.directory.checkpoint_files import UNFINISHED, is_unfinished
from azjax.run.directory.layout import DAMAGED_DIR
from azjax.run.directory.run_dir import RunDir
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
    return RunDir(run_dir).checkpoints.restore(
        init_train_state(env, config.program, jax.random.key(0)))


@pytest.mark.slow  # about 50 s each; the kill tests below cover the same resume quickly
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
            assert RunDir(run_dir).metrics.read()[-1]["iteration"] == stop - 1
    messages = []
    resumed = train_group(configs, run_dirs, progress=messages.append)
    assert sum("resumed" in m and "iteration 4" in m for m in messages) == len(configs)

    for config, run_dir, a, b in zip(configs, run_dirs, straight, resumed):
        records = RunDir(run_dir).metrics.read()
        assert [r["iteration"] for r in records] == list(range(1, 7))
        # Evaluation history included: network, search and arena metrics at 2, 4 and 6.
        assert {"net_optimal_share", "search_optimal_share", "vs random"} <= set(records[-1])
        assert "search_optimal_share" in records[3]
        assert without_timing(records) == without_timing(a.records)
        assert without_timing(records) == without_timing(RunDir(
            tmp_path / "straight" / run_dir.name).metrics.read())
        s, r = a.train_state, b.train_state
        for field in ("params", "opt_state", "replay", "selfplay", "iteration", "games",
                      "positions"):
            assert leaves_equal(getattr(s, field), getattr(r, field)), field
        assert np.array_equal(jax.random.key_data(s.key), jax.random.key_data(r.key))
        # What is on disk is that same state.
        assert leaves_equal(final_state(config, run_dir).params, s.params)
    if kind == "group":  # the two experiments really differ
        assert not leaves_equal(straight[0].train_state.params, straight[1].train_state.params)


@pytest.mark.slow  # about 45 s; the group kill tests below resume groups quickly
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
        assert without_timing(RunDir(run_dir).metrics.read()) == without_timing(a.records)
        assert leaves_equal(a.train_state.params, b.train_state.params)


def test_changed_cadences_on_resume_take_effect_and_leave_the_training_alone(tmp_path):
    """Run options given on resume replace the saved ones and steer the rest of the run;
    the network trained is that of an uninterrupted run."""
    run_dir = tmp_path / "run"
    train(SMALL, run_dir, progress=None)  # 4 iterations: evaluated and saved at 2 and 4
    changed = SMALL.replace(iterations=9, checkpoint_every=3, keep_every=1, eval_every=3,
                            log_every=2, eval_opponents=("random",), eval_games=8)
    messages = []
    result = train(changed, run_dir, progress=messages.append)
    assert f"resumed {run_dir} at iteration 4" in messages
    assert RunDir(run_dir).load_config() == changed.replace(devices=1)  # and its device count
    records = RunDir(run_dir).metrics.read()
    assert [r["iteration"] for r in records] == [1, 2, 3, 4, 6, 8, 9]
    assert [r["iteration"] for r in records if "perfect" in r] == [2, 4, 6, 9]
    assert [r["iteration"] for r in records if "vs random" in r] == [6, 9]
    assert RunDir(run_dir).checkpoints.steps() == [9, 6, 4, 2]  # newest 3 + keep_every
    straight = train(SMALL.replace(iterations=9, eval_every=0), None, progress=None)
    assert leaves_equal(result.train_state.params, straight.train_state.params)


class AlwaysPerfect:
    """An evaluator that calls every network perfect."""

    def network_metrics(self, player, key=None):
        return {"perfect": 1.0}

    def search_metrics(self, player, key):
        return {}


def test_changed_stopping_rules_on_resume_take_effect(tmp_path):
    run_dir = tmp_path / "run"
    base = SMALL.replace(iterations=2, eval_every=1)  # stop_when_perfect off

    def resume(config):
        messages = []
        result = train_group([config], [run_dir], messages.append,
                             evaluator=AlwaysPerfect())[0]
        return int(result.train_state.iteration), messages

    assert resume(base)[0] == 2  # perfect at 1, trained on
    iteration, messages = resume(base.replace(iterations=4, stop_when_perfect=True))
    assert iteration == 2
    assert "this run already reached perfect play at iteration 1" in messages
    iteration, messages = resume(base.replace(iterations=4, max_minutes=1e-6))
    assert iteration == 2 and any("already used its 1e-06 minutes" in m for m in messages)
    assert resume(base.replace(iterations=4))[0] == 4
    assert [r["iteration"] for r in RunDir(run_dir).metrics.read()] == [1, 2, 3, 4]
    # Asked for fewer iterations than it trained, it says so (a sweep reads it at them).
    iteration, messages = resume(base.replace(iterations=3))
    assert iteration == 4 and any(
        "this run already trained 4 iterations, more than the 3 asked for" in m
        for m in messages)


def test_a_changed_program_on_resume_is_one_error_line_naming_each_change(
        tiny_run_copy, capsys, monkeypatch):
    run_dir = tiny_run_copy  # SMALL's program
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    from azjax.commands.train import main  # `azjax train`, over SMALL

    capsys.readouterr()
    argv = ["--search.num-simulations", "16", "--seed", "3", "--iterations", "5"]
    assert main(["--run-dir", str(run_dir), *argv], defaults=SMALL) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "different config" in err and "iterations" not in err
    assert "search.num_simulations: saved 4, given 16" in err
    assert "seed: saved 0, given 3" in err
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == files


# SMALL (the tiny program: the process that is killed loads what this one compiled) with
# a checkpoint every iteration.
KILLED_ARGS = [*FLAGS, "--iterations", "4", "--eval-every", "2", "--checkpoint-every", "1"]
KILLED = SMALL.replace(checkpoint_every=1)
SWEPT = ["--param", "learning_rate=0.001,0.003", "--seeds", "1"]
KILL_STEP = 3


def run_killed(kind: str, where: str, nth: int, out: Path, marker: Path
               ) -> subprocess.CompletedProcess:
    """Runs the experiment (or sweep) in a process that SIGKILLs itself at `where` in the
    `nth` save of checkpoint KILL_STEP (tests/kill_mid_save.py)."""
    if kind == "run":
        command = [ROOT / "experiments" / "tictactoe.py", "--run-dir", out]
    else:
        command = [ROOT / "experiments" / "sweep.py", "--game", "tictactoe", "--out", out,
                   *SWEPT]
    hook = [ROOT / "tests" / "kill_mid_save.py", where, KILL_STEP, nth, marker]
    return subprocess.run([sys.executable, *map(str, hook + command), *KILLED_ARGS],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)


def checkpoint_dirs(kind: str, out: Path) -> list[Path]:
    if kind == "run":
        return [out / "checkpoints"]
    return sorted((out / "runs").glob("*/*/checkpoints"))  # runs/learning_rate=<v>/seed=0


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The run of KILLED, never killed."""
    return train(KILLED, tmp_path_factory.mktemp("uninterrupted") / "run", progress=None)


@pytest.mark.parametrize("kind, where, nth", [
    ("run", "orbax", 1),  # orbax's temporary directory written, not yet renamed
    ("run", "manifest", 1),  # arrays and records in place, the commit point not
    pytest.param("group", "manifest", 2,  # the first experiment's checkpoint complete, the
                 marks=pytest.mark.slow),  # second's not (a group of two: ~36 s)
])
def test_a_process_killed_during_a_save_resumes_and_loses_nothing_complete(
        tmp_path, uninterrupted, kind, where, nth):
    out, marker = tmp_path / "out", tmp_path / "killed_in"
    killed = run_killed(kind, where, nth, out, marker)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    saving = Path(marker.read_text())  # what the save was writing when it died
    run_dirs = [d.parent for d in checkpoint_dirs(kind, out)]
    assert len(run_dirs) == (1 if kind == "run" else 2)
    victim = saving.parents[1]
    assert victim == run_dirs[nth - 1]
    if where == "orbax":
        assert KILL_STEP not in RunDir(victim).checkpoints.steps() and list(saving.rglob(".zarray"))
    else:
        assert saving == RunDir(victim).checkpoints.step_dir(KILL_STEP)
        assert list(saving.rglob(".zarray"))
        assert is_unfinished(saving)
    committed = {d: KILL_STEP - (d == victim) for d in run_dirs}
    for run_dir, step in committed.items():
        checkpoints = RunDir(run_dir).checkpoints
        intact = [s for s in checkpoints.steps() if checkpoints.verify(s) is None]
        assert intact[0] == step
        assert RunDir(run_dir).metrics.read()[-1]["iteration"] == step

    # Resumed from disk alone, in this process.
    messages = []
    if kind == "run":
        config = RunDir(out).load_config()
        # the device count it trained on, and the variant of the recipe it started from
        assert config == KILLED.replace(devices=1, preset="cpu")
        train(config, out, progress=messages.append)
    else:
        saved = json.loads((out / "sweep.json").read_text())
        base = TrainConfig.from_dict(saved["base"])
        assert base == KILLED.replace(preset="cpu")  # the sweep records its recipe's variant
        run_sweep(base, parse_params(SWEPT[1:2]), [0], out, write=messages.append)
    for run_dir, step in committed.items():
        assert any(f"resumed {run_dir} at iteration {step}" in m for m in messages)
        assert all(p.name.isdigit() for p in (run_dir / "checkpoints").iterdir())
    passed_over = f"passed over damaged checkpoint {KILL_STEP}: {UNFINISHED}"
    assert any(passed_over in m for m in messages) == (where == "manifest")
    set_aside = [p.name.split("-")[0] for p in (victim / DAMAGED_DIR).glob("*")]
    assert set_aside == ([str(KILL_STEP)] if where == "manifest" else [])

    if kind == "run":
        assert without_timing(RunDir(out).metrics.read()) == without_timing(uninterrupted.records)
        assert leaves_equal(final_state(config, out).params, uninterrupted.train_state.params)
        return
    # The same sweep, never killed, in this process.
    reference = tmp_path / "straight"
    run_sweep(base, parse_params(SWEPT[1:2]), [0], reference, write=None)
    for run_dir in run_dirs:
        twin = reference / run_dir.relative_to(out)
        assert without_timing(RunDir(run_dir).metrics.read()) == without_timing(
            RunDir(twin).metrics.read())
        config = RunDir(run_dir).load_config()
        assert leaves_equal(final_state(config, run_dir).params,
                            final_state(config, twin).params)
    assert [r["config"] for r in merge(out, write=None).table] == [
        r["config"] for r in merge(reference, write=None).table]


@pytest.mark.slow  # about 40 s
def test_a_run_with_every_lever_on_resumes_exactly(tmp_path):
    """Restarts' archive, reanalysis's stored states and KataGo's cheap moves are part of
    the checkpointed state: a run interrupted after iteration 3 (checkpoint at 2) ends as
    the uninterrupted one."""
    program = RESUMABLE.program
    config = RESUMABLE.replace(
        eval_opponents=(), reanalyse_positions=32,
        selfplay=program.selfplay.replace(restart_prob=0.5, archive_size=8,
                                          archive_prob=0.2, full_search_prob=0.25,
                                          cheap_simulations=2, cheap_moves="katago"),
        iterations=4)
    (straight,) = train_group([config], [tmp_path / "straight"], progress=None)
    with pytest.raises(Interrupted):
        train_group([config], [tmp_path / "resumed"], progress=None,
                    on_iteration=interrupt_after(3))
    (resumed,) = train_group([config], [tmp_path / "resumed"], progress=None)
    s, r = straight.train_state, resumed.train_state
    assert bool(np.asarray(s.selfplay.archived).any())
    assert s.replay.data.state is not None
    for field in ("params", "opt_state", "replay", "selfplay"):
        assert leaves_equal(getattr(s, field), getattr(r, field)), field
    assert without_timing(straight.records) == without_timing(
        RunDir(tmp_path / "resumed").metrics.read())
