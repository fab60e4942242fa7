"""The "your own game" tutorial: Hex in a user's file (examples/hex_game.py).

(a) The rules against an independent plain-Python Hex (cube coordinates, depth-first
search over sets) on ~400 random games of sizes 2 to 11; (b) `envs.check_env`;
(c) the command-line path in a directory outside the repository, with no edit to
`azjax` or `envs`: check, train, play, league.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from child_io import finish

import envs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "hex_game.py"


def _load_example():
    """examples/hex_game.py as the module `hex_game` (as a user's script imports it)."""
    if "hex_game" not in sys.modules:
        spec = importlib.util.spec_from_file_location("hex_game", EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        sys.modules["hex_game"] = module
        spec.loader.exec_module(module)
    return sys.modules["hex_game"]


hex_game = _load_example()
Hex = hex_game.Hex
_reference_spec = importlib.util.spec_from_file_location(
    "hex_reference", ROOT / "examples" / "hex_reference.py")
hex_reference = importlib.util.module_from_spec(_reference_spec)
_reference_spec.loader.exec_module(hex_reference)


# ----------------------------------------------------------------------------------------
# An independent reference: cube coordinates and a depth-first search over Python sets.
# ----------------------------------------------------------------------------------------

def ref_neighbours(n: int) -> list[set[int]]:
    """Cell (r, c) is the cube point (x, y, z) = (c, -c - r, r); hexagons touch at cube
    distance 1."""
    cells = [(r, c) for r in range(n) for c in range(n)]
    return [
        {r2 * n + c2 for r2, c2 in cells
         if max(abs(c2 - c), abs(r2 - r), abs((c2 + r2) - (c + r))) == 1}
        for r, c in cells
    ]


class RefHex:
    """Plain-Python Hex: X (0) joins row 0 to row n-1, O (1) column 0 to column n-1."""

    def __init__(self, n: int):
        self.n = n
        self.adjacent = ref_neighbours(n)
        self.stones: list[set[int]] = [set(), set()]
        self.player = 0
        self.winner: int | None = None
        self.plies = 0

    def legal(self) -> set[int]:
        if self.winner is not None:
            return set()
        return set(range(self.n * self.n)) - self.stones[0] - self.stones[1]

    def play(self, cell: int) -> None:
        assert cell in self.legal()
        self.stones[self.player].add(cell)
        if self.connected(self.player):
            self.winner = self.player
        self.player = 1 - self.player
        self.plies += 1

    def connected(self, p: int) -> bool:
        n, mine = self.n, self.stones[p]
        line = (lambda cell: cell // n) if p == 0 else (lambda cell: cell % n)
        todo = [cell for cell in mine if line(cell) == 0]
        seen = set(todo)
        while todo:
            cell = todo.pop()
            if line(cell) == n - 1:
                return True
            for other in self.adjacent[cell] & mine - seen:
                seen.add(other)
                todo.append(other)
        return False


def cell_of(n: int, text: str) -> int:
    """'c3' -> row 2, column 2 (written independently of Hex.parse_move)."""
    return (int(text[1:]) - 1) * n + "abcdefghijk".index(text[0])


def random_games(env: Hex, num_games: int, seed: int):
    """`num_games` games of uniformly random legal moves, as one jitted vmapped scan over
    `max_plies` plies: the actions [G, T] and the state after every ply [G, T, ...]."""

    def game(key):
        def ply(state, key):
            noise = jax.random.uniform(key, (env.num_actions,))
            action = jnp.argmax(jnp.where(state.legal_action_mask, noise, -1.0))
            state = env.step(state, action.astype(jnp.int32))
            return state, (action, state)

        keys = jax.random.split(key, env.max_plies + 1)
        return jax.lax.scan(ply, env.init(keys[0]), keys[1:])[1]

    keys = jax.random.split(jax.random.key(seed), num_games)
    return jax.device_get(jax.jit(jax.vmap(game))(keys))


@pytest.mark.parametrize("n, num_games", [(2, 40), (3, 100), (5, 200), (7, 40), (11, 10)])
def test_rules_match_the_reference_on_random_games(n, num_games):
    env = Hex(size=n)
    actions, states = random_games(env, num_games, seed=n)
    lengths = []
    for g in range(num_games):
        ref = RefHex(n)
        for t in range(env.max_plies):
            live = ref.winner is None
            if live:
                ref.play(int(actions[g, t]))
                if ref.winner is not None:
                    lengths.append(ref.plies)
            at = f"size {n}, game {g}, ply {t + 1}"
            mask = np.zeros(n * n, bool)
            mask[list(ref.legal())] = True
            np.testing.assert_array_equal(states.legal_action_mask[g, t], mask, err_msg=at)
            assert bool(states.terminated[g, t]) == (ref.winner is not None), at
            rewards = [0.0, 0.0]
            if live and ref.winner is not None:  # paid on the winning ply only
                rewards = [1.0, -1.0] if ref.winner == 0 else [-1.0, 1.0]
            assert states.rewards[g, t].tolist() == rewards, at
            assert int(states.current_player[g, t]) == ref.player, at
            assert int(states.step_count[g, t]) == ref.plies, at
            obs = states.observation[g, t].reshape(n * n, 3)
            for plane, player in ((0, ref.player), (1, 1 - ref.player)):
                assert set(np.flatnonzero(obs[:, plane])) == ref.stones[player], at
            assert obs[:, 2].tolist() == [ref.player == 0] * (n * n), at
        assert ref.winner is not None, f"size {n}, game {g}: no winner on a full board"
    assert len(lengths) == num_games
    assert max(lengths) <= n * n and min(lengths) >= 2 * n - 1  # the shortest chain is n


# Hand-made positions that pin the six neighbours down; moves alternate X, O, X, ...
@pytest.mark.parametrize("n, moves, winner", [
    (2, ["b1", "a1", "a2"], 0),  # b1-a2 touch: (row + 1, col - 1)
    (2, ["a1", "b1", "b2"], None),  # a1-b2 do not: (row + 1, col + 1)
    (2, ["a1", "b1", "b2", "a2"], 1),  # O: b1-a2 joins column a to column b
    (3, ["c1", "a1", "b2", "a2", "a3"], 0),  # the short diagonal c1-b2-a3
    (3, ["a1", "a2", "b2", "c1", "c3"], None),  # the long diagonal a1-b2-c3 is no chain
    (3, ["a1", "a2", "b1", "b2", "c1", "c2"], 1),  # O's row 2, left to right
    (3, ["a1", "b2", "a1"], 1),  # a taken cell: the mover loses (envs.Env's rule)
])
def test_hand_made_positions(n, moves, winner):
    env = Hex(size=n)
    ref = RefHex(n)
    state = env.init(jax.random.key(0))
    step = jax.jit(env.step)
    for text in moves:
        cell = env.parse_move(text)
        assert cell == cell_of(n, text)
        legal = bool(state.legal_action_mask[cell])
        assert legal == (cell in ref.legal())
        if not legal:  # the illegal-move rule of envs.Env: the mover loses
            mover = int(state.current_player)
            state = step(state, cell)
            assert bool(state.terminated) and 1 - mover == winner
            assert env.result_text(state) == f"{'XO'[mover]} lost by an illegal move."
            assert state.rewards.tolist() == ([-1.0, 1.0] if mover == 0 else [1.0, -1.0])
            return
        ref.play(cell)
        state = step(state, cell)
    assert ref.winner == winner
    assert bool(state.terminated) == (winner is not None)
    if winner is not None:
        assert float(state.rewards[winner]) == 1.0 and float(state.rewards[1 - winner]) == -1.0
        goal = ("top and bottom", "left and right")[winner]
        assert env.result_text(state) == f"{'XO'[winner]} connected {goal}."
    else:
        assert env.result_text(state) is None


def test_rotation_symmetry_commutes_with_play():
    n = 5
    env = Hex(size=n)
    sym = env.symmetries
    assert sym.size == 2
    np.testing.assert_array_equal(np.asarray(sym.cell_perm[1]), np.arange(n * n)[::-1])
    actions, _ = random_games(env, 4, seed=7)
    play, turn = jax.jit(env.step), jax.jit(env.transform_state)
    for game in actions:
        state = rotated = env.init(jax.random.key(0))
        for action in game[:9]:
            if bool(state.terminated):
                break
            state = play(state, int(action))
            rotated = play(rotated, n * n - 1 - int(action))
            turned = turn(state, 1)
            for field in ("board", "observation", "legal_action_mask", "rewards",
                          "terminated", "current_player"):
                np.testing.assert_array_equal(getattr(turned, field), getattr(rotated, field))


@pytest.mark.parametrize("n", range(2, 12))
def test_notation_round_trips(n):
    env = Hex(size=n)
    texts = [env.format_move(a) for a in range(n * n)]
    assert len(set(texts)) == n * n
    assert texts[0] == "a1" and texts[n - 1] == "abcdefghijk"[n - 1] + "1"
    assert texts[-1] == "abcdefghijk"[n - 1] + str(n)
    assert [env.parse_move(t) for t in texts] == list(range(n * n))
    assert env.parse_move(f" {texts[-1].upper()} ") == n * n - 1
    last = "abcdefghijk"[n - 1]
    for bad in ["", "a", "1", "a0", f"a{n + 1}", f"{chr(ord(last) + 1)}1", "1a", "a1a",
                "a-1", "aa1"]:
        with pytest.raises(ValueError, match="column letter"):
            env.parse_move(bad)
    for bad in (-1, n * n):
        with pytest.raises(ValueError):
            env.format_move(bad)


@pytest.mark.parametrize("size", [1, 12, 2.5, "5", None, True])
def test_bad_size_is_a_value_error(size):
    with pytest.raises(ValueError, match="size"):
        Hex(size=size)


def test_make_builds_it_by_import_path_and_by_a_registered_name():
    env = envs.make("hex_game:Hex", size=4)
    assert isinstance(env, Hex) and env.observation_shape == (4, 4, 3)
    assert env.num_actions == env.max_plies == 16
    envs.register("hex_test6", lambda **options: Hex(size=6, **options))
    assert envs.make("hex_test6").size == 6
    with pytest.raises(ValueError, match="size"):
        envs.make("hex_game:Hex", size=12)


def test_render_draws_the_rhombus_with_coordinates():
    env = Hex(size=3)
    state = env.init(jax.random.key(0))
    for text in ("b1", "a3"):
        state = env.step(state, env.parse_move(text))
    assert env.render(state).splitlines() == [
        "    a b c",
        " 1  . X .  1",
        "  2  . . .  2",
        "   3  O . .  3",
        "       a b c",
    ]
    assert env.player_marks == ("X", "O")
    assert "a1-c3" in env.move_notation


# ----------------------------------------------------------------------------------------
# (b) The conformance checker.
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 5])
def test_check_env_passes(n):
    """With the example's plain-Python reference (examples/hex_reference.py), which
    agrees on every ply of every game."""
    report = envs.check_env(Hex(size=n), reference=hex_reference.HexReference(n))
    assert report.finished == report.games and report.wins[2] == 0  # Hex has no draws
    assert report.symmetries == 2 and report.longest <= n * n
    assert report.reference_plies == report.plies and "reference" in report.properties


def test_the_reference_catches_a_missing_neighbour():
    """A Hex whose reference forgets one of the six neighbours disagrees with the game:
    the reference is independent enough to tell rules apart."""
    class FourNeighbours(hex_reference.HexReference):
        def new_initial_state(self):
            state = super().new_initial_state()
            state._joins_edges = lambda player: _joins_without_diagonal(state, player)
            return state

    def _joins_without_diagonal(state, player):
        saved = hex_reference.STEPS
        hex_reference.STEPS = tuple(s for s in saved if s not in ((-1, 1), (1, -1)))
        try:
            return hex_reference.HexReferenceState._joins_edges(state, player)
        finally:
            hex_reference.STEPS = saved

    with pytest.raises(envs.EnvCheckError) as caught:
        envs.check_env(Hex(size=5), reference=FourNeighbours(5))
    assert caught.value.property == "reference"


# ----------------------------------------------------------------------------------------
# (c) The command-line path, in a directory of the user's own.
# ----------------------------------------------------------------------------------------

TINY_TRAINING = [
    "--game-options", "size", "3", "--iterations", "2", "--eval-every", "0",
    "--network.channels", "8", "--network.policy-filters", "2",
    "--network.value-filters", "1", "--network.value-hidden", "8",
    "--search.num-simulations", "4", "--search.max-num-considered-actions", "4",
    "--selfplay.num-games", "8", "--selfplay.steps-per-iteration", "4",
    "--learner.batch-size", "16", "--replay-capacity", "256", "--gradient-steps", "2",
]


def _start(args: list[str], cwd: Path, stdin: str = "") -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, *args], cwd=cwd, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdin.write(stdin)
    process.stdin.close()
    return process


