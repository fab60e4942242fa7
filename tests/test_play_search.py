"""The search a trained agent plays with: `search.play_simulations` (more simulations for
the finished agent than self-play's), and KataGo's score utility (`search.score_utility`:
the values the search backs up carry the score head's margin at live leaves and the
game's own count where a move ends the game, each from the right player's view)."""

from __future__ import annotations

import dataclasses
import functools
import math

import go_tiny
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax.core.networks import NetworkConfig
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig, make_search_fn, root_q, visit_counts
from azjax.evaluation.player_specs import make_player
from azjax.run.agents.agent import Agent

SIZE, KOMI = 5, 5.5
CELLS = SIZE * SIZE
PASS = CELLS


def constant_net(score_head: bool):
    """A network of uniform priors and value 0 whose score head (if it has one) says the
    mover leads by `params` points a cell everywhere: the margin is an argument of the
    compiled search, not a constant in it, so that one program serves every margin."""

    def apply(params, obs, aux=False):
        batch = obs.shape[0]
        logits, value = jnp.zeros((batch, CELLS + 1)), jnp.zeros((batch,))
        if not aux:
            return logits, value
        heads = {"score": jnp.full((batch,), params)} if score_head else {}
        return logits, value, heads

    return apply


def white_after_black_passed():
    """An empty 5x5 board, Black has passed: White's pass ends the game, White ahead by
    komi under area scoring (0 stones each)."""
    env = envs.make("go", size=SIZE, komi=KOMI, history=1)
    # jitted: op by op, each of the step's operations would compile
    state = jax.jit(env.step)(jax.jit(env.init)(jax.random.PRNGKey(0)), jnp.int32(PASS))
    assert int(state.current_player) == 1 and not bool(state.terminated)
    return env, jax.tree.map(lambda x: x[None], state)


@functools.cache
def compiled_search(utility: float, scale: float, score_head: bool):
    """The jitted search of every move once (noise off) with this score utility, over
    `constant_net`, and its settings."""
    env, _ = white_after_black_passed()
    config = SearchConfig(policy="gumbel", num_simulations=CELLS + 1,
                          max_num_considered_actions=CELLS + 1, gumbel_scale=0.0,
                          score_utility=utility, score_utility_scale=scale)
    return jax.jit(make_search_fn(env, constant_net(score_head), config)), config


def searched_q(utility: float, score_per_cell: float | None = 0.1, scale: float = 20.0):
    _, states = white_after_black_passed()
    search, config = compiled_search(utility, scale, score_per_cell is not None)
    params = None if score_per_cell is None else jnp.float32(score_per_cell)
    output = search(params, config.as_arrays(), jax.random.PRNGKey(1), states)
    visits, q = np.asarray(visit_counts(output))[0], np.asarray(root_q(output))[0]
    legal = np.asarray(states.legal_action_mask)[0]
    assert (visits[legal] == 1).all()  # every move searched once: its q is its leaf
    return q, legal


def test_without_utility_the_search_sees_only_win_and_loss():
    q, legal = searched_q(0.0)
    assert q[PASS] == pytest.approx(1.0)  # White wins by komi
    assert np.allclose(q[:PASS][legal[:PASS]], 0.0)


@pytest.mark.parametrize("weight,scale", [(0.5, 20.0), (1.0, 4.0)])
def test_the_utility_of_a_finished_game_is_its_own_count_from_the_movers_view(weight, scale):
    q, _ = searched_q(weight, scale=scale)
    # White's pass ends the game: White wins (+1) and leads by komi (0 stones each).
    assert q[PASS] == pytest.approx(1.0 + weight * math.tanh(KOMI / scale), abs=1e-5)


@pytest.mark.parametrize("score_per_cell", [0.1, -0.3])
def test_the_utility_of_a_live_leaf_is_the_score_heads_margin_for_its_mover(score_per_cell):
    weight, scale = 0.5, 20.0
    q, legal = searched_q(weight, score_per_cell, scale)
    # After White's stone Black moves; the head says Black leads by score_per_cell x 25
    # points, which is White's loss: q = -(0 + weight x tanh(margin / scale)).
    expected = -weight * math.tanh(score_per_cell * CELLS / scale)
    assert np.allclose(q[:PASS][legal[:PASS]], expected, atol=1e-5)
    assert expected != 0.0


def test_a_network_without_a_score_head_is_one_clear_error():
    with pytest.raises(ValueError, match="network with a score head"):
        searched_q(0.5, score_per_cell=None)


