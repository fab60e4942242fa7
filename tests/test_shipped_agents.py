"""The agents that ship inside the package (`azjax.run.agents.shipped_agents`, the files in
`azjax/agents/`): each file is the one its checksum records, loads by its name and plays
its game, a name goes wherever an agent file does (a path that exists wins), an unknown
name is one line naming the shipped ones, and a changed file is refused. Each plays at
a strength floor that an untrained network of its program misses, its network alone:
the tic-tac-toe agent perfectly, the Connect Four agent on the solved positions, the Go
agent against random play. The wheel's package data holds the files, and (slow) each
plays matches through `azjax arena` above a floor, answers through `azjax serve`, and
the Go agent answers what Sabaki and GoGui send a GTP engine at start."""

from __future__ import annotations

import fnmatch
import hashlib
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

import jax
import numpy as np
import pytest
from binomial import lower_bound, max_failures, min_successes, upper_bound
from cli_in_process import command
from flax import serialization

from azjax import Agent, make_evaluator
from azjax import __main__ as azjax_main
from azjax.commands.arena import main as arena_main
from azjax.commands.gtp import main as gtp_main
from azjax.commands.play import main as play_main
from azjax.commands.serve import Server
from azjax.commands.serve import main as serve_main
from azjax.core.networks import init_params
from azjax.evaluation.baselines import random_player
from azjax.evaluation.match import play_match
from azjax.evaluation.player_specs import game_of
from azjax.run.agents import shipped_agents
from azjax.run.agents.shipped_agents import SHIPPED, resolve, shipped_path
from azjax.run.directory.layout import RunDirError
from azjax.run.files import sha256_digest

ROOT = Path(__file__).resolve().parents[1]
# Each shipped agent's game: its env's name and its board's number of moves.
GAMES = {"tictactoe": ("tictactoe", 9), "connect_four": ("connect_four", 7),
         "go7x7": ("go", 50)}
MAX_BYTES = 1024 * 1024
# What a wheel is not built from: the checkout's environments, runs and caches.
NOT_IN_WHEEL = (".git", ".venv", "venv", "runs", "build", "*.egg-info", "__pycache__",
                "artifacts", ".pytest_cache", ".hypothesis", ".cache", "site")
# The files as shipped: the ones docs/results.md measured, with their provenance written
# in since (2026-12-07). A new network is a new agent: measure it again (the page's
# "Shipped agents"), then record its file's SHA-256 here and in azjax/agents/SHA256SUMS.
SHA256 = {
    "tictactoe": "4b3f9306f00a7455c8fc8b879e8592921d1c1cadec619abf37e6681a90b9baf9",
    "connect_four": "217dbfad34819b35c3cafc1a31506c082ed86f97422640ec94609fd7200c5dd6",
    "go7x7": "423297d68e544578c99804989af39744510c435b8c4da8c0fc2934b11cf33bf3",
}
# The SHA-256 of each file as docs/results.md measured it, before it held a provenance:
# the shipped file without its provenance is byte for byte that file.
MEASURED_SHA256 = {
    "tictactoe": "bfdcdc98a01e41f6f706a2f6b084f22bf3bd16602f6a0e0e3f4d5b11b410ad11",
    "connect_four": "0e46d9c2ca06f98549f4109852233063ce8d68e671cc42b6c86cdca5e9620352",
    "go7x7": "1ff4ff78f5cab43af2806ee678886c50a36bcf9b21afa69d2a3ac75aba61e857",
}
# What trained each (docs/results.md, "Shipped agents", and `git log` of the files): the
# commit of the code, or its first words where it is a bound, and the iterations.
CF5D4BB = "cf5d4bb6adc956a999e8849d0f198aa54c131d2b"
PROVENANCE = {
    "tictactoe": ("1987b883e17facb0105cb23a6957572e85093ca3", "azjax train tictactoe", 22),
    "connect_four": (CF5D4BB, "azjax train connect_four --max-minutes 45", 198),
    "go7x7": (f"{CF5D4BB} for its first 45 minutes; resumed for 30 more at a commit not "
              "recorded, at or before 232000997b28f483b459a7e6535f0bba682651c4",
              "azjax train go7x7 --max-minutes 45, then resumed in the same run directory: "
              "azjax train go7x7 --max-minutes 75", 1201),
}


def test_the_shipped_agents_are_the_expected_ones_and_small():
    assert tuple(SHIPPED) == shipped_agents.names() == tuple(GAMES)
    for name in SHIPPED:
        path = shipped_path(name)
        assert path.is_file() and path.name == f"{name}.azjax"
        assert path.stat().st_size < MAX_BYTES, (name, path.stat().st_size)
        agent = SHIPPED[name]
        assert agent.made_by and agent.strength


