"""GNU Go as a player (`azjax/gnugo.py`, the `gnugo:LEVEL` spec), against the real
program: no skips, a missing GNU Go fails these tests with its install advice (CI
installs the `gnugo` package)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time

import binomial
import jax
import numpy as np
import pytest

import envs
from azjax.commands.arena import main as arena
from azjax.driver.driver import train
from azjax.evaluation.baselines import random_player
from azjax.evaluation.evaluators import versus
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import make_player
from azjax.go import gnugo, gtp_client
from azjax.go.gnugo import gnugo_player, setup_commands
from azjax.go.gtp_client import GnuGoMissing, GtpProcess, gnugo_command
from azjax.run.config import TrainConfig
from azjax.run.grammar.specs import parse_spec

GO9 = envs.make("go", size=9)  # komi 7.5
STEP9 = jax.jit(GO9.step)


def position(moves: list[str], env=GO9, step=STEP9):
    """The state after `moves` (GTP points or "pass", alternating from Black), each
    checked legal, as a batch of one NumPy state."""
    state = env.init(jax.random.key(0))
    for move in moves:
        action = env.parse_move(move)
        assert bool(state.legal_action_mask[action]), move
        state = step(state, action)
    return jax.tree.map(lambda x: np.array(x)[None], state)


def move_of(player, states, env=GO9) -> str:
    return env.format_move(int(player.act(states, jax.random.key(0))[0]))


# A simple ko in the centre: Black's F5 has just taken the white stone on E5, so White may
# not retake at E5 at once.
KO = ["E6", "E5", "D5", "F6", "E4", "F4", "A1", "G5", "F5"]
# A capturing race on the top edge: White's six stones A9-F9 and Black's six A8-F8 have
# one liberty each (G9, G8); Black to move must take G9 (capturing six and saving its own).
WHITE_RACE = [f"{c}9" for c in "ABCDEF"] + [f"{c}7" for c in "ABCDEFG"]
BLACK_RACE = [f"{c}8" for c in "ABCDEF"] + [f"{c}1" for c in "ABCDEFG"]
RACE = [m for pair in zip(BLACK_RACE, WHITE_RACE) for m in pair]


# --------------------------------------------------------------------------------------
# Specs and construction
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("gnugo", "needs an argument"),
    ("gnugo:11", "level must be an integer from 0 to 10"),
    ("gnugo:x", "level must be an integer from 0 to 10"),
    ("gnugo:-1", "level must be an integer from 0 to 10"),
    ("gnugo:1.5", "level must be an integer from 0 to 10"),
])
def test_bad_gnugo_specs_are_refused_by_the_parser(text, message):
    with pytest.raises(ValueError, match=message):
        parse_spec(text)
    with pytest.raises(ValueError, match=message):  # so runs refuse them too
        TrainConfig().replace(eval_opponents=(text,)).check(envs.make("tictactoe"))


def test_gnugo_specs_make_host_players_for_go_only():
    player = make_player("gnugo:3,seed=5", GO9)
    assert (player.name, player.jittable) == ("gnugo:3,seed=5", False)
    assert make_player("gnugo:0", GO9).name == "gnugo:0"
    assert gnugo_player(GO9, 10).name == "gnugo:10"
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['foo'\]; 'gnugo' takes "
                       r"\['seed', 'timeout'\]"):
        make_player("gnugo:1,foo=2", GO9)
    with pytest.raises(ValueError, match="seed must be a number"):
        make_player("gnugo:1,seed=x", GO9)
    for timeout in ("0", "-1", "inf", "x"):
        with pytest.raises(ValueError, match="timeout must be a"):
            make_player(f"gnugo:1,timeout={timeout}", GO9)
    with pytest.raises(ValueError, match="GNU Go plays only Go .*'tictactoe'"):
        make_player("gnugo:1", envs.make("tictactoe"))
    for level in (11, -1, True, 1.0):
        with pytest.raises(ValueError, match="level must be an integer from 0 to 10"):
            gnugo_player(GO9, level)
    with pytest.raises(ValueError, match="processes"):
        gnugo_player(GO9, 1, processes=0)


def test_a_missing_gnugo_is_one_clear_error_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no gnugo here...
    monkeypatch.setattr(gtp_client, "GNUGO_LOCATIONS", ())  # ...nor in /usr/games
    with pytest.raises(GnuGoMissing, match="apt-get install gnugo"):
        gnugo_player(GO9, 1)
    assert arena(["gnugo:1", "random", "--game", "go", "--games", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: GNU Go is not installed"), err
    assert "apt-get install gnugo" in err[0]


def test_a_config_naming_gnugo_for_another_game_is_refused_before_training(tmp_path):
    config = TrainConfig().replace(eval_opponents=("random", "gnugo:1"))  # tic-tac-toe
    config.validate()  # the spec itself is fine...
    with pytest.raises(ValueError, match="GNU Go plays only Go"):  # ...but not for this game
        train(config, tmp_path / "run", progress=None)
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------------------

def test_the_setup_gives_gnugo_the_ko_and_it_never_retakes():
    states = position(KO)
    assert not states.legal_action_mask[0, GO9.parse_move("E5")]  # under either ko rule
    board, previous = states.board[0], states.history[0, 1]
    with_ko, used_last = setup_commands(9, 7.5, board, previous, 1)
    direct, direct_last = setup_commands(9, 7.5, board, None, 1)
    assert (used_last, direct_last) == (True, False)
    assert with_ko[-1] == "play black F5"  # the capture itself, after the board before it
    with GtpProcess(gnugo_command(0)) as engine:
        engine.send("boardsize 9")
        # GNU Go's own view: retaking is illegal after our setup, legal on the bare board.
        assert engine.send_all(with_ko + ["is_legal white E5"])[-1] == "0"
        assert engine.send_all(direct + ["is_legal white E5"])[-1] == "1"
        stones = {c: engine.send(f"list_stones {c}").split() for c in ("black", "white")}
    assert sorted(stones["black"]) == ["A1", "D5", "E4", "E6", "F5"]
    assert sorted(stones["white"]) == ["F4", "F6", "G5"]
    for level in (0, 1):
        player = gnugo_player(GO9, level)
        move = move_of(player, states)
        assert move != "E5" and states.legal_action_mask[0, GO9.parse_move(move)]
        assert player.stats["replaced"] == 0 and player.stats["direct_setups"] == 0


def test_without_the_previous_board_the_position_is_set_up_directly():
    states = position(KO)
    states = states.replace(history=states.history[:, :1])  # as in Go(history=1)
    player = gnugo_player(GO9, 1)
    move = move_of(player, states)
    assert move != "E5" and states.legal_action_mask[0, GO9.parse_move(move)]
    assert player.stats["direct_setups"] == 1


def test_level_1_wins_a_capturing_race():
    states = position(RACE)
    for level in (0, 1):
        assert move_of(gnugo_player(GO9, level), states) == "G9"


def test_a_move_our_rules_forbid_is_replaced_by_gnugos_best_legal_move():
    """What happens when GNU Go's move breaks a rule it does not know (positional
    superko): here the capture G9 is masked out of the legal moves."""
    states = position(RACE)
    states.legal_action_mask[0, GO9.parse_move("G9")] = False
    player = gnugo_player(GO9, 1)
    move = move_of(player, states)
    assert move not in ("G9", "pass") and states.legal_action_mask[0, GO9.parse_move(move)]
    assert player.stats["replaced"] == 1


def random_game_positions(every: int = 14, seed: int = 0):
    """The states [B] of one game of random play (passing only without a legal point,
    so it lasts until `max_moves`) every `every` plies, and its final, finished state."""
    rng = np.random.default_rng(seed)
    state = GO9.init(jax.random.key(0))
    seen = []
    while not bool(state.terminated):
        if int(state.step_count) % every == 0:
            seen.append(state)
        legal = np.flatnonzero(np.asarray(state.legal_action_mask)[:-1])
        action = rng.choice(legal) if len(legal) else GO9.num_actions - 1
        state = STEP9(state, int(action))
    seen.append(state)
    return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *seen)


def test_moves_are_legal_and_do_not_depend_on_the_process_that_plays_them():
    states = random_game_positions()
    # The empty board six times more: GNU Go picks among equal opening moves at random.
    states = jax.tree.map(lambda x: np.concatenate([x, np.repeat(x[:1], 6, 0)]), states)
    finished = np.asarray(states.terminated)
    assert finished.sum() == 1 and len(finished) >= 8 + 6
    for level in (0, 1):
        one = gnugo_player(GO9, level, processes=1)
        actions = np.asarray(one.act(states, jax.random.key(0)))
        live = ~finished
        assert states.legal_action_mask[live, actions[live]].all()
        assert (actions[finished] == GO9.num_actions - 1).all()
        assert one.stats["moves"] == live.sum() and one.stats["replaced"] == 0
        assert len(set(actions[np.asarray(states.step_count) == 0])) == 1
        # Three processes, the batch reversed: each process plays other positions, after
        # other histories, and the moves are the same.
        reverse = jax.tree.map(lambda x: x[::-1], states)
        three = np.asarray(gnugo_player(GO9, level, processes=3).act(reverse,
                                                                       jax.random.key(1)))
        np.testing.assert_array_equal(three[::-1][live], actions[live])


def test_a_dead_engine_is_restarted():
    states = position(RACE)
    player = gnugo_player(GO9, 0, processes=1)
    assert move_of(player, states) == "G9"
    key = next(k for k in gnugo._POOLS if k[1:4] == (0, 0, 9))
    gnugo._POOLS[key][0].close()
    assert move_of(player, states) == "G9"
    assert player.stats["restarts"] == 1


# A process at a terminal, standing for azjax: Ctrl-C sends SIGINT to the terminal's
# foreground process group, here this process's own (the test starts it in a session of
# its own), which takes it. The client needs only the standard library: loaded alone,
# from its file, it spares the process JAX's import.
CTRL_C = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("gtp_client", sys.argv[1])
gtp_client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gtp_client)
signal.signal(signal.SIGINT, lambda *_: print("azjax took Ctrl-C", flush=True))
with gtp_client.GtpProcess(gtp_client.gnugo_command(0)) as engine:
    engine.send("boardsize 9")
    os.killpg(os.getpgid(0), signal.SIGINT)
    print(engine.send("genmove black"), flush=True)
"""


