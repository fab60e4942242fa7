"""GNU Go missing, killed mid-match, answering garbage or nothing, or playing illegal moves,
in the commands that play it (arena, training, referee): one clear line, no traceback, no
hang. The failures come from fake GNU Go programs (Python scripts in tmp_path that speak
enough GTP), chosen with `$AZJAX_GNUGO` (the referee runs the command line it is given).
The commands run in this process (`cli_in_process`: `run_script(main)`, output captured),
except the arena once and the referee once, as real processes (their exit status, and
their GNU Go processes gone after they exit); the fake GNU Go processes are checked gone.

A reply limit of 1 s times only what a fake engine deliberately leaves unanswered: each
engine is waited for, generously, until it answers a first command (`started_engines`),
so a fake that starts slowly on a busy machine is not taken for one that stalls."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest
from cli_in_process import command, experiment
from gnugo_start_up import wait_for_start_up

import envs
from azjax.commands import arena, gtp_referee
from azjax.evaluation.baselines import random_player
from azjax.evaluation.evaluators import versus
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import make_player
from azjax.go import gnugo, gtp_client
from azjax.go.gtp_client import GNUGO_ENV, INSTALL_GNUGO, GnuGoFailed
from azjax.go.referee import referee

ROOT = Path(__file__).resolve().parents[1]
GO5 = envs.make("go", size=5)
ARENA_OPTIONS = ["--game", "go", "--game-options", "size=5", "--games", "2"]


def arena_argv(spec: str) -> list[str]:
    """The arena's arguments for 2 games on 5x5, player `spec` against random play."""
    return [spec, "random", *ARENA_OPTIONS]


def arena_command(spec: str) -> list[str]:
    """The same as a command line: `python -m azjax.arena ...`."""
    return ["-m", "azjax.arena", *arena_argv(spec)]


@pytest.fixture
def started_engines(monkeypatch):
    """Every GTP engine started in the test answers a first command before its reply
    limit counts (`gnugo_start_up`): the 1-s limits below time what a fake engine leaves
    unanswered, not how fast its interpreter starts."""
    wait_for_start_up(monkeypatch)


@pytest.fixture
def gnugo_pools():
    """Closes the GNU Go processes the test left in the pools, as the end of a command's
    process does (`gnugo.close_all` at exit), so that the test can check them gone."""
    yield gnugo.close_all
    gnugo.close_all()

# Answers every command with `=`, genmove with PASS, until its AFTER-th genmove (counted
# over all its processes) and from then on (only then, for a MODE ending in `_once`):
# kill: SIGKILL itself; exit: exit status 3; stall: never answer; garbage: a line that is
# not GTP; offboard: Z99; illegal: A1 (genmove and restricted_genmove); refuse: `? sorry`.
FAKE = '''#!{python}
import os, signal, sys, time
mode, after, log = {mode!r}, {after}, {log!r}
once = mode.endswith("_once")
mode = mode.removesuffix("_once")
with open(log + ".pids", "a") as f:
    f.write(f"{{os.getpid()}}\\n")
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    reply = "= GNU Go" if words[0] == "name" else "="
    if words[0] in ("genmove", "restricted_genmove"):
        with open(log, "a") as f:
            f.write("x")
        count = os.path.getsize(log)
        reply = "= PASS"
        if count == after or (count > after and not once):
            if mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif mode == "exit":
                sys.exit(3)
            elif mode == "stall":
                time.sleep(600)
            reply = {{"garbage": "hello", "offboard": "= Z99", "illegal": "= A1",
                      "refuse": "? sorry"}}[mode]
    print(reply + "\\n", flush=True)
    if words[0] == "quit":
        break
'''


def fake_gnugo(directory: Path, mode: str, after: int = 3) -> Path:
    """An executable fake GNU Go (see FAKE) at DIRECTORY/MODE/gnugo."""
    path = directory / mode / "gnugo"
    path.parent.mkdir(parents=True)
    path.write_text(FAKE.format(python=sys.executable, mode=mode, after=after,
                                log=str(path) + ".log"))
    path.chmod(0o755)
    return path


