"""`python -m azjax.gtp` (a Go agent as a GTP engine) and `python -m azjax.gtp_referee`:
scripted sessions in-process and through a subprocess, fuzzed input, and whole games
against GNU Go refereed with azjax's rules (GNU Go must be installed: CI installs it)."""

from __future__ import annotations

import json
import random
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import go_tiny
import jax
import numpy as np
import pytest
from sgfmill import sgf
from test_games_training import TINY

import envs
from azjax import Agent
from azjax.commands import gtp
from azjax.commands.gtp import main as gtp_main
from azjax.commands.gtp_referee import main as referee_main
from azjax.core.networks import NetworkConfig
from azjax.go.gtp_client import gnugo_command
from azjax.go.gtp_engine import Engine, serve
from azjax.go.gtp_protocol import parse_score
from azjax.go.referee import referee
from azjax.go.sgf import sgf_result
from envs.go_board import COLUMNS, format_move, parse_move

ROOT = Path(__file__).resolve().parents[1]
SIZE = 9
KOMI = 7.5
NETWORK = NetworkConfig(channels=8, num_blocks=1, policy_filters=2, value_hidden=8)


def untrained(game: str, **options) -> Agent:
    """An agent with random weights in a tiny network and a 4-simulation search (drawn
    with NumPy into the network's shapes, `go_tiny.random_params`: nothing to compile)."""
    config = TINY.replace(game=game, game_options=options, network=NETWORK)
    env = config.make_env()
    return Agent(env, config.program, go_tiny.random_params(env, config.program.network))


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gtp") / "go9.azjax"
    untrained("go", size=SIZE, komi=KOMI, history=2).export(path)
    return path


@pytest.fixture(scope="module")
def engine_agent(agent_file) -> Agent:
    return Agent.load(agent_file)


@pytest.fixture
def engine(engine_agent) -> Engine:
    return Engine(engine_agent, seed=0)


def ok(engine: Engine, line: str) -> str:
    """The text of a successful reply (the test fails on `? ...`)."""
    reply = engine.handle(line)
    assert reply is not None and reply.startswith("=") and reply.endswith("\n\n"), (line, reply)
    return reply[1:-2].lstrip("0123456789").removeprefix(" ")


def fails(engine: Engine, line: str) -> str:
    """The message of a failed reply (the test fails on `= ...`)."""
    reply = engine.handle(line)
    assert reply is not None and reply.startswith("?") and reply.endswith("\n\n"), (line, reply)
    return reply[1:-2].lstrip("0123456789").strip()


def board_of(diagram: str) -> dict[str, str]:
    """The stones of a showboard diagram: {"D4": "X", ...} (X Black, O White)."""
    stones = {}
    for line in diagram.splitlines():
        words = line.split()
        if len(words) == SIZE + 2 and words[0].isdigit() and words[0] == words[-1]:
            for column, mark in zip(COLUMNS, words[1:-1]):
                assert mark in ".XO", line
                if mark != ".":
                    stones[f"{column}{words[0]}"] = mark
    return stones


def area_margin(stones: dict[str, str], komi: float) -> float:
    """Black's minus White's Tromp-Taylor area minus komi, counted here by flood fill
    (independently of the env)."""
    grid = {(r, c): "." for r in range(SIZE) for c in range(SIZE)}
    for point, mark in stones.items():
        action = parse_move(point, SIZE)
        grid[divmod(action, SIZE)] = mark
    count = {"X": 0, "O": 0}
    seen = set()
    for point, mark in grid.items():
        if mark != ".":
            count[mark] += 1
        elif point not in seen:
            region, borders, todo = [], set(), [point]
            seen.add(point)
            while todo:
                r, c = todo.pop()
                region.append((r, c))
                for q in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if q in grid:
                        if grid[q] == "." and q not in seen:
                            seen.add(q)
                            todo.append(q)
                        elif grid[q] != ".":
                            borders.add(grid[q])
            if len(borders) == 1:
                count[borders.pop()] += len(region)
    return count["X"] - count["O"] - komi


def play_all(engine: Engine, moves: str) -> None:
    """Plays "b D5 w F4 ..." with `play` commands."""
    words = moves.split()
    for colour, move in zip(words[::2], words[1::2]):
        ok(engine, f"play {colour} {move}")


# ---------------------------------------------------------------------------------------
# The protocol, in-process
# ---------------------------------------------------------------------------------------