def test_a_terminals_ctrl_c_reaches_azjax_but_not_gnugo():
    done = subprocess.run([sys.executable, "-c", CTRL_C, gtp_client.__file__],
                          capture_output=True, text=True, timeout=120, start_new_session=True,
                          check=False)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[0] == "azjax took Ctrl-C" and GO9.parse_move(lines[1]) >= 0, lines


def test_a_move_cut_short_by_an_interrupt_restarts_its_engine(monkeypatch):
    """Ctrl-C (a stop's interrupt) in the middle of a move's replies, read in this
    thread: the engine's other replies are never read, so it is not asked again."""
    states = position(RACE)
    player = gnugo_player(GO9, 0, processes=1, seed=5)  # a pool of its own
    assert move_of(player, states) == "G9"
    reply = GtpProcess._reply
    replies = []

    def interrupted(self, command):
        replies.append(command)
        if len(replies) == 3:
            raise KeyboardInterrupt
        return reply(self, command)

    monkeypatch.setattr(GtpProcess, "_reply", interrupted)
    with pytest.raises(KeyboardInterrupt):
        move_of(player, states)
    assert move_of(player, states) == "G9"
    assert player.stats["restarts"] == 1


def running(pid: int) -> bool:
    """Whether the process `pid` exists (running, or ended but not yet waited for)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def recorded_pids(monkeypatch) -> list[int]:
    """The pids of the processes started from now on (in the test: `monkeypatch`)."""
    pids, popen = [], subprocess.Popen

    def started(*args, **kwargs):
        process = popen(*args, **kwargs)
        pids.append(process.pid)
        return process

    monkeypatch.setattr(gtp_client.subprocess, "Popen", started)
    return pids


def interrupt(*args, **kwargs):
    """Stands for a Ctrl-C arriving in the code it replaces."""
    raise KeyboardInterrupt


@pytest.mark.parametrize("where, seed", [("readers", 7), ("boardsize", 8)])
def test_an_interrupt_while_an_engine_starts_leaves_no_process(monkeypatch, where, seed):
    """Ctrl-C once GNU Go's process exists: while its output's readers start, or while
    it answers its first command. The process is gone (GNU Go runs in a session of its
    own: the terminal's Ctrl-C never reaches it), and the pool starts a new one."""
    states = position(RACE)
    player = gnugo_player(GO9, 0, processes=1, seed=seed)  # a pool of its own
    pids = recorded_pids(monkeypatch)
    if where == "readers":
        start = threading.Thread.start
        monkeypatch.setattr(threading.Thread, "start", lambda thread: (
            interrupt() if getattr(thread, "_target", None) is GtpProcess._read
            else start(thread)))
    else:
        send = GtpProcess.send
        monkeypatch.setattr(GtpProcess, "send", lambda self, command: (
            interrupt() if command.startswith("boardsize") else send(self, command)))
    try:
        with pytest.raises(KeyboardInterrupt):
            move_of(player, states)
        assert len(pids) == 1
        assert not running(pids[0])
    finally:
        for pid in pids:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    key = next(k for k in gnugo._POOLS if k[1:4] == (0, seed, 9))
    assert gnugo._POOLS[key] == [None]  # nothing half-started is kept
    monkeypatch.undo()
    assert move_of(player, states) == "G9"
    assert gnugo._POOLS[key][0].alive


def test_an_interrupt_while_an_engine_closes_kills_it(monkeypatch):
    """Ctrl-C before the engine was asked to quit: it is killed, not left running."""
    engine = GtpProcess(gnugo_command(0))
    pid = engine._process.pid
    try:
        assert engine.send("boardsize 9") == ""
        monkeypatch.setattr(GtpProcess, "_write", interrupt)
        with pytest.raises(KeyboardInterrupt):
            engine.close()
        assert not running(pid)
    finally:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def test_an_interrupted_batch_ends_its_threads_after_their_moves(monkeypatch):
    """Ctrl-C while this thread waits for the threads that play a batch: each ends after
    the move it plays, before the interrupt goes on (a stop then closes the engines).
    The Ctrl-C is the KeyboardInterrupt this thread's first wait raises once a move is
    under way: a real signal reaches only the main thread, which under pytest-xdist need
    not be the one running the test."""
    states = jax.tree.map(lambda x: np.repeat(x, 6, axis=0), position(RACE))
    player = gnugo_player(GO9, 0, processes=2, seed=6)
    send_all, join = GtpProcess.send_all, threading.Thread.join
    caller = threading.get_ident()
    playing = threading.Event()
    moves, interrupted = [], []

    def slow(self, commands):
        playing.set()
        moves.append(commands[-1])
        time.sleep(0.2)
        return send_all(self, commands)

    def join_or_interrupt(thread, timeout=None):
        if threading.get_ident() == caller and not interrupted:
            assert playing.wait(30)
            interrupted.append(True)
            raise KeyboardInterrupt
        return join(thread, timeout)

    player.act(states, jax.random.key(0))  # its engines start, and their threads
    running = set(threading.enumerate())
    monkeypatch.setattr(GtpProcess, "send_all", slow)
    monkeypatch.setattr(threading.Thread, "join", join_or_interrupt)
    with pytest.raises(KeyboardInterrupt):
        player.act(states, jax.random.key(0))
    assert interrupted and set(threading.enumerate()) <= running  # no thread plays on
    assert len(moves) < 6
    monkeypatch.setattr(GtpProcess, "send_all", send_all)
    assert move_of(player, states) == "G9"


# --------------------------------------------------------------------------------------
# Matches
# --------------------------------------------------------------------------------------

# Measured offline: GNU Go level 0 won 256 of 256 games against random play on 9x9 (komi
# 7.5; play_match with keys 1-24, 8 games each, and keys 1-8 again once GNU Go was
# reseeded before every move). Its per-game loss rate is then below
# upper_bound(0, 256) = 1.8% (99% confidence), and allowing max_failures(8, 1.8%) = 2
# lost or drawn games of 8 fails falsely less than once in 1000 (the match is
# deterministic for a given GNU Go build; this is the margin for other builds).
OFFLINE_GAMES, OFFLINE_LOSSES = 256, 0


# Slow: whole 9x9 games of GNU Go; the moves of one process are checked above.
@pytest.mark.slow
def test_gnugo_beats_random_play():
    allowed = binomial.max_failures(8, binomial.upper_bound(OFFLINE_LOSSES, OFFLINE_GAMES))
    assert allowed == 2
    player = gnugo_player(GO9, 0)
    result = play_match(GO9, player, random_player(), jax.random.key(0), num_games=8)
    assert result.losses + result.draws <= allowed, result.summary()
    assert player.stats["moves"] > 8 * 20  # GNU Go played whole games
    assert player.stats["replaced"] == player.stats["resignations"] == 0
    # Every position after a game's first move was set up with its last move (ko).
    assert player.stats["direct_setups"] == 0


def recording(player, log: list):
    """`player`, logging (step count, action) of every move it makes."""
    def policy(params, states, key):
        actions = player.policy(params, states, key)
        log.extend(zip(np.asarray(states.step_count).tolist(), np.asarray(actions).tolist()))
        return actions

    return dataclasses.replace(player, policy=policy)


# Slow: five 9x9 matches against GNU Go.
@pytest.mark.slow
def test_matches_against_gnugo_are_deterministic():
    """The same match twice: the same moves and results, though GNU Go's processes
    (one per core) are reused and play other games the second time."""
    logs, results = [], []
    for _ in range(2):
        log = []
        player = recording(gnugo_player(GO9, 0), log)
        result = play_match(GO9, random_player(), player, jax.random.key(3), num_games=2)
        logs.append(sorted(log))
        results.append(result.results)
    assert len(logs[0]) > 2 * 20
    assert logs[0] == logs[1]
    np.testing.assert_array_equal(results[0], results[1])
    # Training-time evaluation against `eval_opponents` plays such matches too.
    # Go is decided by points, so the margin is logged beside the score: the same match's.
    scores = versus(GO9, random_player(), [make_player("gnugo:0", GO9)], jax.random.key(0),
                    2, 0)
    assert list(scores) == ["vs gnugo:0", "margin vs gnugo:0"]
    again = play_match(GO9, random_player(), make_player("gnugo:0", GO9),
                       jax.random.split(jax.random.key(0), 1)[0], 2, record=True)
    assert 0 <= scores["vs gnugo:0"] == again.score <= 0.5
    assert scores["margin vs gnugo:0"] == again.mean_margin < 0


def test_arena_plays_gnugo_end_to_end(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert arena(["gnugo:0", "random", "--game", "go", "--game-option", "size=9",
                  "--games", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert "go: gnugo:0 vs random: 2 games" in printed
    assert (f"gnugo:0: {result['wins']} wins, {result['draws']} draws, "
            f"{result['losses']} losses") in printed
    assert (result["game"], result["games"]) == ("go", 2)
    # As in the match test above: allowing max_failures(2, 1.8%) = 1 lost or drawn game
    # of 2 fails falsely less than once in 1000.
    allowed = binomial.max_failures(2, binomial.upper_bound(OFFLINE_LOSSES, OFFLINE_GAMES))
    assert allowed == 1 and result["wins"] >= 2 - allowed
