"""The notebooks run end to end at a smoke budget, where a researcher opens them, and do
what they say.

Outside the checkout: the fixture builds the wheel of this checkout, makes a fresh
virtual environment (no system site-packages) with nothing but `ipykernel`, and runs
every notebook with nbclient in a `python3` kernel of that environment, its working
directory a scratch directory and `AZJAX_SOURCE` the wheel. The first notebook's install
cell installs the wheel (and its dependencies, from the package index or pip's cache);
the notebooks after it find azjax installed and install nothing. Each notebook gets a
cell injected after its `parameters` cell (papermill-style) that sets `SMOKE = True`, the
run directory and the moves typed into the play cell; its saved outputs are cleared
first. The tests then read the executed notebook's outputs and the run directory it
wrote.

Slow (the wheel, the environment, one install, and a kernel and a training run per
notebook, about seven minutes in all on 2 cores): `.ci/run` runs them in its second step
(`pytest -m slow`). The Go notebook plays GNU Go (`gnugo`, as CI installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from users_build import users_environment

import azjax
import envs
from azjax.run.directory.run_dir import RunDir

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CELL_TIMEOUT = 600  # seconds per cell (a smoke run takes about a minute; an install more)
# What the wheel is not built from: the checkout's environments, runs and caches.
NOT_IN_WHEEL = (".git", ".venv", "venv", "runs", "build", "*.egg-info", "__pycache__",
                "artifacts", ".pytest_cache", ".hypothesis", ".cache", "site")
SMOKE_ITERATIONS = 4  # what SMOKE sets in the notebooks
SMOKE_GAMES = 4
BASELINES = {
    "tictactoe": ("random", "solver", "mcts:100"),
    "connect_four": ("random", "mcts:100", "alphabeta:2"),
    "go": ("random", "mcts:100", "gnugo:1"),
    "your_own_game": ("random", "mcts:100", "mcts:400"),
}
# Ground-truth metric each game's evaluation logs.
ACCURACY_KEY = {"tictactoe": "net_optimal_share", "connect_four": "net_move_accuracy",
                "go": "net_vs_random", "your_own_game": "net_vs_random"}
# A line of env.render, and how often it is in one board (Hex: the lower letters; Go:
# the letters above and below the board).
FOOTER = {"tictactoe": ("  a b c", 1), "connect_four": ("1 2 3 4 5 6 7", 1),
          "go": ("   A B C D E F G", 2), "your_own_game": ("         a b c d e", 1)}
# How the notebook names the players in its sample game.
MARKS = {"tictactoe": ("X", "O"), "connect_four": ("X", "O"), "go": ("Black", "White"),
         "your_own_game": ("X", "O")}
# Typed into the play cell: a word that is not a move, then every square / column in
# turn (squares taken and full columns are refused too), so the game ends whatever the
# agent plays.
SCRIPTED_MOVES = {
    "tictactoe": ["e5"] + [col + row for row in "123" for col in "abc"],
    "connect_four": ["8"] + [str(col) for col in range(1, 8) for _ in range(6)],
    # Go: passes, as many as the agent's moves can be (a game ends after two passes in a
    # row or at max_moves plies, at most 2 * 7 * 7).
    "go": ["z99"] + ["pass"] * 60,
    "your_own_game": ["z9"] + [col + row for row in "12345" for col in "abcde"],
}
SVG = "{http://www.w3.org/2000/svg}"


def _cell(nb, tag: str):
    return next(cell for cell in nb.cells if tag in cell.metadata.get("tags", []))


def _text(cell) -> str:
    """What a code cell printed to stdout or returned, as text (warnings on stderr and the
    text stand-ins of pictures left out)."""
    parts = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if out.output_type == "stream" and out.name == "stdout":
            parts.append(out.text)
        elif "text/plain" in data and not {"image/png", "image/svg+xml"} & set(data):
            parts.append(data["text/plain"])
    return "".join(parts)


def _images(cell) -> int:
    return sum("image/png" in out.get("data", {}) for out in cell.get("outputs", []))


def _svgs(cell) -> list[ET.Element]:
    """The SVG pictures a code cell showed, parsed (a malformed one fails the test)."""
    return [ET.fromstring(out.data["image/svg+xml"]) for out in cell.get("outputs", [])
            if "image/svg+xml" in out.get("data", {})]


def _texts(svg: ET.Element) -> list[str]:
    return [el.text or "" for el in svg.iter(f"{SVG}text")]


def _pieces(svg: ET.Element) -> tuple[int, int]:
    """The pieces drawn of player 0 and of player 1 (`class="piece p0"` / `"piece p1"`)."""
    counts = [0, 0]
    for el in svg.iter():
        classes = el.get("class", "").split()
        if "piece" in classes:
            counts[0] += "p0" in classes
            counts[1] += "p1" in classes
    return counts[0], counts[1]


def _tiles(grid: ET.Element) -> list[tuple[ET.Element, str]]:
    """The pictures `envs.picture.tile` laid out (a `g` each) with their captions."""
    pictures = [el for el in grid if el.tag == f"{SVG}g"]
    captions = [el.text for el in grid if el.tag == f"{SVG}text"]
    assert len(pictures) == len(captions)
    return list(zip(pictures, captions))


def _run(*args, **kwargs) -> str:
    out = subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True,
                         **kwargs)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


@pytest.fixture(scope="module")
def fresh_kernel(tmp_path_factory):
    """A fresh virtual environment outside the checkout with only `ipykernel` installed,
    its `python3` kernelspec ahead of any other on JUPYTER_PATH, and AZJAX_SOURCE the
    wheel of this checkout; the kernels get nothing of the checkout on their path.
    Yields (the environment's python, the wheel)."""
    root = tmp_path_factory.mktemp("fresh")
    # The wheel, built from a copy of the checkout (building leaves build/ and egg-info).
    source = root / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_IN_WHEEL))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", root / "wheel",
         source, cwd=root)
    (wheel,) = (root / "wheel").glob("azjax-*.whl")
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "ipykernel")
    spec = root / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (fresh venv)", "language": "python"}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(root / "jupyter"))
        patch.setenv("AZJAX_SOURCE", str(wheel))
        patch.delenv("PYTHONPATH", raising=False)
        patch.delenv("VIRTUAL_ENV", raising=False)
        patch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
        yield python, wheel