def test_administrative_commands(engine):
    assert ok(engine, "protocol_version") == "2"
    assert ok(engine, "name") == "azjax"
    assert ok(engine, "version") == metadata.version("azjax")
    commands = ok(engine, "list_commands").split("\n")
    for name in ("protocol_version", "name", "version", "known_command", "list_commands",
                 "boardsize", "clear_board", "komi", "play", "genmove", "undo", "showboard",
                 "final_score", "quit", "time_settings", "time_left", "reg_genmove"):
        assert name in commands
        assert ok(engine, f"known_command {name}") == "true"
    assert ok(engine, "known_command fly") == "false"
    assert fails(engine, "fly me to the moon") == "unknown command"
    assert ok(engine, "time_settings 300 30 5") == ""
    assert ok(engine, "time_left b 120 0") == ""


def test_known_command_without_an_argument_is_a_syntax_error(engine):
    assert fails(engine, "known_command").startswith("syntax error")


def test_ids_comments_blank_lines_and_control_characters(engine):
    assert engine.handle("12 protocol_version\n") == "=12 2\n\n"
    assert engine.handle("7 fly") == "?7 unknown command\n\n"
    assert engine.handle("   \n") is None
    assert engine.handle("# a comment\n") is None
    assert engine.handle("name # trailing comment") == "= azjax\n\n"
    assert engine.handle("\tname\x01\x7f\r\n") == "= azjax\n\n"
    assert engine.handle("3 play\tb\tE5") == "=3\n\n"
    reply = engine.handle("42 genmove w")
    assert reply.startswith("=42 ") and reply.endswith("\n\n")
    assert parse_move(reply[4:-2], SIZE) != parse_move("E5", SIZE)


def test_boardsize_and_clear_board(engine):
    assert fails(engine, "boardsize 19") == "unacceptable size"
    assert fails(engine, "boardsize 5") == "unacceptable size"
    assert fails(engine, "boardsize nine").startswith("syntax error")
    assert fails(engine, "boardsize").startswith("syntax error")
    play_all(engine, "b E5 w C3")
    assert ok(engine, f"boardsize {SIZE}") == ""
    assert board_of(ok(engine, "showboard")) == {}
    play_all(engine, "b E5")
    assert ok(engine, "clear_board") == ""
    assert board_of(ok(engine, "showboard")) == {}
    assert engine.moves == []


def test_play_legal_and_illegal_moves(engine):
    play_all(engine, "black E5 WHITE D4 B a2 w J9 b B1")
    assert board_of(ok(engine, "showboard")) == {"E5": "X", "D4": "O", "A2": "X", "J9": "O",
                                                  "B1": "X"}
    assert fails(engine, "play w E5") == "illegal move"  # occupied
    assert fails(engine, "play w A1") == "illegal move"  # suicide
    assert fails(engine, "play x C3").startswith("syntax error")  # colour word
    assert fails(engine, "play blue C3").startswith("syntax error")
    for vertex in ("I5", "Z9", "A10", "A0", "E", "55", "resign", "pass1"):
        assert fails(engine, f"play w {vertex}").startswith("syntax error"), vertex
    assert fails(engine, "play w").startswith("syntax error")
    assert fails(engine, "play").startswith("syntax error")
    assert len(engine.moves) == 5  # nothing above changed the game
    play_all(engine, "w pass b PASS")  # pass, any case
    assert engine.over  # two passes end the game
    assert fails(engine, "play w C3") == "illegal move"
    assert ok(engine, "genmove w") == "pass"
    assert len(engine.moves) == 7


def test_simple_ko(engine):
    # Black D5 E4 E6 and White F4 F6 G5 make a ko at E5/F5.
    play_all(engine, "b D5 w F4 b E4 w F6 b E6 w G5 b A9 w E5 b F5")
    assert "E5" not in board_of(ok(engine, "showboard"))  # captured
    assert fails(engine, "play w E5") == "illegal move"  # the immediate recapture
    play_all(engine, "w J1 b A8 w E5")  # after a ko threat it is legal
    stones = board_of(ok(engine, "showboard"))
    assert stones["E5"] == "O" and "F5" not in stones


