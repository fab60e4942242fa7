"""The agents that ship inside the package (`azjax.run.shipped_agents`, the files in
`azjax/agents/`): each loads by its name and plays its game, a name goes wherever an
agent file does (a path that exists wins), an unknown name is one line naming the
shipped ones, the tic-tac-toe agent plays perfectly, the wheel's package data holds the
files, and (slow) each plays through `azjax arena` and `azjax serve`, and the Go agent
answers what Sabaki and GoGui send a GTP engine at start."""

from __future__ import annotations

import fnmatch
import http.client
import json
import shutil
import subprocess
import sys
import threading
import tomllib
import zipfile
from importlib import resources
from pathlib import Path

import pytest
from cli_in_process import command

from azjax import Agent, make_evaluator
from azjax.arena import main as arena_main
from azjax.evaluation.player_specs import game_of
from azjax.gtp import main as gtp_main
from azjax.play import main as play_main
from azjax.run import shipped_agents
from azjax.run.run_dir import RunDirError
from azjax.run.shipped_agents import SHIPPED, resolve, shipped_path
from azjax.serve import Server
from azjax.serve import main as serve_main

ROOT = Path(__file__).resolve().parents[1]
# Each shipped agent's game: its env's name and its board's number of moves.
GAMES = {"tictactoe": ("tictactoe", 9), "connect_four": ("connect_four", 7),
         "go7x7": ("go", 50)}
MAX_BYTES = 1024 * 1024
# What a wheel is not built from: the checkout's environments, runs and caches.
NOT_IN_WHEEL = (".git", ".venv", "venv", "runs", "build", "*.egg-info", "__pycache__",
                "artifacts", ".pytest_cache", ".hypothesis", ".cache", "site")


def test_the_shipped_agents_are_the_expected_ones_and_small():
    assert tuple(SHIPPED) == shipped_agents.names() == tuple(GAMES)
    for name in SHIPPED:
        path = shipped_path(name)
        assert path.is_file() and path.name == f"{name}.azjax"
        assert path.stat().st_size < MAX_BYTES, (name, path.stat().st_size)
        agent = SHIPPED[name]
        assert agent.made_by and agent.strength


@pytest.mark.parametrize("name", list(GAMES))
def test_each_loads_by_its_name_and_plays_its_game(name):
    agent = Agent.load(name)
    game, moves = GAMES[name]
    assert agent.program.game == game and agent.env.name == game
    assert agent.env.num_actions == moves
    if name == "go7x7":
        assert agent.program.game_options["size"] == 7
        assert agent.program.game_options["komi"] == 9.0


def test_an_unknown_name_is_one_line_naming_the_shipped_agents():
    with pytest.raises(ValueError, match="the shipped agents are tictactoe, connect_four, "
                       "go7x7") as err:
        shipped_path("chess")
    assert "\n" not in str(err.value)
    with pytest.raises(RunDirError) as err:
        Agent.load("chess")
    message = str(err.value)
    assert "does not exist" in message and "go7x7" in message and "\n" not in message
    done = command(play_main, ["--agent", "chess"])
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "does not exist" in done.stderr and "tictactoe" in done.stderr


def test_a_path_that_exists_wins_over_a_name(tmp_path, monkeypatch):
    """A file or folder called `tictactoe` in the working directory is what it names."""
    monkeypatch.chdir(tmp_path)
    assert resolve("tictactoe") == shipped_path("tictactoe")
    Path("tictactoe").write_text("not an agent")
    assert resolve("tictactoe") == Path("tictactoe")
    with pytest.raises(ValueError, match="not an azjax agent file"):
        Agent.load("tictactoe")
    assert resolve("elsewhere/tictactoe") == Path("elsewhere/tictactoe")


def test_play_reads_the_game_from_the_agent():
    """`azjax play --agent NAME` needs no game; the old form, naming it, still works
    (the human moves first and the input ends at once: nothing is searched)."""
    for args in (["--agent", "go7x7"], ["go", "--agent", "go7x7"]):
        done = command(play_main, [*args, "--side", "first"])
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("go: you move first")
        assert done.stdout.rstrip().endswith("end of input; goodbye.")
    done = command(play_main, ["tictactoe", "--agent", "go7x7"])
    assert done.returncode == 2 and "holds a go agent, not tictactoe" in done.stderr
    done = command(play_main, ["--agent", "go7x7", "--game-options", "size=9"])
    assert done.returncode == 2 and "needs the GAME" in done.stderr


def test_arena_specs_take_a_name():
    assert game_of(["random", "alphazero:go7x7"]).name == "go"


def test_the_tictactoe_agent_plays_perfectly():
    """The network alone picks an optimal move in every one of the 4,520 live positions,
    and its table of moves loses no game from either seat (the game's own exhaustive
    check, `envs.tictactoe`'s ground truth: about a second)."""
    agent = Agent.load("tictactoe")
    metrics = make_evaluator(agent.env).network_metrics(agent.player("network"))
    assert metrics["net_optimal_share"] == 1.0
    assert metrics["net_unbeatable"] == 1.0 and metrics["perfect"] == 1.0


