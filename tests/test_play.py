"""`python -m azjax.play`: move notation of every game, and the play loop driven by a
scripted human (bad input, commands, quit / end of input, play again, the CLI)."""

from __future__ import annotations

import functools
import io
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from test_games_training import TINY

import envs
from azjax import Agent
from azjax.commands import play
from azjax.core.networks import NetworkConfig, init_params
from envs.connect_four import state_from_moves

ROOT = Path(__file__).resolve().parents[1]

# The smallest network: the play loop needs an agent, not a good one.
CONFIG = TINY.replace(network=NetworkConfig(channels=8, policy_filters=2, value_hidden=8), iterations=1
)
GAMES = [
    ("tictactoe", {}),
    ("connect_four", {}),
    ("gomoku", {"size": 7, "k": 4}),
    ("go", {"size": 5, "history": 2, "max_moves": 30}),
    ("coin_split", {"coins": 9}),
    ("pgx:tic_tac_toe", {}),
]


@pytest.fixture(scope="module")
def run_dir(tiny_run) -> Path:
    """A tic-tac-toe run (the session's tiny one: a weak agent is enough to drive the
    loop), to read."""
    return tiny_run


@pytest.fixture(scope="module")
def ttt_agent(run_dir) -> Agent:
    return Agent.load(run_dir)


@functools.cache
def untrained_agent(game: str, **options) -> Agent:
    """An agent with a freshly initialised network (the loop does not need a good one)."""
    config = CONFIG.replace(game=game, game_options=options)
    env = config.make_env()
    params = init_params(env, config.program.network, jax.random.key(0))
    return Agent(env, config.program, params)


class Human:
    """A scripted terminal user. It keeps its own copy of the game, replayed from the
    "You play" / "The agent plays" lines of the transcript, and types what `turn(self)`
    returns at each move prompt; `answers` serve the side and play-again prompts."""

    def __init__(self, env, turn, answers=(), init_key=None):
        self.env, self.turn = env, turn
        self.answers = list(answers)
        self.init_key = init_key if init_key is not None else jax.random.key(0)
        self.init, self.step = play._compiled_rules(env)  # the jitted rules play uses
        self.lines: list[str] = []
        self.prompts: list[str] = []
        self.typed: list[str] = []
        self.queue: list[str] = []
        self.seen = 0
        self.state = None
        self.turns = 0
        self.rng = np.random.default_rng(0)

    def write(self, text: str) -> None:
        self.lines.append(text)

    def sync(self) -> None:
        """Replays the moves written since the last call on the human's copy."""
        for line in self.lines[self.seen:]:
            if line.startswith(f"{self.env.name}: you move"):
                self.state = self.init(self.init_key)
            for prefix in ("You play ", "The agent plays "):
                if line.startswith(prefix):
                    action = self.env.parse_move(line[len(prefix):])
                    assert bool(self.state.legal_action_mask[action]), line
                    self.state = self.step(self.state, action)
        self.seen = len(self.lines)

    def read(self, prompt: str) -> str:
        self.prompts.append(prompt)
        self.sync()
        if prompt.startswith("Your move"):
            if not self.queue:
                self.queue = list(self.turn(self))
                self.turns += 1
            text = self.queue.pop(0)
        else:
            text = self.answers.pop(0)
        if text is EOFError:
            raise EOFError
        self.typed.append(text)
        return text

    def legal(self) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.state.legal_action_mask))

    def random_move(self) -> str:
        return self.env.format_move(self.rng.choice(self.legal()))

    def count(self, start: str) -> int:
        return sum(line.startswith(start) for line in self.lines)

    def result(self, seat: int) -> float:
        """The human's result in its copy of the finished game."""
        self.sync()
        assert bool(self.state.terminated)
        first = int(self.init(self.init_key).current_player)
        return float(np.sign(self.state.rewards[first if seat == 0 else 1 - first]))


def random_turns(human: Human) -> list[str]:
    return [human.random_move()]


# --------------------------------------------------------------------------------------
# Notation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("game, options", GAMES + [("gomoku", {}), ("go", {"size": 19}),
                                                    ("coin_split", {"coins": 20})])
def test_parse_and_format_round_trip_every_action(game, options):
    env = envs.make(game, **options)
    texts = [env.format_move(a) for a in range(env.num_actions)]
    assert len(set(texts)) == env.num_actions
    assert [env.parse_move(t) for t in texts] == list(range(env.num_actions))
    assert [env.parse_move(f" {t.upper()} ") for t in texts] == list(range(env.num_actions))
    for bad in (-1, env.num_actions):
        with pytest.raises(ValueError):
            env.format_move(bad)
    for bad in ("", "x", "z99", "1.5", "٣"):
        with pytest.raises(ValueError):
            env.parse_move(bad)