def _azjax_installed(python: Path) -> bool:
    found = "import importlib.util, sys; sys.exit(importlib.util.find_spec('azjax') is None)"
    return subprocess.run([str(python), "-c", found], check=False,
                          cwd=python.parent).returncode == 0


@pytest.fixture(scope="module", params=sorted(BASELINES))
def executed(request, fresh_kernel, tmp_path_factory):
    """(game, executed notebook, run directory, working directory, whether azjax was
    installed before it ran) of one notebook's smoke run."""
    game = request.param
    python, _ = fresh_kernel
    work = tmp_path_factory.mktemp(game)
    run_dir = work / "run"
    nb = nbformat.read(NOTEBOOKS / f"{game}.ipynb", as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:  # the notebooks are committed with the outputs of a full run
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    at = nb.cells.index(_cell(nb, "parameters")) + 1
    injected = (f"SMOKE = True\nRUN_DIR = {str(run_dir)!r}\n"
                f"SCRIPTED_MOVES = {SCRIPTED_MOVES[game]!r}\n")
    nb.cells.insert(at, nbformat.v4.new_code_cell(
        injected, metadata={"tags": ["injected-parameters"]}))
    nb.cells.append(nbformat.v4.new_code_cell(
        "import sys\nimport azjax\nprint(sys.executable)\nprint(azjax.__file__)",
        metadata={"tags": ["interpreter"]}))
    installed_before = _azjax_installed(python)
    client = NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(work)}})
    client.execute()
    return game, nb, run_dir, work, installed_before


