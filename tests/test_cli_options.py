"""Options of the command lines, each through the command's own entry point, checked by
what it does: a sampling `alphazero:RUN,greedy=false` arena player, `python -m azjax.gtp
--max-moves`, the referee's `--komi`, `--max-moves`, `--alternate` and `--timeout`,
Ctrl-C during training, a run directory whose path has spaces, a replay ring too big for
any machine, and the repair message quoted in docs/trust.md.

The commands run in this process (`cli_in_process`: the script's `__main__` block or the
module's `run_script(main)`, with its output captured) unless the test needs a real
process: Ctrl-C (a signal to the child) and a taken coordinator port (JAX's distributed
start-up, which this process, its devices started, cannot do). Their runs are the tiny
program (`tests/tiny.py`), whose compiled programs this process and the children share."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from cli_in_process import command, experiment
from gnugo_start_up import wait_for_start_up
from sgfmill import sgf as sgfmill_sgf
from test_gtp import untrained
from tiny import FLAGS

import envs
from azjax.commands import arena, gtp, gtp_referee, play
from azjax.go.gtp_client import gnugo_command
from azjax.run.directory.run_dir import RunDir

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "experiments" / "tictactoe.py")
# The tiny program, checkpointed every 2 iterations (a run-half setting: the same program).
TINY = [*FLAGS, "--checkpoint-every", "2"]


def tictactoe(*argv: str | Path) -> subprocess.CompletedProcess:
    """`python experiments/tictactoe.py ARGV`, in this process."""
    return experiment("tictactoe", *argv)


def one_error_line(done: subprocess.CompletedProcess, text: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert text in done.stderr and "Traceback" not in done.stderr


def iterations(run_dir: Path) -> list[int]:
    return [r["iteration"] for r in RunDir(run_dir).metrics.read()]


# --------------------------------------------------------------------------------------
# A run directory whose path has spaces: trained, resumed, loaded by arena and play
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spaced_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess,
                                          subprocess.CompletedProcess]:
    """A run in "my runs/tic tac toe": 2 iterations, then resumed to 4."""
    run_dir = tmp_path_factory.mktemp("cli") / "my runs" / "tic tac toe"
    first = tictactoe(*TINY, "--iterations", "2", "--run-dir", run_dir)
    resumed = tictactoe(*TINY, "--iterations", "4", "--run-dir", run_dir)
    return run_dir, first, resumed


def test_a_run_directory_with_spaces_trains_resumes_and_loads(spaced_run, tmp_path):
    run_dir, first, resumed = spaced_run
    assert first.returncode == 0, first.stderr[-2000:]
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resumed {run_dir} at iteration 2" in resumed.stdout
    assert iterations(run_dir) == [1, 2, 3, 4]
    assert RunDir(run_dir).checkpoints.steps() == [4, 2]
    out = tmp_path / "a result.json"
    match = command(arena.main, [f"alphazero:{run_dir},sims=4", "random", "--games", "4",
                                 "--json", str(out)])
    assert match.returncode == 0, match.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["game"] == "tictactoe" and result["games"] == 4
    assert result["a"].startswith("alphazero") and result["b"] == "random"
    moves = "".join(f"{k}\n" for k in range(1, 10)) + "n\n"
    game = command(play.main, ["tictactoe", "--run-dir", str(run_dir), "--side", "second"],
                   stdin=moves)
    assert game.returncode == 0, game.stderr[-2000:]
    assert "Score: " in game.stdout and "Traceback" not in game.stderr


# --------------------------------------------------------------------------------------
# alphazero:RUN,greedy=false in the arena
# --------------------------------------------------------------------------------------


def seat_results(run_dir: Path, spec_a: str, seed: int, out: Path) -> list[tuple[int, ...]]:
    """(wins, draws, losses) of A in each seat of a 16-game arena match of `spec_a`
    against the greedy search of the same run."""
    done = command(arena.main, [spec_a, f"alphazero:{run_dir},sims=4", "--games", "16",
                                "--seed", str(seed), "--json", str(out)])
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    return [tuple(data[f"as_player{seat}"][k] for k in ("wins", "draws", "losses"))
            for seat in (0, 1)]


@pytest.mark.slow  # three arena matches of the search against itself, ~60-90 s
def test_greedy_false_samples_where_greedy_repeats_one_game(spaced_run, tmp_path):
    run_dir = spaced_run[0]
    # Greedy against greedy, no random opening: each seat's 8 games are one game repeated,
    # so each seat has one outcome.
    greedy = seat_results(run_dir, f"alphazero:{run_dir},sims=4", 1, tmp_path / "g.json")
    assert all(sorted(seat) == [0, 0, 8] for seat in greedy), greedy
    # A sampling from its search policy: its games differ, within a seat or between seeds.
    sampled = [seat_results(run_dir, f"alphazero:{run_dir},sims=4,greedy=false", seed,
                            tmp_path / f"s{seed}.json") for seed in (1, 2)]
    mixed = [seat for seats in sampled for seat in seats if sorted(seat) != [0, 0, 8]]
    assert mixed or sampled[0] != sampled[1], sampled


# --------------------------------------------------------------------------------------
# Ctrl-C during training; a replay ring that fits nowhere
# --------------------------------------------------------------------------------------


def test_ctrl_c_stops_after_a_checkpoint_and_the_rerun_resumes(tmp_path):
    run_dir = tmp_path / "run"
    out, err = tmp_path / "train.out", tmp_path / "train.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen([sys.executable, SCRIPT, *TINY, "--iterations", "500",
                                    "--run-dir", str(run_dir)], stdout=stdout, stderr=stderr,
                                   cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300  # a guard against a hang, not a measurement
        while not (run_dir.is_dir() and RunDir(run_dir).checkpoints.steps()):
            assert process.poll() is None, err.read_text()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint in 300 s"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)  # Ctrl-C
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = err.read_text()
    assert code == 75, text[-2000:]  # EX_TEMPFAIL: stopped with a checkpoint (docs/trust.md)
    assert "Traceback" not in text
    stopped = re.search(r"stopped by SIGINT after iteration (\d+), with a checkpoint in "
                        rf"{re.escape(str(run_dir))}; rerun the same command to resume", text)
    assert stopped, text[-2000:]
    at = int(stopped[1])
    assert RunDir(run_dir).checkpoints.steps()[0] == at and iterations(run_dir)[-1] == at
    resumed = tictactoe(*TINY, "--iterations", str(at + 1), "--run-dir", run_dir)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resumed {run_dir} at iteration {at}" in resumed.stdout
    assert iterations(run_dir) == list(range(1, at + 2))


def test_a_replay_ring_too_big_is_one_error_line_and_no_run_directory(tmp_path):
    run_dir = tmp_path / "run"
    done = tictactoe("--replay-capacity", "2000000000", "--run-dir", run_dir)
    one_error_line(done, "replay")
    assert not run_dir.exists()


# --------------------------------------------------------------------------------------
# python -m azjax.gtp --max-moves
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def go5(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("go5") / "go5.azjax"
    untrained("go", size=5, komi=0.5, history=2).export(path)
    return path


def gtp_replies(agent: Path, lines: list[str], *options: str) -> list[str]:
    """The replies of `python -m azjax.gtp --agent AGENT OPTIONS` to `lines` on its stdin."""
    done = command(gtp.main, ["--agent", str(agent), *options], stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr[-2000:]
    replies = done.stdout.split("\n\n")
    assert replies[-1] == ""
    return replies[:-1]


def test_gtp_max_moves_ends_the_engines_game_after_that_many_plies(go5):
    session = ["1 play b A1", "2 play w B1", "3 play b C1", "4 play w D1", "5 genmove b"]
    capped = gtp_replies(go5, session, "--max-moves", "3")
    assert capped[:3] == ["=1", "=2", "=3"]
    assert capped[3:] == ["?4 illegal move", "=5 pass"]  # the game is over at ply 3
    free = gtp_replies(go5, session[:4])
    assert free == ["=1", "=2", "=3", "=4"]
    one_error_line(command(gtp.main, ["--agent", str(go5), "--max-moves", "0"]),
                   "--max-moves must be at least 1")


# --------------------------------------------------------------------------------------
# python -m azjax.gtp_referee --komi --max-moves --alternate --timeout
# --------------------------------------------------------------------------------------


def referee(*args: str | Path) -> subprocess.CompletedProcess:
    """`python -m azjax.gtp_referee ARGS`, in this process (the engines are processes)."""
    return command(gtp_referee.main, [str(a) for a in args])


def test_referee_komi_move_cap_and_alternating_colours(tmp_path):
    gnugo = shlex.join(gnugo_command(0))
    out, sgf_dir = tmp_path / "result.json", tmp_path / "sgf"
    done = referee("--black", gnugo, "--white", gnugo, "--size", "5", "--komi", "2.5",
                   "--max-moves", "6", "--games", "2", "--alternate", "--json", out,
                   "--sgf", sgf_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    games = data["games"]
    assert [(g["black"], g["white"]) for g in games] == [("A", "B"), ("B", "A")]
    for engine in data["summary"]["engines"].values():
        assert engine["games"] == {"black": 1, "white": 1}
    assert data["summary"]["komi"] == 2.5
    env = envs.make("go", size=5, komi=2.5, max_moves=6)
    step = jax.jit(env.step)
    for game, path in zip(games, sorted(sgf_dir.iterdir()), strict=True):
        # GNU Go does not pass twice in 6 plies of a 5x5 game: the cap ends it.
        assert (game["ending"], len(game["actions"])) == ("move cap", 6), game
        state = env.init(jax.random.key(0))
        for action in game["actions"]:
            state = step(state, np.int32(action))
        assert game["margin"] == float(env.score_margin()(state))  # counted with komi 2.5
        record = sgfmill_sgf.Sgf_game.from_bytes(path.read_bytes())
        assert record.get_size() == 5 and record.get_root().get("KM") == 2.5
        assert len(record.get_main_sequence()) == 1 + 6


# A GTP engine that answers everything at once but never answers genmove.
SILENT_ENGINE = """
import sys, time
for line in sys.stdin:
    words = line.split()
    if words and words[0] == "genmove":
        time.sleep(600)
    print("= silent" if words and words[0] == "name" else "=", end="\\n\\n", flush=True)
    if words and words[0] == "quit":
        break