def test_tictactoe_notations_follow_the_keypad_and_the_board_labels():
    env = envs.make("tictactoe")
    assert [env.parse_move(str(k)) for k in range(1, 10)] == list(range(9))
    assert [env.format_move(a) for a in range(9)] == ["a3", "b3", "c3", "a2", "b2", "c2", "a1", "b1", "c1"]
    assert env.parse_move("a3") == env.parse_move("1") == 0
    assert env.parse_move("a1") == env.parse_move("7") == 6
    assert env.parse_move("C1") == 8
    for bad in ("0", "10", "d1", "a4", "a", "1a", "b 2", "pass"):
        with pytest.raises(ValueError, match="1-9"):
            env.parse_move(bad)
    # The board's coordinates: a1 is the bottom-left cell of the render.
    state = env.step(env.init(jax.random.key(0)), env.parse_move("a1"))
    assert env.render(state).splitlines()[2] == "1 X . ."
    assert env.render(state).splitlines()[3] == "  a b c"


def test_go_and_gomoku_notation_match_their_boards():
    for game, options, row in (("go", {"size": 5}, " 4 . X . . . 4"),
                                ("gomoku", {"size": 7, "k": 4}, "4 . X . . . . .")):
        env = envs.make(game, **options)
        state = env.init(jax.random.key(0))
        state = state.replace(board=state.board.at[env.parse_move("b4")].set(0))
        assert row in env.render(state).splitlines()
    assert env.parse_move("d4") == 24
    with pytest.raises(ValueError, match="'d4'"):  # the example fits the board
        env.parse_move("pass")  # gomoku has no pass
    go = envs.make("go", size=5)
    assert go.parse_move("pass") == 25 and go.format_move(25) == "pass"


# --------------------------------------------------------------------------------------
# play_game
# --------------------------------------------------------------------------------------


def test_bad_input_gets_a_message_and_a_new_prompt_then_moves_are_played(ttt_agent):
    env = ttt_agent.env
    expected = []  # the human's legal moves, in board coordinates

    def turn(human: Human) -> list[str]:
        free = int(human.legal()[0])
        expected.append(env.format_move(free))
        typed = str(free + 1)  # keypad notation
        if human.turns == 0:
            return ["x", "10", "z9", "", "help", typed]
        taken = human.lines[-2].removeprefix("The agent plays ")  # the agent's last move
        return [taken, typed]

    human = Human(env, turn)
    result = play.play_game(ttt_agent, 0, human.read, human.write)

    assert human.count("unreadable move: expected a cell 1-9") == 3
    assert human.count("illegal move: ") == human.turns - 1 >= 2
    assert all(len(line.splitlines()) == 1 for line in human.lines
               if line.startswith(("unreadable", "illegal")))
    help_line = next(line for line in human.lines if line.startswith("Legal moves: "))
    assert help_line == "Legal moves: a3 b3 c3 a2 b2 c2 a1 b1 c1"
    played = [line.removeprefix("You play ") for line in human.lines
              if line.startswith("You play ")]
    assert played == expected
    # Each move is followed by the board; the last one is the final position.
    first = env.step(env.init(jax.random.key(0)), env.parse_move(played[0]))
    assert human.lines[human.lines.index(f"You play {played[0]}") + 1] == env.render(first)
    assert result == human.result(0)
    assert human.lines[-2] == env.render(human.state)
    assert human.lines[-1] == {1.0: "You win!", 0.0: "Draw.", -1.0: "The agent wins."}[result]
    assert human.prompts == ["Your move: "] * len(human.typed)


@pytest.mark.parametrize("game, options", GAMES)
def test_a_whole_game_of_every_game(game, options, ttt_agent):
    agent = ttt_agent if game == "tictactoe" else untrained_agent(game, **options)
    key = jax.random.key(3)
    human = Human(agent.env, random_turns, init_key=jax.random.split(key)[0])
    seat = 1
    result = play.play_game(agent, seat, human.read, human.write, show_eval=True, key=key)
    assert result == human.result(seat)
    assert human.lines[-1] in ("You win!", "Draw.", "The agent wins.")
    agent_moves = human.count("The agent plays ")
    assert agent_moves >= 1 and human.count("You play ") in (agent_moves, agent_moves - 1)
    assert human.count("Agent's view: network value ") == agent_moves
    assert human.lines[0].startswith(f"{agent.env.name}: you move second")
    if game == "go":
        assert human.count("Area: Black ") == 1


def test_a_full_column_is_refused():
    """The human's move reader on a prepared position."""
    agent = untrained_agent("connect_four")
    state = state_from_moves("111111")
    human = Human(agent.env, lambda h: ["1", "8", "0", "4"])
    human.state = state
    action = play._human_move(agent, state, human.read, human.write, jax.random.key(0),
                              {"eval": False})
    assert action == 3
    assert human.lines[0] == ("illegal move: 1 is not legal here; "
                              "type 'help' for the legal moves")
    assert human.count("unreadable move: expected a column number 1-7") == 2