def test_undo_restores_the_exact_previous_position(engine):
    assert fails(engine, "undo") == "cannot undo"
    play_all(engine, "b D5 w F4 b E4 w F6 b E6 w G5 b A9 w E5")
    before_board = ok(engine, "showboard")
    before = jax.device_get(engine.state)
    play_all(engine, "b F5")  # a capture that sets a ko
    assert ok(engine, "showboard") != before_board
    assert ok(engine, "undo") == ""
    assert ok(engine, "showboard") == before_board
    after = jax.device_get(engine.state)
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)):
        np.testing.assert_array_equal(a, b)
    assert engine.to_move == 0  # Black to move again
    for _ in range(8):
        ok(engine, "undo")
    assert fails(engine, "undo") == "cannot undo"
    assert board_of(ok(engine, "showboard")) == {}


def test_colour_out_of_turn_inserts_a_pass_and_undo_takes_both_back(engine):
    play_all(engine, "b E5 b C3")  # two black moves: White passed in between
    assert [(m.colour, format_move(m.action, SIZE), m.inserted) for m in engine.moves] == [
        (0, "E5", False), (1, "pass", True), (0, "C3", False)]
    assert engine.to_move == 1
    move = ok(engine, "genmove b")  # Black again: another inserted White pass
    assert engine.moves[3].inserted and engine.moves[4].colour == 0
    assert format_move(engine.moves[4].action, SIZE) == move
    ok(engine, "undo")
    ok(engine, "undo")
    assert [format_move(m.action, SIZE) for m in engine.moves] == ["E5"]
    assert engine.to_move == 1


def test_genmove_plays_a_legal_move_that_shows_on_the_board(engine):
    play_all(engine, "b E5 w D4")
    stones = board_of(ok(engine, "showboard"))
    for i, colour in enumerate("bwbwbwbwbw"):
        legal = np.asarray(engine.state.legal_action_mask)
        move = ok(engine, f"genmove {colour}")
        action = parse_move(move, SIZE)  # a vertex or pass, never anything else
        assert legal[action]
        shown = board_of(ok(engine, "showboard"))
        if move != "pass":
            assert shown[move.upper()] == "XO"[i % 2]
        assert len(engine.moves) == 3 + i
        stones = shown
    assert stones == board_of(ok(engine, "showboard"))


def test_reg_genmove_leaves_the_game_unchanged(engine):
    play_all(engine, "b E5")
    board = ok(engine, "showboard")
    move = ok(engine, "reg_genmove w")
    parse_move(move, SIZE)
    assert ok(engine, "showboard") == board and len(engine.moves) == 1


def test_every_genmove_gets_a_fresh_key(engine_agent, monkeypatch):
    engine = Engine(engine_agent, seed=3)
    keys = []
    analyse = engine.agent.analyse
    monkeypatch.setattr(engine.agent, "analyse",
                        lambda states, key: keys.append(jax.random.key_data(key)) or
                        analyse(states, key))
    for colour in "bwbw":
        ok(engine, f"genmove {colour}")
    ok(engine, "reg_genmove b")
    assert len(keys) == 5
    assert len({np.asarray(k).tobytes() for k in keys}) == 5


def test_final_score_is_the_area_count_with_komi(engine):
    assert ok(engine, "final_score") == f"W+{KOMI:g}"  # empty board: komi only
    # A black wall on column E and a white wall on column F: 45 - 36 - 7.5.
    for line in range(1, SIZE + 1):
        play_all(engine, f"b E{line} w F{line}")
    assert ok(engine, "final_score") == "B+1.5"
    play_all(engine, "b J5 w B5")  # a stone in each area: every empty point is shared
    stones = board_of(ok(engine, "showboard"))
    assert area_margin(stones, KOMI) == 10 - 10 - KOMI
    assert ok(engine, "final_score") == f"W+{KOMI:g}"
    assert ok(engine, "komi 0") == ""
    assert ok(engine, "final_score") == "0"
    assert fails(engine, "komi seven").startswith("syntax error")
    assert fails(engine, "komi nan").startswith("syntax error")
    assert fails(engine, "komi").startswith("syntax error")
    assert engine.komi == 0.0 and len(engine.moves) == 2 * SIZE + 2


def test_final_score_matches_an_independent_count_on_played_positions(engine):
    rng = random.Random(0)
    for _ in range(60):
        legal = np.flatnonzero(np.asarray(engine.state.legal_action_mask)[:-1])
        if engine.over or not len(legal):
            break
        ok(engine, f"play {'bw'[engine.to_move]} {format_move(rng.choice(legal), SIZE)}")
    stones = board_of(ok(engine, "showboard"))
    assert len(stones) > 20
    assert parse_score(ok(engine, "final_score")) == area_margin(stones, KOMI)