def test_kernel_runs_the_fresh_venv_and_installs_azjax_once(executed, fresh_kernel):
    _, nb, _, _, installed_before = executed
    python, wheel = fresh_kernel
    setup = _cell(nb, "setup")
    assert 'importlib.util.find_spec("azjax") is None' in setup.source
    assert 'os.environ.get("AZJAX_SOURCE",' in setup.source
    if installed_before:  # an earlier notebook installed it: this one does nothing
        assert _text(setup) == ""
    else:  # the first notebook installs the wheel with its install cell
        assert f"installed azjax {azjax.__version__} from {wheel}\n" in _text(setup), \
            _text(setup)
    location = re.search(r"^Location: (.+)$", _run(python, "-m", "pip", "show", "azjax"),
                         re.MULTILINE)[1]
    site_packages = Path(location).resolve()
    assert site_packages.is_relative_to(python.parent.parent.resolve())
    assert "JAX devices: [" in _text(_cell(nb, "imports"))
    executable, module = _text(_cell(nb, "interpreter")).split()
    assert executable == str(python)
    assert Path(module).resolve().is_relative_to(site_packages)
    assert not Path(module).resolve().is_relative_to(ROOT)


def test_training_writes_metrics_and_checkpoints(executed):
    game, nb, run_dir, _, _ = executed
    out = _text(_cell(nb, "train"))
    count = re.search(r"(\d+) metrics records; last: iteration (\d+)", out)
    assert count, out
    records = RunDir(run_dir).metrics.read()
    assert len(records) == int(count[1]) == SMOKE_ITERATIONS  # logged every iteration
    assert [r["iteration"] for r in records] == list(range(1, SMOKE_ITERATIONS + 1))
    assert int(count[2]) == SMOKE_ITERATIONS
    assert all({"loss", "value_loss", "policy_loss", "games"} <= set(r) for r in records)
    last = records[-1]
    assert 0.0 <= last[ACCURACY_KEY[game]] <= 1.0  # evaluated at the last iteration
    assert 0.0 <= last["vs random"] <= 1.0
    assert f"it {SMOKE_ITERATIONS:>5} |" in out  # the status lines
    assert (run_dir / "checkpoints" / str(SMOKE_ITERATIONS)).is_dir()


def test_learning_curves_are_drawn(executed):
    _, nb, _, _, _ = executed
    assert _images(_cell(nb, "curves")) == 1
    assert _images(_cell(nb, "evaluate")) == 1