def test_hint_and_the_eval_toggle(ttt_agent):
    def turn(human: Human) -> list[str]:
        if human.turns == 0:
            return ["hint", "eval", human.random_move()]
        if human.turns == 1:
            return ["eval", human.random_move()]
        return [human.random_move()]

    human = Human(ttt_agent.env, turn)
    play.play_game(ttt_agent, 0, human.read, human.write)
    hint = next(line for line in human.lines if line.startswith("Hint: "))
    suggested = hint.removeprefix("Hint: the agent would play ").split(". Your view: ")[0]
    assert ttt_agent.env.parse_move(suggested) in range(9)
    assert "search visits: " in hint
    assert human.lines.count("agent evaluation shown") == 1
    assert human.lines.count("agent evaluation hidden") == 1
    # Shown for exactly the agent's first reply (between the two toggles).
    assert human.count("Agent's view: network value ") == 1


def test_search_root_is_the_agents_move(ttt_agent):
    env = ttt_agent.env
    state = env.init(jax.random.key(0))
    root = play.search_root(ttt_agent, state, jax.random.key(1))
    batched = jax.tree.map(lambda x: x[None], state)
    assert root.action == int(ttt_agent.act(batched, jax.random.key(1))[0])
    assert root.visits.shape == (9,)
    assert root.visits.sum() == ttt_agent.search_config.num_simulations
    assert -1.0 <= root.value <= 1.0 and -1.0 <= root.network_value <= 1.0
    _, value = ttt_agent.evaluate(batched.observation)
    assert root.network_value == pytest.approx(float(value[0]), abs=1e-5)


@pytest.mark.parametrize("ending", ["quit", EOFError])
def test_quit_and_end_of_input_stop_the_game(ttt_agent, ending):
    human = Human(ttt_agent.env, lambda h: [ending])
    with pytest.raises(play.Quit, match="you quit" if ending == "quit" else "end of input"):
        play.play_game(ttt_agent, 0, human.read, human.write)
    human = Human(ttt_agent.env, lambda h: [h.random_move()] if h.turns == 0 else [ending])
    assert play.session(ttt_agent, "first", read=human.read, write=human.write) == []
    assert human.lines[-1].endswith("goodbye.")


def test_play_again_asks_the_side_again(ttt_agent):
    answers = ["middle", "", "maybe", "y", "s", "no"]
    human = Human(ttt_agent.env, random_turns, answers)
    results = play.session(ttt_agent, None, seed=1, read=human.read, write=human.write)
    assert len(results) == 2 and set(results) <= {-1.0, 0.0, 1.0}
    assert human.answers == []
    assert human.count("please answer first, second or random") == 1
    assert human.count("please answer y or n") == 1
    starts = [line for line in human.lines if line.startswith("tictactoe: you move")]
    assert [s.split()[3] for s in starts] == ["first", "second"]
    assert human.prompts.count("Play again? [y/n]: ") == 3
    side_prompts = [p for p in human.prompts if p.startswith("Move first")]
    assert len(side_prompts) == 3 and "default first" in side_prompts[-1]
    wins, losses = results.count(1.0), results.count(-1.0)
    score = [line for line in human.lines if line.startswith("Score: ")]
    assert score[-1] == f"Score: {wins} won, {2 - wins - losses} drawn, {losses} lost"


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["chess"], "unknown game 'chess'"),
        (["connect_four"], "holds a tictactoe agent, not connect_four"),
        (["tictactoe", "--simulations", "0"], "num_simulations must be >= 1"),
    ],
)
def test_cli_errors_exit_2(run_dir, capsys, args, message):
    assert play.main([*args, "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_cli_missing_run_dir_exits_2(tmp_path, capsys):
    assert play.main(["tictactoe", "--run-dir", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_plays_an_exported_agent_file_until_end_of_input(ttt_agent, tmp_path, capsys,
                                                              monkeypatch):
    path = ttt_agent.export(tmp_path / "ttt.azjax")
    monkeypatch.setattr(sys, "stdin", io.StringIO("first\n5\n"))
    assert play.main(["tictactoe", "--agent", str(path), "--show-eval"]) == 0
    out = capsys.readouterr().out
    assert "You play b2" in out and "Agent's view: network value" in out
    assert out.rstrip().endswith("end of input; goodbye.")
    for args, message in ((["connect_four", "--agent", str(path)], "not connect_four"),
                          (["tictactoe", "--agent", str(tmp_path / "no.azjax")], "does not exist"),
                          (["tictactoe", "--agent", str(tmp_path)], "use --run-dir")):
        assert play.main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err


def test_cli_subprocess_with_piped_input(run_dir, tmp_path, capsys):
    # Every keypad cell in order: taken ones are refused, so the human always moves.
    stdin = "x\n" + "".join(f"{k}\n" for k in range(1, 10)) + "n\n"
    proc = subprocess.run(
        [sys.executable, "-m", "azjax.play", "tictactoe", "--run-dir", str(run_dir),
         "--side", "second", "--simulations", "2", "--show-eval"],
        input=stdin, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    assert "you move second (O)" in out and "unreadable move" in out
    assert "Agent's view: network value" in out and "Score: " in out
    assert any(result in out for result in ("You win!", "Draw.", "The agent wins."))
    assert "Play again? [y/n]: " in out

    # The exit status 2 of the real process: tests/test_cli_errors.py.
    assert play.main(["tictactoe", "--run-dir", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