def test_the_package_data_takes_the_files():
    """A wheel holds every shipped file: pyproject.toml's package data for azjax matches
    each, and the installed package finds each through importlib.resources."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["azjax"]
    for name in SHIPPED:
        relative = f"{shipped_agents.FOLDER}/{name}.azjax"
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative
        assert (resources.files("azjax") / shipped_agents.FOLDER / f"{name}.azjax").is_file()
    on_disk = {p.stem for p in (ROOT / "azjax" / shipped_agents.FOLDER).glob("*.azjax")}
    assert on_disk == set(SHIPPED)


@pytest.mark.slow  # builds a wheel (pip, in a fresh build environment: half a minute)
def test_the_wheel_holds_every_shipped_file(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_IN_WHEEL))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w",
                    str(tmp_path / "wheel"), str(source)], check=True, timeout=600,
                   cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("azjax-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
    for name in SHIPPED:
        assert sizes.get(f"azjax/agents/{name}.azjax") == shipped_path(name).stat().st_size


def test_the_commands_help_lists_the_shipped_names():
    for main in (play_main, serve_main, gtp_main, arena_main):
        done = command(main, ["--help"])
        assert done.returncode == 0
        assert "tictactoe, connect_four, go7x7" in " ".join(done.stdout.split()), main


# --------------------------------------------------------------------------------------
# Slow: each agent plays through the commands
# --------------------------------------------------------------------------------------


@pytest.mark.slow  # compiles each agent's search for a match: about a minute in all
@pytest.mark.parametrize("name,opponent", [("tictactoe", "solver"),
                                           ("connect_four", "random"),
                                           ("go7x7", "random")])
def test_each_plays_through_the_arena(name, opponent):
    done = command(arena_main, [f"alphazero:{name}", opponent, "--games", "2"])
    assert done.returncode == 0, done.stderr
    game = GAMES[name][0]
    assert done.stdout.startswith(f"{game}: alphazero:{name} vs {opponent}: 2 games")
    if name == "tictactoe":  # perfect play: the solver never wins
        assert "0 losses" in done.stdout


@pytest.mark.slow  # compiles each agent's search for the page's analysis
@pytest.mark.parametrize("name", list(GAMES))
def test_each_answers_a_move_through_serve(name, monkeypatch):
    """`azjax serve --agent NAME --port 0` in this process: while it serves, the page's
    first request (a new game, the human second) gets the agent's move."""
    views = []

    def one_request(server: Server) -> None:
        worker = threading.Thread(target=server.handle_request)
        worker.start()
        host, port = server.server_address[:2]
        connection = http.client.HTTPConnection(host, port, timeout=300)
        connection.request("POST", "/api/new", body='{"side": "second"}')
        views.append(json.loads(connection.getresponse().read()))
        connection.close()
        worker.join(300)

    monkeypatch.setattr(Server, "serve_forever", one_request)
    done = command(serve_main, ["--agent", name, "--port", "0", "--quiet"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Playing {GAMES[name][0]} at http://127.0.0.1:")
    (view,) = views
    assert "error" not in view, view
    assert view["human"] == 1 and len(view["moves"]) == 1 and view["your_turn"]


# What Sabaki and GoGui send an engine when they start it and the first moves of a 7x7
# game with komi 9 (the agent's board), the engine playing Black.
GUI_SESSION = ("name\nversion\nprotocol_version\nlist_commands\nboardsize 7\nclear_board\n"
               "komi 9\ngenmove b\nplay w {reply}\ngenmove b\nquit\n")


@pytest.mark.slow  # compiles the Go agent's search (twice: two sessions)
def test_the_go_agent_answers_a_gui_s_opening_commands():
    """The session as a GUI sends it, White's move one that Black's first move left
    empty (the engine is deterministic for its seed: a first session finds that move)."""
    first = command(gtp_main, ["--agent", "go7x7"], stdin="boardsize 7\nkomi 9\ngenmove b\n")
    taken = first.stdout.split("\n\n")[2].removeprefix("= ").upper()
    reply = "D4" if taken != "D4" else "C3"
    done = command(gtp_main, ["--agent", "go7x7"], stdin=GUI_SESSION.format(reply=reply))
    assert done.returncode == 0, done.stderr
    replies = done.stdout.split("\n\n")
    assert replies[-1] == ""
    replies = replies[:-1]
    assert len(replies) == 11, replies
    assert replies[0] == "= azjax" and replies[1].startswith("= ")
    assert replies[2] == "= 2"
    commands = replies[3].removeprefix("= ").split("\n")
    for known in ("boardsize", "clear_board", "komi", "genmove", "play", "quit"):
        assert known in commands
    assert replies[4:7] == ["=", "=", "="]
    moves = [replies[7].removeprefix("= "), replies[9].removeprefix("= ")]
    assert moves[0].upper() == taken and replies[8] == "="  # White's move was legal
    for move in moves:
        assert move.lower() == "pass" or (move[0] in "ABCDEFG" and move[1:] in "1234567"), move
    assert moves[1].upper() != reply
    assert replies[10] == "="