def assert_all_gone(fake: Path) -> None:
    """Every process of `fake` has ended (none left running, stalled or orphaned)."""
    pids = [int(p) for p in Path(str(fake) + ".log.pids").read_text().split()]
    assert pids
    for _ in range(100):
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return
        time.sleep(0.05)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"processes of {fake} still running: {alive}")


def run(*args: str | Path, env: dict | None = None, cwd: Path = ROOT,
        timeout: float = 120) -> subprocess.CompletedProcess:
    """The command `python ARGS` (its environment changed by `env`), which must end in
    `timeout` seconds (subprocess.TimeoutExpired fails the test)."""
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})},
                          check=False)


def error_line(done: subprocess.CompletedProcess) -> str:
    """The command's one `error:` line, its last on stderr, after exit status 2."""
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.returncode == 2, done.stderr
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], done.stderr
    return errors[0]


# --------------------------------------------------------------------------------------
# GNU Go missing: one line saying what was looked for and how to install it
# --------------------------------------------------------------------------------------

def test_a_missing_gnugo_named_by_the_variable_stops_arena_and_training(tmp_path,
                                                                        monkeypatch):
    missing = tmp_path / "no" / "gnugo"
    expected = (f"error: GNU Go not found: ${GNUGO_ENV} names {str(missing)!r}, which is not "
                f"an executable file; {INSTALL_GNUGO}, or set ${GNUGO_ENV} to its path")
    monkeypatch.setenv(GNUGO_ENV, str(missing))
    assert error_line(command(arena.main, arena_argv("gnugo:1"))) == expected
    # Training refuses before it starts: nothing written.
    train = experiment("train", "--game", "go", "--game-options", "size=5",
                       "--run-dir", tmp_path / "run", "--eval-opponents", "gnugo:1")
    assert error_line(train) == expected
    assert not (tmp_path / "run").exists()


def test_no_gnugo_on_path_nor_in_usr_games_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(gtp_client, "GNUGO_LOCATIONS", ())
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(GNUGO_ENV, "")
    done = command(arena.main, arena_argv("gnugo:1"))
    assert error_line(done) == (
        "error: GNU Go is not installed (no 'gnugo' on PATH or in /usr/games): "
        f"{INSTALL_GNUGO}, or set ${GNUGO_ENV} to its path")


def test_the_referee_says_how_to_install_a_missing_gnugo(tmp_path):
    """Through the real command: exit status 2, and the engine that started is gone."""
    black = fake_gnugo(tmp_path, "kill", after=100)  # plays on
    done = run("-m", "azjax.gtp_referee", "--black", black, "--white", "gnugo --mode gtp",
               "--size", "5", env={"PATH": str(tmp_path)})
    assert error_line(done) == (
        "error: engine B ('gnugo --mode gtp') cannot start: cannot start 'gnugo': No such "
        f"file or directory; GNU Go is not installed or not on PATH: {INSTALL_GNUGO}")
    assert_all_gone(black)


# --------------------------------------------------------------------------------------
# GNU Go failing mid-match
# --------------------------------------------------------------------------------------

def arena_failure_lines(fake: Path, spec: str, what: str) -> tuple[str, str]:
    """The arena's notice after GNU Go's first failure at move 3, and its error line after
    the new process fails the same move."""
    notice = (f"notice: {spec} at move 3: GNU Go ({str(fake)!r}) {what}; asking a new GNU "
              "Go process")
    error = (f"error: {spec} failed in game 1 at move 3: GNU Go ({str(fake)!r}) {what} (a new "
             "process, after the first failed too)")
    return notice, error