def test_evaluation_reports_each_baseline_consistently(executed):
    game, nb, _, _, _ = executed
    out = _text(_cell(nb, "evaluate"))
    for spec in BASELINES[game]:
        block = out.split(f"agent vs {spec}: ", 1)[1].split("\n\n", 1)[0]
        games = int(re.match(r"(\d+) games", block)[1])
        assert games == SMOKE_GAMES
        wins, draws, losses, score = re.search(
            r"agent: (\d+) wins, (\d+) draws, (\d+) losses; score ([\d.]+)%", block).groups()
        wins, draws, losses = int(wins), int(draws), int(losses)
        assert wins + draws + losses == games
        assert float(score) == pytest.approx(100 * (wins + draws / 2) / games, abs=0.05)
        seats = re.findall(r"(\d+) W / (\d+) D / (\d+) L", block)
        assert len(seats) == 2
        assert [sum(int(s[i]) for s in seats) for i in range(3)] == [wins, draws, losses]
        assert all(sum(map(int, s)) == games // 2 for s in seats)
        if spec == "solver":
            assert wins == 0  # perfect play never loses


def _stones_after_each_ply(run_dir: Path, moves: list[str]
                           ) -> tuple[list[tuple[int, int]], envs.State]:
    """Go: the stones of Black and White after each of `moves`, replayed under the rules of
    the run's game (`config.json`), and the final state."""
    program = json.loads((run_dir / "config.json").read_text())["program"]
    env = envs.make(program["game"], **program["game_options"])
    state, step = env.init(jax.random.key(0)), jax.jit(env.step)
    stones = []
    for move in moves:
        assert not bool(state.terminated)
        state = step(state, env.parse_move(move))
        board = np.asarray(state.board)
        stones.append((int((board == 0).sum()), int((board == 1).sum())))
    assert bool(state.terminated)
    return stones, state


def test_sample_game_is_drawn_to_the_end(executed):
    game, nb, run_dir, _, _ = executed
    cell = _cell(nb, "sample-game")
    out = _text(cell)
    first, second = MARKS[game]
    moves = re.findall(rf"^(\S+) \(({first}|{second})\) plays (\S+)$", out, re.MULTILINE)
    assert moves, out
    assert [mark for _, mark, _ in moves] == [MARKS[game][i % 2] for i in range(len(moves))]
    result = re.search(rf"^result: (draw|.+ \(({first}|{second})\) wins)$", out, re.MULTILINE)
    assert result, out

    # The pieces on each picture: one more per ply, the mover's (nothing is ever taken off
    # in these games); in Go, the stones of the game replayed, captures and passes included.
    if game == "go":
        stones, final = _stones_after_each_ply(run_dir, [move for _, _, move in moves])
    else:
        stones = [((ply + 1) // 2, ply // 2) for ply in range(1, len(moves) + 1)]
    grid, final_picture = _svgs(cell)  # the positions along the game, the final one alone
    tiles = _tiles(grid)
    assert tiles and tiles[-1][1].startswith(f"{len(moves)}. ")  # the last ply is there
    for picture, caption in tiles:
        ply, mark, move = re.fullmatch(r"(\d+)\. (\S+) (\S+)", caption).groups()
        ply = int(ply)
        assert (mark, move) == moves[ply - 1][1:], caption
        assert _pieces(picture) == stones[ply - 1], caption
    assert _pieces(final_picture) == stones[-1]
    if game == "go":
        assert sum(stones[-1]) <= sum(move != "pass" for _, _, move in moves)
        black, white, komi = map(float, re.search(
            r"^Area: Black (\S+), White (\S+) \+ komi (\S+)$", out, re.MULTILINE).groups())
        margin = black - white - komi  # Tromp-Taylor: Black's area minus White's and komi
        assert np.sign(margin) == np.sign(float(final.rewards[0]))
        assert (result[1] == "draw") == (margin == 0)
        if margin:
            assert result[2] == ("Black" if margin > 0 else "White")
    elif result[1] == "draw":
        assert len(moves) == (9 if game == "tictactoe" else 42)
    else:
        assert result[2] == moves[-1][1]  # the last mover won


@pytest.mark.parametrize("executed", ["connect_four", "go", "tictactoe"], indirect=True)
def test_analysis_board_shows_the_search(executed):
    game, nb, _, _, _ = executed
    cell = _cell(nb, "analysis")
    out = _text(cell)
    said = re.findall(r"^(\S+) to move: the agent plays (\S+) \(search value ([-+][\d.]+)\)"
                      r"(: (a right move|NOT a right move) \(right moves from the (.+?): (.*)\)"
                      r"|; the right moves are not known here)$", out, re.MULTILINE)
    boards = _svgs(cell)
    assert said and len(boards) == len(said), out
    for svg, (mark, move, value, _, verdict, source, right) in zip(boards, said):
        assert mark in MARKS[game]
        texts = _texts(svg)
        assert any(t.startswith(f"search value {value}, network ") for t in texts), texts
        assert any(t.startswith(f"plays {move} (") for t in texts), texts
        line = next(t for t in texts if t.startswith("line: ")).split()[1:]
        assert line[0] == move  # the principal variation starts with the move played
        assert "move   visits     Q    prior" in texts
        rows = [re.fullmatch(r" *(\S+) +([\d.]+)% +[-+][\d.]+ +([\d.]+)%( right)?", t)
                for t in texts[texts.index("move   visits     Q    prior") + 1:]]
        rows = [r for r in rows if r]
        assert rows and sum(float(r[2]) for r in rows) <= 100 + 0.05 * len(rows)  # rounded
        shown = [t for t in texts if t.startswith("right moves (")]
        if game == "go":  # no solver, no ground truth
            assert not shown and not verdict
            continue
        source_wanted = {"tictactoe": "solver", "connect_four": "ground truth"}[game]
        assert source == source_wanted
        assert shown == [f"right moves ({source}): {right}"]
        right = right.split()
        assert right and (verdict == "a right move") == (move in right)
        assert {r[1] for r in rows if r[4]} <= set(right)  # rows marked right are right
    if game == "go":
        assert re.search(r"^in the sample game it played \S+ after ply \d+$", out, re.MULTILINE)


def test_play_cell_refuses_a_bad_move_and_finishes(executed):
    game, nb, _, _, _ = executed
    out = _text(_cell(nb, "play"))
    bad = SCRIPTED_MOVES[game][0]
    after_bad = out.split(f"Your move: {bad}\n", 1)[1]
    assert after_bad.startswith("unreadable move:"), out
    assert "game over:" not in out  # not abandoned: the moves were enough
    results = re.findall(r"^(You win!|Draw\.|The agent wins\.)$", out, re.MULTILINE)
    assert len(results) == 1, out
    yours, agents = out.count("You play "), out.count("The agent plays ")
    assert yours in (agents, agents + 1)  # HUMAN = 0: you moved first, then in turn
    footer, per_board = FOOTER[game]
    assert out.count(footer) == per_board * (yours + agents + 1)  # the board after every move


@pytest.mark.parametrize("executed", ["your_own_game"], indirect=True)
def test_hex_tutorial_shows_checks_and_names_the_game(executed):
    _, nb, run_dir, work, _ = executed
    game_file = ROOT / "examples" / "hex_game.py"
    # One game, in two places: the notebook writes examples/hex_game.py into its working
    # directory (`%%writefile`) and imports it from there; no other cell defines it.
    source = _cell(nb, "game-source").source
    assert source == "%%writefile hex_game.py\n" + game_file.read_text().rstrip("\n")
    assert _text(_cell(nb, "game-source")).strip() == "Writing hex_game.py"
    assert (work / "hex_game.py").read_text().rstrip("\n") == game_file.read_text().rstrip("\n")
    assert sum("class Hex(" in cell.source for cell in nb.cells) == 1
    assert "from hex_game import Hex" in _cell(nb, "render").source
    out = _text(_cell(nb, "render"))
    board, _, rest = out.partition("\n\n")
    assert board.splitlines()[0] == "    a b c d e" and board.count("X") == board.count("O") == 2
    assert re.search(r"^X to move; legal moves: (\S+ ){20}\S+$", rest, re.MULTILINE), out
    out = _text(_cell(nb, "check"))
    assert re.match(r"hex: all \d+ properties hold\n", out), out
    assert ", 0 drawn" in out and "symmetries 2 " in out
    out = _text(_cell(nb, "register"))
    assert "registered: Hex(name='hex')" in out and "hex5" in out
    assert "a run records this game as ('hex_game:Hex', {'size': 5})" in out
    program = json.loads((run_dir / "config.json").read_text())["program"]
    assert (program["game"], program["game_options"]) == ("hex_game:Hex", {"size": 5})


def test_the_installed_command_trains_tictactoe_to_perfect_play(fresh_kernel, tmp_path):
    """The README's main job from the wheel, outside the checkout: `azjax train
    tictactoe`, the console script of the fresh environment, compiled as a user's
    process compiles (`tests/users_build.py`), stops at perfect play."""
    python, wheel = fresh_kernel
    if not _azjax_installed(python):  # run alone: no notebook has installed it yet
        _run(python, "-m", "pip", "install", "--quiet", wheel)
    out = _run(python.parent / "azjax", "train", "tictactoe", cwd=tmp_path,
               env=users_environment())  # compiled as a user's, not as the tests
    assert re.search(r"^perfect play reached at iteration \d+; stopping$", out, re.MULTILINE), out
    records = RunDir(tmp_path / "runs" / "tictactoe").metrics.read()
    assert records[-1]["perfect"] and records[-1]["net_optimal_share"] == 1.0