def test_score_text_round_trips():
    for margin in (3.5, -0.5, 0.0, 81.0, -88.5):
        assert parse_score(sgf_result(margin)) == margin
    assert sgf_result(-0.5) == "W+0.5" and sgf_result(0) == "0"
    assert parse_score("B+R") == float("inf") and parse_score("w+resign") == -float("inf")
    for bad in ("", "B+", "X+3", "B3", "B+abc"):
        with pytest.raises(ValueError):
            parse_score(bad)


def test_resign_only_below_the_threshold_and_after_the_opening(engine_agent, monkeypatch):
    engine = Engine(engine_agent, resign=-0.5)
    analyse = engine.agent.analyse
    value = {"now": -0.9}

    def fixed_value(states, key):  # the search's move, with a chosen root value
        out = analyse(states, key)
        return out._replace(value=out.value * 0 + value["now"])

    monkeypatch.setattr(engine.agent, "analyse", fixed_value)
    assert ok(engine, "genmove b") != "resign"  # the opening: never
    ok(engine, "clear_board")
    play_all(engine, "b A1 w A3 b A5 w A7 b A9 w C1 b C3 w C5 b C7 w C9 b E1 w E3 b E5 w E7 "
             "b E9 w G1 b G3 w G5 b G7 w G9")
    assert len(engine.moves) == gtp.RESIGN_AFTER
    board = ok(engine, "showboard")
    value["now"] = -0.4
    assert ok(engine, "reg_genmove b") != "resign"  # above the threshold
    value["now"] = -0.6
    assert ok(engine, "genmove b") == "resign"
    assert ok(engine, "showboard") == board  # a resignation plays nothing
    never = Engine(engine_agent)
    assert never.agent is engine.agent  # the engines of one agent share its search
    play_all(never, "b A1 w A3 b A5 w A7 b A9 w C1 b C3 w C5 b C7 w C9 b E1 w E3 b E5 w E7 "
             "b E9 w G1 b G3 w G5 b G7 w G9")
    value["now"] = -1.0
    assert ok(never, "genmove b") != "resign"  # no --resign: never
    with pytest.raises(ValueError, match="resign"):
        Engine(engine_agent, resign=0.5)


def test_fuzzed_lines_never_break_the_engine(engine):
    rng = random.Random(1)
    words = ["play", "genmove", "undo", "boardsize", "komi", "known_command", "showboard",
             "final_score", "b", "w", "white", "E5", "pass", "I5", "Z99", "-1", "9", "7.5",
             "1e400", "nan", "resign", "#", "\t", "", "\x00", "\u00e9", "\ufffd", "99999999999",
             "reg_genmove", "time_left", "list_commands", "clear_board", "=", "?", "\x1b[2J"]
    for _ in range(400):
        if rng.random() < 0.3:
            line = "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(20)))
        else:
            line = " ".join(rng.choice(words) for _ in range(rng.randrange(5)))
            if line.startswith(("komi", "boardsize")):
                line = line.split()[0] + " x"  # a new komi recompiles the search: keep it quick
        if "quit" in line:
            continue
        reply = engine.handle(line + "\n")
        if reply is None:
            continue
        assert reply[0] in "=?" and reply.endswith("\n\n") and "\n\n" not in reply[:-2], line
        assert "Traceback" not in reply and "internal error" not in reply, (line, reply)
        assert len(engine.states) == len(engine.moves) + 1
    assert ok(engine, "protocol_version") == "2"
    ok(engine, "clear_board")
    play_all(engine, "b E5 w D4")
    assert board_of(ok(engine, "showboard")) == {"E5": "X", "D4": "O"}


def test_serve_runs_on_text_streams_and_stops_at_quit(engine):
    import io

    out = io.StringIO()
    script = "1 name\n\n# comment\n2 play b E5\n3 final_score\nquit\nname\n"
    assert serve(engine, io.StringIO(script), out) == 0
    assert out.getvalue() == "=1 azjax\n\n=2\n\n=3 B+73.5\n\n=\n\n"
    assert engine.quit


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------