@pytest.mark.parametrize("mode, spec, what", [
    ("kill", "gnugo:1", "was killed by signal 9 (SIGKILL) while answering 'genmove black'"),
    ("stall", "gnugo:1,timeout=1", "did not answer 'genmove black' in 1 s"),
])
def test_arena_gnugo_dying_or_stalling_mid_match_is_one_line(tmp_path, monkeypatch,
                                                             started_engines, gnugo_pools,
                                                             mode, spec, what):
    """GNU Go fails its third move (game 1's move 3): a notice, a new process fails the
    same move, then one error line naming the player, game, move and what GNU Go did."""
    fake = fake_gnugo(tmp_path, mode)
    monkeypatch.setenv(GNUGO_ENV, str(fake))
    done = command(arena.main, arena_argv(spec))
    notice, error = arena_failure_lines(fake, spec, what)
    assert notice in done.stderr.splitlines(), done.stderr
    assert error_line(done) == error
    gnugo_pools()  # what the command's exit does
    assert_all_gone(fake)


def test_arena_subprocess_gnugo_killed_mid_match_exits_2(tmp_path):
    """The same through the real command: exit status 2, and no GNU Go process left once
    it has exited."""
    fake = fake_gnugo(tmp_path, "kill")
    done = run(*arena_command("gnugo:1"), env={GNUGO_ENV: str(fake)})
    notice, error = arena_failure_lines(
        fake, "gnugo:1", "was killed by signal 9 (SIGKILL) while answering 'genmove black'")
    assert notice in done.stderr.splitlines(), done.stderr
    assert error_line(done) == error
    assert_all_gone(fake)


@pytest.mark.parametrize("mode, move, what", [
    ("exit", 3, "exited with status 3 while answering 'genmove black' (a new process, "
                "after the first failed too)"),
    ("garbage", 3, "answered 'genmove black' with 'hello', not a GTP reply (a new process, "
                   "after the first failed too)"),
    ("refuse", 3, "refused 'genmove black': sorry (a new process, after the first failed "
                  "too)"),
    ("offboard", 3, "answered 'genmove black' with 'Z99', not a move on the 5x5 board"),
    # A1 is legal at move 3 and taken at move 5, where restricted_genmove says A1 too.
    ("illegal", 5, "answered 'genmove black' with 'A1' and 'restricted_genmove black' "
                   "with 'A1': both illegal here"),
])
def test_gnugo_failing_a_move_is_one_error_naming_game_and_move(tmp_path, monkeypatch,
                                                                 mode, move, what):
    """What the arena and the league print after `error: ` (both play `play_match`)."""
    fake = fake_gnugo(tmp_path, mode)
    monkeypatch.setenv(GNUGO_ENV, str(fake))
    player = make_player("gnugo:2", GO5)
    with pytest.raises(GnuGoFailed) as failed:
        play_match(GO5, player, random_player(), jax.random.key(0), 2)
    assert str(failed.value) == f"gnugo:2 failed in game 1 at move {move}: GNU Go " \
                                f"({str(fake)!r}) {what}"


def test_gnugo_killed_once_is_restarted_and_the_match_goes_on(tmp_path, monkeypatch, capsys):
    fake = fake_gnugo(tmp_path, "kill_once")
    monkeypatch.setenv(GNUGO_ENV, str(fake))
    player = make_player("gnugo:3", GO5)
    result = play_match(GO5, player, random_player(), jax.random.key(0), 2)
    assert result.num_games == 2 and player.stats["restarts"] == 1
    assert capsys.readouterr().err.splitlines() == [
        f"notice: gnugo:3 at move 3: GNU Go ({str(fake)!r}) was killed by signal 9 (SIGKILL) "
        "while answering 'genmove black'; asking a new GNU Go process"]