"""


def test_referee_timeout_ends_a_game_whose_engine_never_answers(tmp_path, monkeypatch):
    wait_for_start_up(monkeypatch)  # the 3 s are for genmove, not the engine's start
    script = tmp_path / "silent.py"
    script.write_text(SILENT_ENGINE)
    silent = shlex.join([sys.executable, str(script)])
    out = tmp_path / "result.json"
    done = referee("--black", silent, "--white", shlex.join(gnugo_command(0)), "--size", "5",
                   "--timeout", "3", "--json", out)
    assert done.returncode == 0, done.stderr[-2000:]
    (game,) = json.loads(out.read_text())["games"]
    assert (game["ending"], game["result"], game["actions"]) == ("error", "W+F", [])
    assert "did not answer 'genmove black' in 3 s" in game["note"], game["note"]


# --------------------------------------------------------------------------------------
# The repair message of a deleted config.json, as docs/trust.md quotes it
# --------------------------------------------------------------------------------------


def test_the_quoted_message_for_a_deleted_config_is_the_one_printed(spaced_run, tmp_path,
                                                                    monkeypatch):
    """docs/trust.md's example, on a copy of a run with its checkpoint at 2: delete its
    config.json, cut metrics.jsonl short, resume; the quoted lines are printed."""
    docs = (ROOT / "docs" / "trust.md").read_text()
    block = re.search(r"rm runs/repaired/config.json\n.*?```console\n(.*?)```", docs,
                      re.DOTALL)
    assert block, "docs/trust.md no longer shows the repair of a deleted config.json"
    quoted = block[1].splitlines()
    assert quoted and any("config.json" in line for line in quoted)
    repaired = tmp_path / "runs" / "repaired"
    shutil.copytree(spaced_run[0], repaired)
    # its newest checkpoint is 2, as in the docs
    shutil.rmtree(RunDir(repaired).checkpoints.step_dir(4))
    (repaired / "config.json").unlink()
    os.truncate(repaired / "metrics.jsonl", 100)
    monkeypatch.chdir(tmp_path)  # the run directory as the docs write it: runs/repaired
    done = tictactoe(*TINY, "--iterations", "2", "--run-dir", "runs/repaired")
    assert done.returncode == 0, done.stderr[-2000:]
    printed = (done.stdout + done.stderr).splitlines()
    missing = [line for line in quoted if line not in printed]
    assert not missing, (missing, printed[:10])
    # The table of faults gives the same message with DIR and N for the run and step.
    row = re.search(r"\| delete `config.json`, then resume \| the same command: `([^`]*)`", docs)
    assert row, "docs/trust.md's table no longer has the deleted config.json row"
    assert row[1].replace("DIR", "runs/repaired").replace(" N ", " 2 ") in printed


def test_a_taken_coordinator_port_is_one_line(tmp_path):
    """Process 0 of a run of several cannot bind its coordinator's port: one error line,
    exit 2, nothing written (it was a traceback from inside JAX)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, SCRIPT, "--num-processes", "2", "--process-id", "0",
             "--coordinator-address", f"127.0.0.1:{port}", "--run-dir", str(tmp_path / "run"),
             "--iterations", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot start the coordinator at 127.0.0.1:") and "taken" in last
    assert not (tmp_path / "run").exists()
