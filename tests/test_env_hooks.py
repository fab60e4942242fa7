"""A game's own knowledge reaches the framework through `Env` hooks, not name switches:
a game of the test's own (not registered anywhere) gets its evaluator, solver player,
alpha-beta heuristic, notation, marks and result line, and the driver trains an env
object and records how to build it again."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import CONFIG

import envs
from azjax import Agent
from azjax.commands.play import play_game
from azjax.core.networks import init_params
from azjax.core.players import Player
from azjax.driver.driver import train
from azjax.evaluation.alphabeta import default_eval, line_count_eval, zero_eval
from azjax.evaluation.baselines import solver_player
from azjax.evaluation.evaluators import PositionEvaluator, RandomOpponentEvaluator, make_evaluator
from azjax.run import metric_schema as ms
from azjax.run.directory.layout import RunDirError
from envs import Env, GroundTruth, GroundTruthSource
from envs.tictactoe import TicTacToe, states_from_boards


class PlainTicTacToe(TicTacToe):
    """Tic-tac-toe rules with every hook back at the `Env` default."""

    name = "plain_ttt"
    player_marks = None
    line_length = None
    move_notation = Env.move_notation
    parse_move = Env.parse_move
    format_move = Env.format_move
    render = Env.render
    symmetries = Env.symmetries
    transform_state = Env.transform_state
    ground_truth = Env.ground_truth
    solver = Env.solver


def _first_legal(state):
    legal = state.legal_action_mask
    return legal & (jnp.cumsum(legal) == 1)


def _load_corner_truth(env: Env) -> GroundTruth:
    boards = np.full((3, 9), -1, np.int8)
    boards[1, 0], boards[2, [0, 4]] = 0, [0, 1]
    right = np.zeros((3, 9), bool)
    right[:, 8] = True  # the bottom-right corner is "the" right move
    return GroundTruth(states=states_from_boards(boards),
                       right_moves=right, counted=np.ones(3, bool))


class HookedTicTacToe(PlainTicTacToe):
    """Tic-tac-toe with a made-up solver, ground truth, heuristic and result line."""

    name = "hooked_ttt"
    player_marks = ("A", "B")

    def solver(self):
        return _first_legal

    def ground_truth(self):
        return GroundTruthSource(metric="corner_share", complete=False, load=_load_corner_truth)

    def heuristic(self):
        return lambda observation: 0.25 * observation[1, 1, 0].astype(jnp.float32)

    def result_text(self, state):
        return f"decided after {int(state.step_count)} plies"


class BadTruth(PlainTicTacToe):
    def ground_truth(self):
        return {"not": "a source"}


def test_defaults_give_identity_symmetry_action_ids_and_no_knowledge():
    env = PlainTicTacToe()
    assert env.symmetries.size == 1
    state = env.init(jax.random.key(0))
    assert env.transform_state(state, 0) is state
    assert [env.format_move(a) for a in range(9)] == [str(a) for a in range(9)]
    assert env.parse_move(" 7 ") == 7
    for text in ("9", "-1", "a1", ""):
        with pytest.raises(ValueError, match="expected an action number 0-8"):
            env.parse_move(text)
    assert isinstance(make_evaluator(env), RandomOpponentEvaluator)
    assert default_eval(env) is zero_eval
    with pytest.raises(ValueError, match="no exact solver for 'plain_ttt'"):
        solver_player(env)
    with pytest.raises(ValueError, match="states no line_length"):
        line_count_eval(env)
    board = env.render(env.step(state, 4))
    assert board.splitlines()[2] == ". X ." and "player 1 to move" in board


def test_a_transform_state_default_refuses_a_game_with_more_symmetries():
    class Declares(PlainTicTacToe):
        symmetries = TicTacToe.symmetries

    with pytest.raises(NotImplementedError, match="does not override transform_state"):
        Declares().transform_state(Declares().init(jax.random.key(0)), 1)


def test_the_hooks_reach_the_evaluator_the_solver_player_and_alphabeta():
    env = HookedTicTacToe()
    evaluator = make_evaluator(env)
    assert isinstance(evaluator, PositionEvaluator)
    corner = Player("corner", lambda params, states, key: jnp.full(
        states.current_player.shape, 8, jnp.int32))
    assert evaluator.network_metrics(corner)["net_corner_share"] == 1.0
    assert evaluator.network_metrics(solver_player(env))["net_corner_share"] == 0.0
    states = states_from_boards(np.random.default_rng(0).choice([-1, -1, 0, 1], size=(64, 9)))
    live = ~np.asarray(states.terminated) & np.asarray(states.legal_action_mask).any(1)
    actions = np.asarray(jax.jit(solver_player(env).act)(states, jax.random.key(1)))
    first = np.asarray(states.legal_action_mask).argmax(1)
    assert np.array_equal(actions[live], first[live])
    obs = env.init(jax.random.key(0)).observation
    assert float(default_eval(env)(obs.at[1, 1, 0].set(True))) == 0.25
    with pytest.raises(ValueError, match="not an envs.GroundTruthSource"):
        make_evaluator(BadTruth())


class Declaring(HookedTicTacToe):
    """Declares a figure of its own, and (to no effect) its share of right moves."""

    def metric_kinds(self):
        return {"regret": ("", "lower"), "corner_share": ("points", "lower")}


def test_a_games_declared_figures_reach_its_evaluator():
    evaluator = make_evaluator(Declaring())
    declared = evaluator.declared_metrics
    assert (declared["net_regret"].unit, declared["search_regret"].better) == ("", ms.LOWER)
    corner = declared["net_corner_share"]  # a share of right moves, whatever is declared
    assert (corner.unit, corner.better) == (ms.SHARE, ms.HIGHER)
    assert evaluator.summary_metrics == ("net_corner_share", "search_corner_share",
                                         "net_regret", "search_regret")
    assert make_evaluator(PlainTicTacToe()).declared_metrics == {}

    class WithoutTruth(Declaring):
        ground_truth = Env.ground_truth

    against_random = make_evaluator(WithoutTruth())  # no share of right moves: as declared
    assert against_random.declared_metrics["net_corner_share"].unit == "points"
    assert against_random.summary_metrics == (
        *RandomOpponentEvaluator.summary_metrics, "net_regret", "search_regret",
        "net_corner_share", "search_corner_share")

    class BadKinds(PlainTicTacToe):
        def metric_kinds(self):
            return {"regret": ("", "down")}

    with pytest.raises(ValueError, match=r"plain_ttt.metric_kinds\(\): 'regret' must be"):
        make_evaluator(BadKinds())


def _agent(env):
    params = init_params(env, CONFIG.program.network, jax.random.key(0))
    return Agent(env, CONFIG.program, params)


def test_play_speaks_the_default_notation_and_the_games_marks_and_result():
    env = HookedTicTacToe()
    lines: list[str] = []
    moves = iter(["help", "x9", *[str(a) for a in range(9)]])
    result = play_game(_agent(env), 0, read=lambda prompt: next(moves), write=lines.append)
    text = "\n".join(lines)
    assert "you move first (A)" in text
    assert "Moves: an action number 0-8." in text
    assert "unreadable move: expected an action number 0-8, got 'x9'" in text
    assert "You play 0" in text
    assert lines[-2].startswith("decided after ")
    assert result in (-1.0, 0.0, 1.0)


@pytest.mark.slow  # a training run of its own (~10 s)
def test_the_driver_trains_an_env_object_and_records_how_to_build_it(tmp_path):
    env = PlainTicTacToe()
    config = CONFIG.replace(iterations=1, checkpoint_every=1)
    result = train(config, tmp_path / "run", progress=None, env=env)
    recorded = json.loads((tmp_path / "run" / "config.json").read_text())
    assert recorded["program"]["game"] == "test_env_hooks:PlainTicTacToe"
    assert len(result.records) >= 1
    agent = Agent.load(tmp_path / "run")
    assert type(agent.env).__name__ == "PlainTicTacToe" and agent.env.name == "plain_ttt"
    mine = Agent.load(tmp_path / "run", env=env)
    assert mine.env is env
    assert jax.tree.all(jax.tree.map(np.array_equal, agent.params, mine.params))
    with pytest.raises(RunDirError, match="do not fit the network of the game being loaded"):
        Agent.load(tmp_path / "run", env=envs.make("connect_four"))


def test_the_driver_refuses_an_env_that_its_recorded_name_would_not_rebuild(tmp_path):
    env = PlainTicTacToe()
    env.name = "renamed after it was built"
    with pytest.raises(ValueError, match="builds another game than the env given"):
        train(CONFIG, tmp_path / "run", progress=None, env=env)
    assert not (tmp_path / "run").exists()