def test_a_training_program_without_a_score_head_is_refused():
    env = envs.make("go", size=SIZE, komi=KOMI, history=1)
    program = ProgramConfig(game="go", game_options={"size": SIZE}, network=NetworkConfig(),
                            search=SearchConfig(score_utility=0.5))
    with pytest.raises(ValueError, match="needs a network with a score head"):
        program.check_auxiliary(env)
    with_head = dataclasses.replace(program, network=NetworkConfig(score_head=True))
    with_head.check_auxiliary(env)


def test_a_game_without_a_score_margin_is_refused():
    env = envs.make("tictactoe")
    with pytest.raises(ValueError, match="tictactoe has no Env.score_margin"):
        make_search_fn(env, constant_net(True), SearchConfig(score_utility=0.5))


@pytest.mark.parametrize("changes,message", [
    ({"score_utility": -0.1}, r"search.score_utility must be >= 0"),
    ({"score_utility_scale": 0.0}, r"search.score_utility_scale must be > 0"),
    ({"score_utility": 0.5, "average_symmetries": True}, r"does not combine"),
])
def test_bad_settings_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        SearchConfig(**changes).validate()


def go_agent(search: SearchConfig | None = None) -> Agent:
    env = envs.make("go", size=SIZE, komi=KOMI, history=1)
    network = NetworkConfig(channels=8, num_blocks=0, score_head=True)
    program = ProgramConfig(game="go", game_options={"size": SIZE, "komi": KOMI, "history": 1},
                            network=network, search=search or SearchConfig())
    return Agent(env, program, go_tiny.random_params(env, network))


def test_an_agent_plays_with_the_utility_its_spec_names(tmp_path, search_configs):
    agent = go_agent()
    env, path = agent.env, agent.export(tmp_path / "go.azjax")
    player = make_player(f"alphazero:{path},sims=8,utility=0.25", env)
    assert [(c.num_simulations, c.score_utility) for c in search_configs] == [(8, 0.25)]
    _, states = white_after_black_passed()
    action = int(jax.jit(player.act)(states, jax.random.key(2))[0])
    assert bool(states.legal_action_mask[0, action])
    with pytest.raises(ValueError, match="utility must be a number, got 'lots'"):
        make_player(f"alphazero:{path},utility=lots", env)


def test_a_trained_agent_plays_with_play_simulations(tmp_path, search_configs):
    agent = go_agent(SearchConfig(num_simulations=4, play_simulations=24))
    assert agent.search_config.num_simulations == 24
    path = agent.export(tmp_path / "go.azjax")
    assert Agent.load(path).search_config.num_simulations == 24
    make_player(f"alphazero:{path}", agent.env)
    make_player(f"alphazero:{path},sims=3", agent.env)
    assert [c.num_simulations for c in search_configs] == [24, 3]
    # an explicit search is taken as it is; 0 keeps the training budget
    assert Agent(agent.env, agent.program, agent.params,
                 SearchConfig(num_simulations=5)).search_config.num_simulations == 5
    assert go_agent(SearchConfig(num_simulations=4)).search_config.num_simulations == 4
    with pytest.raises(ValueError, match="search.play_simulations must be >= 0"):
        go_agent(SearchConfig(play_simulations=-1))


def test_a_trained_agent_plays_with_play_policy(tmp_path, search_configs):
    agent = go_agent(SearchConfig(policy="gumbel", play_policy="puct", play_simulations=6))
    path = agent.export(tmp_path / "go.azjax")
    make_player(f"alphazero:{path}", agent.env)
    make_player(f"alphazero:{path},policy=gumbel", agent.env)
    assert [(c.policy, c.num_simulations) for c in search_configs] == [("puct", 6), ("gumbel", 6)]
    assert go_agent(SearchConfig(policy="puct")).search_config.policy == "puct"
    with pytest.raises(ValueError, match="search.play_policy must be one of"):
        go_agent(SearchConfig(play_policy="greedy"))


def test_self_play_searches_with_its_own_budget():
    """The search built from a config plays `num_simulations`, not `play_simulations`
    (the program of the utility tests above: only play_simulations is new)."""
    env, states = white_after_black_passed()
    _, config = compiled_search(0.0, 20.0, True)
    config = dataclasses.replace(config, play_simulations=64)
    search = jax.jit(make_search_fn(env, constant_net(True), config))
    output = search(jnp.float32(0.0), config.as_arrays(), jax.random.PRNGKey(1), states)
    assert int(np.asarray(visit_counts(output)).sum()) == config.num_simulations == CELLS + 1
