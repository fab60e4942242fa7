"""Networks whose weights fit every board size (`network.pooled_heads`) and runs that
start from another run's weights (`run.warm_start`): 5x5 Go from 7x7 weights (the shared
5x5 Go program of tests/go_tiny.py), and 9x9 after a 7x7 warm-up recipe."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import go_tiny
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig, abstract_params, make_network
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig
from azjax.driver import train
from azjax.run.agents.agent import Agent
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir

POOLED = NetworkConfig(channels=8, num_blocks=1, value_hidden=8, pooled_heads=True,
                       ownership_head=True, score_head=True)


def go(size: int) -> envs.Env:
    return envs.make("go", size=size, komi=7.5, history=2)


def leaves_equal(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y))
               for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def random_positions(env: envs.Env, key, plies: int = 12, batch: int = 6):
    """Observations and legal masks of `batch` games after `plies` random moves."""
    def play(state, key):
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        return env.step(state, jax.random.categorical(key, logits)), None

    def one(key):
        init_key, *keys = jax.random.split(key, plies + 1)
        state, _ = jax.lax.scan(play, env.init(init_key), jnp.stack(keys))
        return state
    states = jax.vmap(one)(jax.random.split(key, batch))
    return states.observation, states.legal_action_mask


def test_one_set_of_weights_runs_on_every_board_size():
    small, big = go(5), go(9)
    assert jax.tree.map(jnp.shape, abstract_params(small, POOLED)) == jax.tree.map(
        jnp.shape, abstract_params(big, POOLED))
    # Weights of a fixed seed (deterministic) that leave no ReLU off everywhere, which the
    # edge check below needs (with some seeds' the policy's are, and every cell gets the
    # same logit).
    params = go_tiny.random_params(small, POOLED, 4)
    for env in (small, big):
        obs, _ = jax.jit(functools.partial(random_positions, env))(jax.random.key(2))
        empty = jnp.zeros((1, *env.observation_shape), bool)
        apply = jax.jit(functools.partial(make_network(env, POOLED).apply, aux=True))
        logits, value, heads = apply(params, jnp.concatenate([obs, empty]))
        point = logits[-1]
        logits, value, heads = jax.tree.map(lambda x: x[:6], (logits, value, heads))
        cells = env.size ** 2
        assert logits.shape == (6, cells + 1) and value.shape == (6,)
        assert heads["ownership"].shape == (6, cells) and heads["score"].shape == (6,)
        assert bool(jnp.all(jnp.isfinite(logits))) and bool(jnp.all(jnp.abs(value) <= 1))
        # The network sees the board's edge: on the empty board, with White to play (no
        # plane of the observation is on), a corner and the centre get different logits.
        assert float(point[0]) != pytest.approx(float(point[cells // 2]), abs=1e-4)


def test_the_point_logits_move_with_the_board():
    """Each cell's logit comes from the features at that cell: one stone changes the
    logits of the cells within the torso's reach of it and no others (a dense head over
    the flattened board would change them all), and the pooled pass logit."""
    env = go(9)
    params = go_tiny.random_params(env, POOLED, 4)
    net = make_network(env, POOLED)
    obs = jnp.zeros((1, 9, 9, env.observation_shape[-1]), bool).at[..., -1].set(True)
    one = obs.at[0, 4, 4, 0].set(True)  # a lone stone of the mover in the centre
    logits_empty = net.apply(params, obs)[0][0]
    logits_one = net.apply(params, one)[0][0]
    changed = np.flatnonzero(np.abs(np.asarray(logits_one - logits_empty))[:81] > 1e-7)
    rows, cols = np.divmod(changed, 9)
    # A 1-block network (3 3x3 convolutions) sees 3 cells away: only cells within that
    # distance of the stone change their logit; the pass logit is pooled, so it changes.
    assert changed.size > 0 and np.all(np.abs(rows - 4) <= 3) and np.all(np.abs(cols - 4) <= 3)
    assert float(logits_one[81]) != pytest.approx(float(logits_empty[81]), abs=1e-7)


@pytest.mark.parametrize("game, network, message", [
    ("connect_four", POOLED, r"network.pooled_heads needs a game whose actions are its "
                             r"board's cells .* connect_four observes \(6, 7, \d+\) and has 7"),
])
def test_a_game_whose_actions_are_not_its_cells_is_refused(game, network, message):
    program = ProgramConfig(game=game, network=dataclasses.replace(
        network, ownership_head=False, score_head=False))
    with pytest.raises(ValueError, match=message):
        program.check(program.make_env())


def test_pooled_heads_need_the_conv_torso():
    with pytest.raises(ValueError, match="network.pooled_heads needs network.torso 'conv'"):
        NetworkConfig(torso="mlp", pooled_heads=True).validate()


def _config(size: int, **run) -> TrainConfig:
    program = ProgramConfig(
        game="go", game_options={"size": size, "komi": 7.5, "history": 2}, network=POOLED,
        search=SearchConfig(policy="gumbel", num_simulations=4, max_num_considered_actions=4),
        selfplay=SelfPlayConfig(num_games=4, steps_per_iteration=4),
        learner=LearnerConfig(batch_size=8), replay_capacity=128, gradient_steps=2)
    run = {"iterations": 2, "eval_every": 0, "checkpoint_every": 1, **run}
    return TrainConfig(program=program, run=RunConfig(**run), seed=size)


# The runs that start from other weights run the shared 5x5 Go program of
# tests/go_tiny.py (its network fits every board size); the weights they start from are
# those of the same network on 7x7 Go, drawn with NumPy into an agent file (nothing to
# compile), and those of the shared run's directory. The program learns once more
# positions than one iteration plays have an outcome (learn_after): so never in a run's
# first iteration, and here not before the fourth.


def pooled_agent_file(path: Path, size: int, network: NetworkConfig = go_tiny.NETWORK) -> Path:
    """An agent file of `network` (random weights) on `size`x`size` Go, at `path`."""
    program = dataclasses.replace(go_tiny.CONFIG.program, network=network, game_options={
        **go_tiny.CONFIG.program.game_options, "size": size})
    env = program.make_env()
    return Agent(env, program, go_tiny.random_params(env, network, size)).export(path)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """Weights of the shared program's network on 7x7 Go, as an agent file."""
    return pooled_agent_file(tmp_path_factory.mktemp("big") / "big.azjax", 7)