def test_a_training_evaluation_leaves_out_a_failing_gnugo_and_goes_on(tmp_path, monkeypatch):
    """What the driver does at an evaluation (`versus` with `failed`): the failure is
    passed on, the other baselines still play."""
    fake = fake_gnugo(tmp_path, "offboard")
    monkeypatch.setenv(GNUGO_ENV, str(fake))
    failures = []
    scores = versus(GO5, random_player(), [make_player("gnugo:4", GO5), random_player()],
                    jax.random.key(0), 2, failed=lambda name, err: failures.append((name, err)))
    assert sorted(scores) == ["margin vs random", "vs random"]
    ((name, err),) = failures
    assert name == "gnugo:4" and isinstance(err, GnuGoFailed) and err.game == 2
    with pytest.raises(GnuGoFailed):  # without `failed`, as before
        versus(GO5, random_player(), [make_player("gnugo:4", GO5)], jax.random.key(0), 2)


@pytest.mark.slow  # compiles a training program: about a minute of CPU
def test_training_goes_on_when_gnugo_dies_in_an_evaluation(tmp_path):
    fake = fake_gnugo(tmp_path, "kill")
    run_dir = tmp_path / "run"
    done = run(ROOT / "experiments" / "train.py", "--game", "go", "--game-options", "size=5",
               "--run-dir", run_dir, "--network.channels", "8", "--network.num-blocks", "1",
               "--network.value-hidden", "8", "--search.num-simulations", "4",
               "--search.max-num-considered-actions", "4", "--selfplay.num-games", "4",
               "--selfplay.steps-per-iteration", "2", "--learner.batch-size", "8",
               "--replay-capacity", "64", "--gradient-steps", "1", "--iterations", "2",
               "--eval-every", "1", "--eval-search-every", "0", "--eval-opponents", "gnugo:1",
               "--eval-games", "2", "--eval-openings", "0", "--checkpoint-every", "1",
               env={GNUGO_ENV: str(fake)}, timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    # Iteration 1: game 2's move 3 is GNU Go's third; iteration 2: its first move fails.
    for iteration, game, move in ((1, 2, 3), (2, 2, 1)):
        assert (f"evaluation vs gnugo:1 left out at iteration {iteration}: gnugo:1 failed in "
                f"game {game} at move {move}: GNU Go ({str(fake)!r}) was killed by signal 9 "
                f"(SIGKILL) while answering 'genmove black' (a new process, after the first "
                "failed too); training goes on") in done.stdout.splitlines(), done.stdout
    assert "finished 2 iterations" in done.stdout
    assert (run_dir / "checkpoints" / "2").is_dir()
    assert_all_gone(fake)


# --------------------------------------------------------------------------------------
# The referee: an engine that fails loses the game, told in the game's line
# --------------------------------------------------------------------------------------

def test_referee_gnugo_killed_mid_game_loses_it_in_one_line(tmp_path):
    fake = fake_gnugo(tmp_path, "kill", after=2)  # its second genmove: move 3
    other = fake_gnugo(tmp_path, "illegal", after=1)  # A1 at move 2, on the empty board
    done = command(gtp_referee.main, ["--black", str(fake), "--white", str(other), "--size",
                                      "5", "--games", "1"])
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[0] == (
        f"game 1: black A, white B: W+F (error, 2 moves); engine A failed genmove at move 3: "
        f"GTP engine ({str(fake)!r}) was killed by signal 9 (SIGKILL) while answering "
        "'genmove black'")
    assert_all_gone(fake)


def test_referee_engine_answering_garbage_or_nothing_loses_the_game(tmp_path,
                                                                   started_engines):
    garbage = fake_gnugo(tmp_path, "garbage", after=1)
    stall = fake_gnugo(tmp_path, "stall", after=1)
    lines = []
    records, _ = referee(shlex.quote(str(garbage)), shlex.quote(str(stall)), games=2, size=5,
                         alternate=True, timeout=1, log=lines.append)
    assert lines == [
        f"game 1: black A, white B: W+F (error, 0 moves); engine A failed genmove at move 1: "
        f"GTP engine ({str(garbage)!r}) answered 'genmove black' with 'hello', not a GTP reply",
        f"game 2: black B, white A: W+F (error, 0 moves); engine B failed genmove at move 1: "
        f"GTP engine ({str(stall)!r}) did not answer 'genmove black' in 1 s"]
    assert_all_gone(stall)