def _output(process: subprocess.Popen) -> str:
    """The stdout of a finished command, which must have exited with status 0."""
    out, err = finish(process, 300)
    assert process.returncode == 0, f"{process.args}\nstdout:\n{out}\nstderr:\n{err}"
    return out


@pytest.mark.slow  # trains through the command line, ~40 s
def test_command_line_path_needs_no_edit_to_azjax_or_envs(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "hex_game.py")
    shutil.copy(ROOT / "examples" / "hex_reference.py", tmp_path / "hex_reference.py")

    # Size 5 (the default), against the example's reference, as the tutorial says.
    out = _output(_start(["-m", "envs.check", "hex_game:Hex", "--game-options", "size=5",
                          "--reference", "hex_reference:HexReference"], tmp_path))
    assert "reference  agreed on all" in out
    assert re.match(r"hex: all \d+ properties hold\n", out), out
    assert "finished; " in out and " by player 1, 0 drawn" in out and "max_plies 25" in out

    out = _output(_start([str(ROOT / "experiments" / "train.py"), "--game", "hex_game:Hex",
                          "--run-dir", "run", *TINY_TRAINING], tmp_path))
    assert "finished 2 iterations" in out
    run = tmp_path / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["program"]["game"] == "hex_game:Hex"
    assert config["program"]["game_options"] == {"size": 3}
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [1, 2]
    assert records[-1]["games"] > 0
    assert (run / "checkpoints" / "2").is_dir()

    # The league and a game in the terminal, side by side (one core each).
    league = _start(["-m", "azjax.league", "--run-dir", "run", "--baselines", "random,mcts:8",
                     "--games", "2", "--openings", "0"], tmp_path)
    # Every cell in turn: taken cells are refused, so the game ends whatever the agent does.
    cells = [col + row for row in "123" for col in "abc"]
    out = _output(_start(["-m", "azjax.play", "hex_game:Hex", "--run-dir", "run",
                          "--side", "first"], tmp_path, "\n".join(["z9", *cells]) + "\n"))
    assert "you move first (X)" in out
    assert "unreadable move: expected a cell a1-c3" in out
    plies = out.count("You play ") + out.count("The agent plays ")
    assert out.count("       a b c\n") == plies + 1  # the board after every move
    agent_moves = re.findall(r"The agent plays (\S+)", out)
    assert agent_moves and all(re.fullmatch(r"[abc][123]", m) for m in agent_moves)
    results = re.findall(r"^(You win!|The agent wins\.|Draw\.)$", out, re.MULTILINE)
    assert len(results) == 1 and results[0] != "Draw.", out
    chain = "X connected top and bottom." if results[0] == "You win!" else \
        "O connected left and right."
    assert chain in out

    out = _output(league)
    assert "league of 3 players on hex: it2, random, mcts:8" in out
    table = out.split("| rank | name |", 1)[1].split("\n\n", 1)[0]
    assert sorted(re.findall(r"^\| \d \| (\S+) \|", table, re.MULTILINE)) == [
        "it2", "mcts:8", "random"]
    assert (run / "league.csv").is_file()