@pytest.fixture(scope="module")
def warm(big, tmp_path_factory) -> tuple[Path, list[dict]]:
    """A 5x5 run of six iterations started from `big`, a checkpoint after each: its
    directory and records."""
    path = tmp_path_factory.mktemp("warm") / "run"
    config = go_tiny.CONFIG.replace(iterations=6, warm_start=str(big), checkpoint_every=1,
                                    keep_every=1)
    return path, train(config, path, progress=None).records


# Slow (with the learn_after test, which reads the same run): two 5x5 Go runs.
@pytest.mark.slow
def test_a_run_starts_from_the_weights_of_a_run_on_another_board(big, warm, tmp_path,
                                                                 tmp_path_factory):
    weights = Agent.load(big).params
    path, _ = warm
    # Before learning starts (learn_after), the 5x5 run's weights are the 7x7 network's,
    # unchanged; then it trains on from them.
    assert leaves_equal(Agent.load(path, step=1).params, weights)
    assert not leaves_equal(Agent.load(path, step=6).params, weights)
    fresh = go_tiny.CONFIG.replace(iterations=1)
    train(fresh, tmp_path / "fresh", progress=None)
    assert not leaves_equal(Agent.load(tmp_path / "fresh").params, weights)
    # A resumed run goes on from its own checkpoint, not from warm_start's weights (and
    # learns nothing in its second iteration: deterministic, too few games end).
    resumed = train(fresh.replace(iterations=2, warm_start=str(big)), tmp_path / "fresh",
                    progress=None)
    assert resumed.records[-1]["replay_sampleable"] < go_tiny.LEARN_AFTER
    assert leaves_equal(Agent.load(tmp_path / "fresh").params,
                        Agent.load(tmp_path / "fresh", step=1).params)
    assert not leaves_equal(Agent.load(tmp_path / "fresh").params, weights)
    # A run directory starts a run with its newest checkpoint's weights.
    shared = go_tiny.trained(tmp_path_factory).path
    train(fresh.replace(warm_start=str(shared)), tmp_path / "from_dir", progress=None)
    assert leaves_equal(Agent.load(tmp_path / "from_dir").params, Agent.load(shared).params)


def test_a_network_of_other_shapes_or_no_run_is_one_clear_error(tmp_path):
    """The 5x5 run's network has pooled heads; an agent file of the same network without
    them, on 7x7, cannot start it."""
    dense = pooled_agent_file(tmp_path / "dense.azjax", 7,
                              dataclasses.replace(go_tiny.NETWORK, pooled_heads=False))
    with pytest.raises(ValueError, match=r"run.warm_start: the network of .*dense.azjax \(go "
                       r".*'size': 7.*conv 8x0 with ownership_head, score_head\) has other "
                       r"parameters than this run's \(go .*'size': 5.*conv 8x0 with "
                       r"pooled_heads, ownership_head, score_head\)"):
        train(go_tiny.CONFIG.replace(warm_start=str(dense)), tmp_path / "run", progress=None)
    with pytest.raises(RunDirError):
        train(go_tiny.CONFIG.replace(warm_start=str(tmp_path / "nowhere")), tmp_path / "lost",
              progress=None)
    with pytest.raises(ValueError, match="warm_start must be a string"):
        RunConfig(warm_start=3).validate()