def test_each_file_is_the_one_its_checksum_records():
    """The package's manifest names every shipped file with the SHA-256 measured here,
    and each file has it."""
    assert shipped_agents.checksums() == {f"{name}.azjax": digest
                                          for name, digest in SHA256.items()}
    for name, digest in SHA256.items():
        assert sha256_digest(shipped_path(name)) == digest, name


def test_without_its_provenance_each_file_is_the_one_measured():
    """Writing the provenance in changed nothing else: the payload without it serialises
    to the very bytes docs/results.md measured."""
    for name, digest in MEASURED_SHA256.items():
        payload = serialization.msgpack_restore(shipped_path(name).read_bytes())
        assert json.loads(payload.pop("provenance"))["azjax_version"] == "0.1.0"
        assert hashlib.sha256(serialization.msgpack_serialize(payload)).hexdigest() == digest


@pytest.mark.parametrize("name", list(GAMES))
def test_info_prints_each_agent_s_provenance(name, monkeypatch):
    """`azjax info NAME`: the game, network and search, then the version, commit,
    command and budget that made it (the same facts `Agent.provenance` gives)."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the dispatcher sets its own
    done = command(azjax_main.main, ["info", name])
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    commit, trained_by, iterations = PROVENANCE[name]
    assert shown[0] == f"agent: {shipped_path(name)} (a shipped agent)"
    assert shown[1].startswith(f"game: {GAMES[name][0]}")
    assert shown[2].startswith("network: ") and shown[3] == "search: gumbel, 32 simulations"
    assert shown[4] == "provenance:"
    for line in ("azjax version: 0.1.0", f"commit: {commit}", f"command: {trained_by}",
                 "preset: cpu", f"iterations: {iterations:,}", "exported: 2026-11-29"):
        assert f"  {line}" in shown, (line, shown)
    facts = Agent.load(name).provenance
    assert (facts.azjax_version, facts.commit, facts.command, facts.iterations) == (
        "0.1.0", commit, trained_by, iterations)


def test_info_of_a_bad_agent_is_one_error_line(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    junk = tmp_path / "junk.azjax"
    junk.write_text("hello")
    for agent, message in (("chess", "no shipped agent has that name (tictactoe, "),
                           (str(tmp_path / "missing.azjax"), "agent file '"),
                           (str(junk), "is not an azjax agent file"),
                           (str(tmp_path), "is not a training run")):
        done = command(azjax_main.main, ["info", agent])
        assert done.returncode == 2 and done.stdout == "", (agent, done)
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
        assert message in done.stderr, (agent, done.stderr)


def test_a_changed_shipped_file_is_refused_in_one_line(tmp_path, monkeypatch):
    """A shipped file one byte off what the manifest records (a damaged install) does
    not load by its name: one error line, from Python and from a command."""
    package = tmp_path / "azjax"
    shutil.copytree(ROOT / "azjax" / shipped_agents.FOLDER, package / shipped_agents.FOLDER)
    changed = package / shipped_agents.FOLDER / "tictactoe.azjax"
    data = bytearray(changed.read_bytes())
    data[-1] ^= 1
    changed.write_bytes(bytes(data))

    class Installed:
        @staticmethod
        def files(name):
            return package

    monkeypatch.setattr(shipped_agents, "resources", Installed)
    assert shipped_path("go7x7") == package / shipped_agents.FOLDER / "go7x7.azjax"
    with pytest.raises(ValueError, match="is not the one azjax records") as err:
        Agent.load("tictactoe")
    assert "reinstall azjax" in str(err.value) and "\n" not in str(err.value)
    done = command(play_main, ["--agent", "tictactoe"])
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "is not the one azjax records" in done.stderr
    changed.unlink()
    with pytest.raises(ValueError, match="cannot be read .No such file"):
        shipped_path("tictactoe")


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


def untrained(agent: Agent) -> Agent:
    """An agent of the same program with freshly initialised weights: what each strength
    floor below must fail."""
    params = init_params(agent.env, agent.program.network, jax.random.key(0))
    return Agent(agent.env, agent.program, params, agent.search_config)


def test_the_tictactoe_agent_plays_perfectly():
    """The network alone picks an optimal move in every one of the 4,520 live positions,
    and its table of moves loses no game from either seat (the game's own exhaustive
    check, `envs.tictactoe`'s ground truth: about a second)."""
    agent = Agent.load("tictactoe")
    metrics = make_evaluator(agent.env).network_metrics(agent.player("network"))
    assert metrics["net_optimal_share"] == 1.0
    assert metrics["net_unbeatable"] == 1.0 and metrics["perfect"] == 1.0


# The Connect Four network alone picks an optimal move in 72.4% of the solver's 1,000
# positions and 64.5% of the non-trivial ones (docs/results.md). Untrained networks of
# its program scored at most 43.6% and 41.7% (seeds 0-19; 31% and 19% on average).
# The network is one fixed function of one file, so the figures repeat but for the last
# bits of a float: the floors sit between the two, well clear of each.
C4_FLOORS = {"net_move_accuracy": 0.60, "net_move_accuracy_hard": 0.50}


def test_the_connect_four_network_finds_optimal_moves_on_the_solved_positions():
    agent = Agent.load("connect_four")
    evaluator = make_evaluator(agent.env)
    metrics = evaluator.network_metrics(agent.player("network"))
    fresh = evaluator.network_metrics(untrained(agent).player("network"))
    for key, floor in C4_FLOORS.items():
        assert metrics[key] >= floor, (key, metrics)
        assert fresh[key] < floor, (key, fresh)  # the floor tells a trained network


# The Go network alone won 1,024 of 1,024 games against random play (seats swapped for
# half; key 1), so it fails to win a game at a rate below upper_bound(0, 1024) = 0.45%,
# and GO_GAMES games leave at most 3 unwon (false failure < 1e-3). A player no better
# than random play (half its games) would pass less than once in 10^14; untrained
# networks of its program left 34-58 of 64 games unwon (seeds 0-9).
GO_GAMES = 64
GO_NOT_WON = upper_bound(0, 1024)


def test_the_go_network_beats_random_play():
    agent = Agent.load("go7x7")
    allowed = max_failures(GO_GAMES, GO_NOT_WON)
    for player, strong in ((agent, True), (untrained(agent), False)):
        result = play_match(agent.env, player.player("network"), random_player(),
                            jax.random.key(0), GO_GAMES)
        not_won = int(np.sum(result.results <= 0))
        assert (not_won <= allowed) == strong, (strong, not_won, allowed)


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
    manifest = f"{shipped_agents.FOLDER}/{shipped_agents.MANIFEST}"
    assert any(fnmatch.fnmatch(manifest, pattern) for pattern in patterns)
    assert (resources.files("azjax") / manifest).is_file()


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
    manifest = ROOT / "azjax" / shipped_agents.FOLDER / shipped_agents.MANIFEST
    assert sizes.get(f"azjax/agents/{shipped_agents.MANIFEST}") == manifest.stat().st_size


def test_the_commands_help_lists_the_shipped_names():
    for main in (play_main, serve_main, gtp_main, arena_main):
        done = command(main, ["--help"])
        assert done.returncode == 0
        assert "tictactoe, connect_four, go7x7" in " ".join(done.stdout.split()), main


# --------------------------------------------------------------------------------------
# Slow: each agent plays through the commands
# --------------------------------------------------------------------------------------


# Each agent with its search against an opponent an untrained network loses to, in
# ARENA_GAMES games, with the random opening plies docs/results.md measured with, above a
# floor of wins: tic-tac-toe draws every game against the solver (perfect play);
# Connect Four left 3 of 100 games unwon against mcts:100, so it leaves at most 9 of 32
# (upper_bound(3, 100) = 9.7% a game); Go won 65 of 100 against gnugo:1, so it wins at
# least 8 of 32 (lower_bound(65, 100) = 53% a game); false failure < 1e-3 each.
# Untrained networks won 2 of 32 against mcts:100 and 0 of 32 against gnugo:1.
ARENA_GAMES = 32


@pytest.mark.slow  # compiles each agent's search for a match, and GNU Go plays: a minute
@pytest.mark.parametrize("name,opponent,openings", [("tictactoe", "solver", 0),
                                                    ("connect_four", "mcts:100", 2),
                                                    ("go7x7", "gnugo:1", 2)])
def test_each_plays_through_the_arena_above_a_floor(name, opponent, openings):
    done = command(arena_main, [f"alphazero:{name}", opponent, "--games", str(ARENA_GAMES),
                                "--openings", str(openings)])
    assert done.returncode == 0, done.stderr
    game = GAMES[name][0]
    assert done.stdout.startswith(f"{game}: alphazero:{name} vs {opponent}: "
                                  f"{ARENA_GAMES} games")
    counts = done.stdout.splitlines()[1].split(";")[0].split(": ")[1]
    wins, draws, losses = (int(part.split()[0]) for part in counts.split(", "))
    assert wins + draws + losses == ARENA_GAMES
    if name == "tictactoe":
        assert draws == ARENA_GAMES, done.stdout
    elif name == "connect_four":
        assert draws + losses <= max_failures(ARENA_GAMES, upper_bound(3, 100)), done.stdout
    else:
        assert wins >= min_successes(ARENA_GAMES, lower_bound(65, 100)), done.stdout


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