def test_subprocess_session_with_raw_bytes_and_quit(agent_file):
    script = (b"1 protocol_version\n\xff\xfe garbage \x00\n# comment\n\n"
              b"2 boardsize 9\n3 play b E5\n4 play w E5\n5 genmove w\n6 showboard\n"
              b"7 final_score\n8 quit\nname\n")
    done = subprocess.run([sys.executable, "-m", "azjax.gtp", "--agent", str(agent_file)],
                          input=script, capture_output=True, timeout=120, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    replies = done.stdout.decode().split("\n\n")
    assert replies[-1] == ""
    replies = replies[:-1]
    assert replies[0] == "=1 2"
    assert replies[1].startswith("? ")  # the garbage line: an unknown command
    assert replies[2:5] == ["=2", "=3", "?4 illegal move"]
    move = replies[5].removeprefix("=5 ")
    assert move != "E5" and parse_move(move, SIZE) >= 0
    stones = board_of(replies[6])
    assert stones["E5"] == "X" and (move == "pass" or stones[move.upper()] == "O")
    assert replies[7] == f"=7 {sgf_result(area_margin(stones, KOMI))}"
    assert replies[8] == "=8" and len(replies) == 9  # nothing answered after quit


def test_gtp_cli_load_errors_exit_2(tmp_path, capsys):
    assert gtp_main(["--run-dir", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    ttt = untrained("tictactoe").export(tmp_path / "ttt.azjax")
    assert gtp_main(["--agent", str(ttt)]) == 2
    assert "not a Go agent" in capsys.readouterr().err
    assert gtp_main(["--agent", str(ttt), "--resign", "0.5"]) == 2
    assert "--resign" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# Games refereed against GNU Go
# ---------------------------------------------------------------------------------------


def replay_margin(actions: list[int], komi: float) -> float:
    """The area margin of the board after `actions`, replayed in a fresh env and counted
    by `area_margin`."""
    env = envs.make("go", size=SIZE, komi=komi, max_moves=10_000)
    state = env.init(jax.random.key(0))
    step = jax.jit(env.step)
    for action in actions:
        assert bool(state.legal_action_mask[action])
        state = step(state, action)
    board = np.asarray(state.board)
    stones = {format_move(i, SIZE): "XO"[v] for i, v in enumerate(board) if v >= 0}
    return area_margin(stones, komi)


def test_the_agent_plays_whole_games_against_gnugo(agent_file):
    gnugo = shlex.join(gnugo_command(0))  # GnuGoMissing (a failure) without GNU Go
    agent = shlex.join([sys.executable, "-m", "azjax.gtp", "--agent", str(agent_file)])
    lines = []
    records, summary = referee(agent, gnugo, games=2, size=SIZE, komi=KOMI, max_moves=200,
                               alternate=True, log=lines.append)
    assert [(r.black, r.white) for r in records] == [("A", "B"), ("B", "A")]
    assert summary["refused_moves"] == 0 and summary["illegal_moves"] == 0
    for record in records:
        assert record.ending in ("passes", "resignation", "move cap"), record
        assert record.refused == 0 and record.illegal == 0 and not record.note.startswith("engine")
        if record.ending == "resignation":
            assert record.result in ("B+R", "W+R")
            continue
        assert len(record.actions) <= 200
        assert record.ending == "move cap" or record.actions[-2:] == [SIZE * SIZE] * 2
        assert record.margin == replay_margin(record.actions, KOMI)
        assert record.result == sgf_result(record.margin)
        assert record.winner == (0 if record.margin > 0 else 1)
        if record.ending == "passes":  # our engine counts like the referee
            assert parse_score(record.engine_scores["A"]) == record.margin
    assert len(lines) == 2 and lines[0].startswith("game 1: black A, white B: ")
    engines = summary["engines"]
    assert engines["A"]["name"].startswith("azjax") and engines["B"]["name"].startswith("GNU Go")
    wins = sum(e["wins"]["black"] + e["wins"]["white"] + e["draws"] for e in engines.values())
    assert wins == 2


def test_gnugo_against_itself_agrees_with_the_referee_score(tmp_path, capsys):
    command = shlex.join(gnugo_command(0, seed=1))
    out, sgf_dir = tmp_path / "result.json", tmp_path / "sgf"
    assert referee_main(["--black", command, "--white", command, "--games", "1",
                         "--json", str(out), "--sgf", str(sgf_dir)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("game 1: black A, white B: ")
    assert "refused moves 0, illegal moves 0, final_score disagreements 0" in printed
    data = json.loads(out.read_text())
    game = data["games"][0]
    assert game["ending"] == "passes" and game["actions"][-2:] == [SIZE * SIZE] * 2
    assert game["margin"] == replay_margin(game["actions"], KOMI)
    # GNU Go's own count of the finished game is the referee's Tromp-Taylor count.
    assert parse_score(game["engine_scores"]["A"]) == game["margin"]
    assert parse_score(game["engine_scores"]["B"]) == game["margin"]
    assert data["summary"]["final_score_disagreements"] == 0
    # The SGF record, read by sgfmill (an independent parser), holds the same game.
    (path,) = sgf_dir.iterdir()
    record = sgf.Sgf_game.from_bytes(path.read_bytes())
    root = record.get_root()
    assert record.get_size() == SIZE and root.get("KM") == KOMI
    assert root.get("RE") == sgf_result(game["margin"])
    assert root.get("PB").startswith("GNU Go") and root.get("PW").startswith("GNU Go")
    moves = [node.get_move() for node in record.get_main_sequence()[1:]]
    assert [colour for colour, _ in moves] == ["bw"[i % 2] for i in range(len(moves))]
    points = [SIZE * SIZE if point is None else (SIZE - 1 - point[0]) * SIZE + point[1]
              for _, point in moves]
    assert points == game["actions"]


def test_referee_argument_and_engine_errors_exit_2(tmp_path, capsys):
    gnugo = shlex.join(gnugo_command(0))
    for argv, message in [
        (["--black", gnugo, "--white", gnugo, "--games", "0"], "--games"),
        (["--black", gnugo, "--white", gnugo, "--size", "1"], "size"),
        (["--black", str(tmp_path / "no-engine"), "--white", gnugo], "cannot start"),
        (["--black", "", "--white", gnugo], "empty"),
        (["--black", gnugo, "--white", gnugo, "--size", "25"], "size"),
        (["--black", gnugo, "--white", gnugo, "--json", str(tmp_path)], "--json"),
    ]:
        assert referee_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err


SCRIPTED_ENGINE = """
import sys
mode = sys.argv[1]
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    if w[0] == "play" and mode == "refuse":
        reply = "? no thanks"
    elif w[0] == "genmove" and mode == "die":
        break
    elif w[0] == "genmove":
        reply = {"refuse": "= pass", "resign": "= resign", "illegal": "= A1",
                 "garbage": "= hello"}[mode]
    elif w[0] == "name":
        reply = "= " + mode
    else:
        reply = "="
    print(reply + "\\n", flush=True)
    if w[0] == "quit":
        break
"""


@pytest.mark.parametrize("mode, ending, result, refused, illegal", [
    ("refuse", "forfeit", "B+F", 1, 0),  # refuses Black's first move: loses
    ("resign", "resignation", "B+R", 0, 0),
    ("illegal", "illegal", "B+F", 0, 1),  # A1 twice: the second is on a stone
    ("garbage", "illegal", "B+F", 0, 1),
])
def test_refused_resigned_and_illegal_moves_end_the_game(tmp_path, mode, ending, result,
                                                         refused, illegal):
    script = tmp_path / "engine.py"
    script.write_text(SCRIPTED_ENGINE)
    gnugo = shlex.join(gnugo_command(0))
    lines = []
    records, summary = referee(gnugo, shlex.join([sys.executable, str(script), mode]),
                               games=1, log=lines.append)
    (record,) = records
    assert (record.ending, record.result) == (ending, result)
    assert (record.refused, record.illegal) == (refused, illegal)
    assert summary["refused_moves"] == refused and summary["illegal_moves"] == illegal
    assert summary["engines"]["B"]["name"] == mode
    assert summary["engines"]["A"]["wins"]["black"] == 1
    assert lines == [f"game 1: black A, white B: {result} ({ending}, "
                     f"{len(record.actions)} moves)" + (f"; {record.note}" if record.note else "")]


def test_an_engine_that_dies_loses_and_is_restarted_for_the_next_game(tmp_path):
    script = tmp_path / "engine.py"
    script.write_text(SCRIPTED_ENGINE)
    gnugo = shlex.join(gnugo_command(0))
    records, summary = referee(gnugo, shlex.join([sys.executable, str(script), "die"]),
                               games=2, log=lambda line: None, timeout=30)
    assert [(r.ending, r.result, len(r.actions)) for r in records] == [("error", "B+F", 1)] * 2
    assert "engine B failed genmove" in records[0].note
    assert summary["engines"]["A"]["wins"]["black"] == 2