@pytest.mark.slow  # compiles the go7x7 recipe's program besides the run's
def test_a_warm_up_recipe_trains_first_and_starts_the_run(tmp_path):
    config = _config(9, warm_up="go7x7", warm_up_minutes=0.02, iterations=1)
    config = config.replace(gradient_steps=0, game_options={"size": 9, "komi": 7.5,
                                                             "history": 4})
    lines = []
    train(config, tmp_path / "run", progress=lines.append)
    warm_dir = tmp_path / "run" / "warm-up"
    warm = RunDir(warm_dir).load_config()
    assert warm.program.game_options == {"size": 7, "komi": 9.0, "history": 4}
    assert warm.program.network == config.program.network and warm.seed == config.seed
    assert warm.run.max_minutes == 0.02
    assert any(line.startswith("[warm-up] ") for line in lines)
    assert leaves_equal(Agent.load(tmp_path / "run").params, Agent.load(warm_dir).params)
    assert RunDir(tmp_path / "run").load_config().run.warm_up == "go7x7"
    # The run resumes from its own checkpoint; the warm-up is not trained again.
    before = RunDir(warm_dir).checkpoints.steps()
    lines.clear()
    train(config.replace(iterations=2), tmp_path / "run", progress=lines.append)
    assert RunDir(warm_dir).checkpoints.steps() == before
    assert not any(line.startswith("[warm-up]") for line in lines)


@pytest.mark.parametrize("changes, message", [
    ({"warm_up": "nope"}, r"run.warm_up: no recipe 'nope'; recipes: .*go7x7"),
    ({"warm_up": "go7x7", "warm_start": "somewhere"},
     "run.warm_up trains the run's starting weights; run.warm_start names them"),
    ({"warm_up": "go7x7", "warm_up_minutes": 0.0}, r"run.warm_up needs run.warm_up_minutes > 0"),
    ({"warm_up": "go7x7", "network": dataclasses.replace(POOLED, pooled_heads=False)},
     r"run.warm_up: the network's weights on go .*'size': 7.* would not fit this run's go "
     r".*'size': 9.*needs --network.pooled-heads"),
])
def test_a_warm_up_that_cannot_start_the_run_is_refused_before_any_training(
        tmp_path, changes, message):
    with pytest.raises(ValueError, match=message):  # the config's own rules, or train's
        config = _config(9, warm_up_minutes=1.0).replace(
            game_options={"size": 9, "komi": 7.5, "history": 4}, **changes)
        train(config, tmp_path / "run")
    assert not (tmp_path / "run" / "warm-up").exists()
    with pytest.raises(ValueError, match="warm_up must be a string"):
        RunConfig(warm_up=7).validate()


def test_a_warm_up_needs_a_run_directory():
    config = _config(9, warm_up="go7x7", warm_up_minutes=1.0).replace(
        game_options={"size": 9, "komi": 7.5, "history": 4})
    with pytest.raises(ValueError, match="run.warm_up needs a run directory"):
        train(config, None)


# Slow: the warm-started run of the test above.
@pytest.mark.slow
def test_learning_waits_for_learn_after_positions_with_an_outcome(big, warm):
    """The run of `warm` learns once more positions than one iteration plays (128) have an
    outcome (learn_after, 129): not in its first iteration, nor in those after it whose
    replay holds more positions than that but whose games mostly go on; then in every
    iteration once enough have ended."""
    path, records = warm
    sampleable = [r["replay_sampleable"] for r in records]
    assert go_tiny.LEARN_AFTER == 129 and [r["positions"] for r in records][1] == 256
    # Deterministic, a fact of the run's seed: few of its games end in the first
    # iterations (none can end at the move cap, 50 plies, before the seventh).
    learns = [n >= go_tiny.LEARN_AFTER for n in sampleable]
    first = learns.index(True) + 1  # the first iteration that learns
    assert 3 <= first <= len(records) and all(learns[first - 1:])
    assert records[first - 2]["positions"] > go_tiny.LEARN_AFTER
    start = Agent.load(big).params
    for step in range(1, first):
        assert leaves_equal(Agent.load(path, step=step).params, start)
    assert not leaves_equal(Agent.load(path, step=first).params, start)
    with pytest.raises(ValueError, match="learn_after must be"):
        go_tiny.CONFIG.replace(learn_after=-1).validate()
