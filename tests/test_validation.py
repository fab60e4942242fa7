"""Every setting and game option is checked for type, finiteness and range, and sizes
that cannot fit in memory are refused, with the bytes they would need, before anything
is allocated."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np
import pytest
from cli_in_process import experiment
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
import envs.limits
from azjax.core import memory
from azjax.core import replay as replay_lib
from azjax.core.networks import NetworkConfig, init_params, make_network
from azjax.core.program import ProgramConfig, program_bytes, program_parts
from azjax.core.search import SearchConfig, make_search_fn
from azjax.core.selfplay import SelfPlayConfig
from azjax.run.config import RUN_SEED_MAX, TrainConfig, setting_paths
from azjax.run.recipes import CPU_RECIPES, GPU_RECIPES

ROOT = Path(__file__).resolve().parents[1]
NON_FINITE = [math.nan, math.inf, -math.inf]
FLOAT_SETTINGS = [path for path, kind in setting_paths().items() if kind is float]
INT_SETTINGS = [path for path, kind in setting_paths().items() if kind is int]
GB = 10**9


def refused(make: Callable[[], TrainConfig], path: str) -> str:
    """The message of the ValueError making a config (`make()`) raises; it names `path`.
    A config checks its settings when it is made: no bad one exists to validate later."""
    with pytest.raises(ValueError) as err:
        make()
    message = str(err.value)
    assert path in message and "\n" not in message
    return message


@pytest.fixture
def memory_of(monkeypatch):
    """Makes the machine look as if it had `n` bytes of memory."""
    def set_memory(n: int) -> None:
        monkeypatch.setattr(envs.limits, "available_bytes", lambda: n)
    return set_memory


class Built(AssertionError):
    """Something was allocated that a refusal should have come before."""


# The builders of a game's tables, a replay ring and device buffers: a refusal
# "before anything is allocated" calls none of them, asks numpy or jax.numpy for no array
# of `BIG` elements or more, and takes no more than `BIG` bytes of host memory.
BUILDERS = ["envs.gomoku._ray_table", "envs.gomoku.dihedral_symmetries",
            "azjax.core.replay.init", "jax.device_put"]
SHAPED = [f"{module}.{name}" for module in ("numpy", "jax.numpy")
          for name in ("zeros", "ones", "empty", "full")]
BIG = 10**7


@pytest.fixture
def nothing_built(monkeypatch):
    """A context in which a call of `BUILDERS`, a big array of `SHAPED` or `BIG` bytes
    of (tracemalloc-traced) host memory fails the test: `Built` is raised where it
    happens and again when the context ends, should the code under test catch it (the
    game registry wraps what a game's constructor raises in a ValueError)."""
    import contextlib
    import tracemalloc

    @contextlib.contextmanager
    def tripwire():
        hits = []

        def hit(text: str) -> Built:
            hits.append(text)
            return Built(text)

        with monkeypatch.context() as patch:
            for target in BUILDERS:
                def refuse(*args, _target=target, **kwargs):
                    raise hit(f"{_target} was called before the refusal")
                patch.setattr(target, refuse)
            for target in SHAPED:
                module, name = target.rsplit(".", 1)
                original = getattr(__import__(module, fromlist=[name]), name)

                def shaped(shape, *args, _target=target, _original=original, **kwargs):
                    if math.prod(np.atleast_1d(shape).tolist()) >= BIG:
                        raise hit(f"{_target}{shape} was asked for before the refusal")
                    return _original(shape, *args, **kwargs)
                patch.setattr(target, shaped)
            tracing = tracemalloc.is_tracing()
            tracemalloc.start()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            try:
                yield
            finally:
                peak = tracemalloc.get_traced_memory()[1] - base
                if not tracing:
                    tracemalloc.stop()
                if peak >= BIG:
                    hits.append(f"{peak} bytes of host memory were taken before the refusal")
                if hits:
                    raise Built(hits[0])
    return tripwire


def test_the_tripwire_catches_a_build(nothing_built):
    with pytest.raises(Built, match="_ray_table was called"), nothing_built():
        envs.make("gomoku", size=5)
    with pytest.raises(Built, match="replay.init was called"), nothing_built():
        replay_lib.init(10, (3, 3, 2), 9)
    with pytest.raises(Built, match="numpy.zeros"), nothing_built():
        try:
            np.zeros((BIG, 2), np.int8)
        except Built:
            pass  # caught by the code under test: still a failure
    with pytest.raises(Built, match="bytes of host memory"), nothing_built():
        bytearray(2 * BIG)


# --------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------


def test_the_settings_are_enumerated():
    assert {"learner.learning_rate", "max_minutes", "search.c_puct", "gate_threshold",
            "value_target_mix", "selfplay.random_move_prob"} <= set(FLOAT_SETTINGS)
    assert {"seed", "replay_capacity", "selfplay.num_games", "iterations",
            "search.num_simulations"} <= set(INT_SETTINGS)


@pytest.mark.parametrize("path", FLOAT_SETTINGS)
@pytest.mark.parametrize("value", NON_FINITE)
def test_every_float_setting_refuses_nan_and_infinities(path, value):
    message = refused(lambda: TrainConfig().with_value(path, value), path)
    assert "finite" in message


@pytest.mark.parametrize("path", FLOAT_SETTINGS)
def test_every_float_setting_refuses_a_string_and_a_bool(path):
    refused(lambda: TrainConfig().with_value(path, "0.5"), path)
    refused(lambda: TrainConfig().with_value(path, True), path)


@pytest.mark.parametrize("path", INT_SETTINGS)
@pytest.mark.parametrize("value", [2.5, 7.0, True, "3", "too large"])
def test_every_int_setting_refuses_non_integers_and_int32_overflow(path, value):
    if value == "too large":  # iterations are counted in two words (azjax.core.counters)
        value = {"iterations": 2**63, "seed": 2**32}.get(path, 2**31)
    refused(lambda: TrainConfig().with_value(path, value), path)


def test_the_message_names_the_option_and_the_rule():
    config = TrainConfig()
    assert refused(lambda: config.with_value("learner.learning_rate", math.nan),
                   "learning_rate") == ("learner.learning_rate must be a finite number > 0, "
                                        "got nan")
    assert refused(lambda: config.with_value("max_minutes", math.nan), "max_minutes") == (
        "max_minutes must be a finite number >= 0, got nan")
    assert refused(lambda: config.with_value("selfplay.num_games", 0), "num_games") == (
        "selfplay.num_games must be >= 1, got 0")
    assert refused(lambda: config.with_value("search.rollout_lambda", 1.5), "rollout_lambda") == (
        "search.rollout_lambda must be in [0, 1], got 1.5")
    assert "int32" in refused(lambda: config.with_value("replay_capacity", 2**31), "replay_capacity")


@settings(max_examples=30, deadline=None)
@given(path=st.sampled_from(FLOAT_SETTINGS),
       value=st.floats(allow_nan=True, allow_infinity=True))
def test_a_float_setting_is_accepted_only_when_finite(path, value):
    try:
        TrainConfig().with_value(path, value)
    except ValueError as err:
        assert path in str(err)
    else:
        assert math.isfinite(value)


def test_seeds_are_32_bit_and_non_negative():
    for seed in (0, 7, RUN_SEED_MAX):
        assert TrainConfig(seed=seed).seed == seed
        jax.random.key(seed)
    for seed in (-1, RUN_SEED_MAX + 1, 2**63, 2**64, 1.0, True):
        refused(lambda: TrainConfig(seed=seed), "seed")


def test_products_that_overflow_int32_are_refused():
    wide = SelfPlayConfig(num_games=2**16, steps_per_iteration=2**15)
    assert "int32" in refused(lambda: TrainConfig().replace(selfplay=wide), "positions per iteration")
    TrainConfig().replace(iterations=10**7)  # 2.3e10 positions: counted on
    program = ProgramConfig(replay_capacity=2**31 - 100)
    with pytest.raises(ValueError, match="replay ring indices"):
        program.check(envs.make("tictactoe"))


def test_game_options_must_be_finite_whatever_the_game():
    for game in ("go", "my_games.hex:Hex"):
        for value in NON_FINITE:
            with pytest.raises(ValueError, match="game_options komi must be a finite number"):
                ProgramConfig(game=game, game_options={"komi": value})
    with pytest.raises(ValueError, match="game_options"):
        ProgramConfig(game_options={3: 1})


def test_valid_configs_still_pass():
    TrainConfig().validate()
    TrainConfig().check(envs.make("tictactoe"))
    for config in [*CPU_RECIPES.values(), *GPU_RECIPES.values()]:
        config.check(config.make_env())
    TrainConfig().replace(max_minutes=0.5, value_target_mix=1.0, gate_threshold=0.5,
                          learner=TrainConfig().program.learner.replace(
                              max_grad_norm=0.0, weight_decay=0)).validate()


def test_the_command_line_refuses_a_bad_setting_before_writing_anything(tmp_path):
    run_dir = tmp_path / "run"
    # The script's own __main__, in this process (its real process: tests/test_cli_options.py).
    out = experiment("tictactoe", "--learner.learning-rate", "nan", "--run-dir", run_dir)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: learner.learning_rate must be a finite number > 0, got nan"]
    assert not run_dir.exists()


def test_learning_after_more_positions_than_the_replay_holds_is_refused(tmp_path):
    """go9x9 learns after 10,000 positions: a replay of 8,192 would never learn."""
    run_dir = tmp_path / "run"
    out = experiment("go9x9", "--replay-capacity", "8192", "--run-dir", run_dir)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        ("error: learn_after (10000) must be at most 7168: the positions the replay holds "
         "(replay_capacity 8192) less one iteration of self-play (1024 = "
         "selfplay.num_games x selfplay.steps_per_iteration), whose games in flight have "
         "no outcome yet; the replay would never hold learn_after positions to learn from")]
    assert not run_dir.exists()


def test_learn_after_is_bounded_by_the_positions_a_replay_can_resolve():
    """A replay never holds as many positions with an outcome as it holds positions: the
    games in flight keep theirs pending. Under 'write' augmentation the ring holds each
    position once per symmetry, and learn_after counts positions."""
    base = TrainConfig().replace(replay_capacity=4096)  # 256 games x 9 steps = 2,304
    base.replace(learn_after=4096 - 2304)  # the most it can wait for
    refused(lambda: base.replace(learn_after=4096), "learn_after")
    refused(lambda: base.replace(learn_after=4096 - 2304 + 1), "learn_after")
    written = base.replace(augment="write", replay_capacity=8 * 4096,
                           learn_after=4096 - 2304)
    written.check(written.program.make_env())  # tic-tac-toe: 8 copies a position
    too_many = written.replace(learn_after=4096 - 2304 + 1)  # fine without the game
    message = refused(lambda: too_many.check(too_many.program.make_env()), "learn_after")
    assert "32768 / 8 symmetric copies = 4096" in message


def test_training_on_a_score_utility_with_a_mixed_value_target_is_refused():
    """The search value mixed into the value target holds the score utility, which the
    search adds again on top of the value head: one of the two must be off."""
    mixed = TrainConfig().replace(value_target_mix=0.5)
    message = refused(lambda: mixed.replace(search=SearchConfig(score_utility=0.5)),
                      "value_target_mix")
    assert "search.score_utility" in message and "set one of them to 0" in message
    mixed.replace(value_target_mix=0.0, search=SearchConfig(score_utility=0.5))
    mixed.replace(search=SearchConfig())


# --------------------------------------------------------------------------------------
# Game options
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("game, options, name", [
    ("go", {"komi": math.nan}, "komi"),
    ("go", {"komi": math.inf}, "komi"),
    ("go", {"komi": "7.5"}, "komi"),
    ("go", {"size": 9.0}, "size"),
    ("go", {"size": True}, "size"),
    ("go", {"history": True}, "history"),
    ("go", {"history": 2.5}, "history"),
    ("go", {"max_moves": 2**31}, "max_moves"),
    ("go", {"max_moves": 10.5}, "max_moves"),
    ("gomoku", {"size": 2.5}, "size"),
    ("gomoku", {"size": 7.0}, "size"),
    ("gomoku", {"size": 46341}, "size"),  # size * size actions overflow int32
    ("gomoku", {"size": 9, "k": 5.0}, "k"),
    ("gomoku", {"size": 9, "k": math.nan}, "k"),
    ("coin_split", {"coins": 7.5}, "coins"),
    ("coin_split", {"coins": math.nan}, "coins"),
    ("coin_split", {"coins": 7, "max_coins": 9.0}, "max_coins"),
    ("tictactoe", {"size": 4}, "size"),
    ("connect_four", {"rows": 7}, "rows"),
])
def test_bad_game_options_are_refused_naming_the_option(game, options, name):
    with pytest.raises(ValueError, match=name) as err:
        envs.make(game, **options)
    assert "\n" not in str(err.value)


def test_the_checked_options_keep_their_meaning():
    go = envs.make("go", size=np.int64(5), komi=np.float32(0.5), history=2)
    assert (go.size, go.komi, go.history, go.max_moves) == (5, 0.5, 2, 50)
    assert type(go.size) is int and type(go.komi) is float
    assert envs.make("go", size=2).komi == 7.5 and envs.make("go", komi=-3).komi == -3.0
    gomoku = envs.make("gomoku", size=np.int32(9), k=4)
    assert (gomoku.size, gomoku.k, gomoku.num_actions) == (9, 4, 81)
    coins = envs.make("coin_split", coins=np.int64(9))
    assert (coins.coins, coins.max_coins) == (9, 9) and type(coins.coins) is int


def test_komi_nan_no_longer_pays_nan():
    with pytest.raises(ValueError, match="Go komi must be a finite number, got nan"):
        envs.make("go", komi=float("nan"))


def test_a_gomoku_board_too_big_is_refused_before_its_tables_are_built(memory_of,
                                                                      nothing_built):
    memory_of(16 * GB)
    with nothing_built(), pytest.raises(ValueError) as err:
        envs.make("gomoku", size=10000)
    assert str(err.value) == (
        "gomoku size=10000 would need 38.4 GB (its line and symmetry tables), more than "
        "the 16.0 GB of memory here")
    envs.make("gomoku", size=100)  # 10,000 points: a few MB


def test_the_largest_gomoku_board_does_not_fit_anywhere(nothing_built):
    with nothing_built(), pytest.raises(ValueError,
                                        match=r"gomoku size=46340 would need [\d.]+ GB"):
        envs.make("gomoku", size=46340)


def test_a_go_history_too_long_is_refused(memory_of):
    memory_of(GB)
    with pytest.raises(ValueError, match=r"Go history=10000000 would need 10.8 GB"):
        envs.make("go", size=19, history=10**7)


def test_the_gomoku_table_estimate_covers_what_is_built():
    from envs.gomoku import table_bytes

    env = envs.make("gomoku", size=40, k=5)
    built = env._rays.nbytes + 2 * memory.tree_bytes(env.symmetries)
    assert built <= table_bytes(40, 5) <= 2 * built


# --------------------------------------------------------------------------------------
# Memory of a training program
# --------------------------------------------------------------------------------------


def test_format_bytes():
    assert [memory.format_bytes(n) for n in (0, 999, 1000, 22.4e9, 3.5e12)] == [
        "0 B", "999 B", "1.0 kB", "22.4 GB", "3.5 TB"]


def test_available_bytes_is_the_device_or_host_memory():
    n = memory.available_bytes()
    device = jax.devices()[0]
    if device.platform == "cpu":
        import os
        assert 0 < n <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    else:
        assert n == device.memory_stats()["bytes_limit"]


def test_check_fits(memory_of):
    memory_of(2 * GB)
    memory.check_fits("a small thing", GB)
    with pytest.raises(ValueError) as err:
        memory.check_fits("a big thing", 3 * GB)
    assert str(err.value) == "a big thing would need 3.0 GB, more than the 2.0 GB of memory here"


@pytest.mark.parametrize("game, options", [("tictactoe", {}), ("go", {"size": 5, "history": 2}),
                                           ("coin_split", {"coins": 9})])
def test_state_and_replay_bytes_match_what_is_allocated(game, options):
    env = envs.make(game, **options)
    assert memory.state_bytes(env) == memory.tree_bytes(env.init(jax.random.key(0)))
    ring = replay_lib.init(100, env.observation_shape, env.num_actions)
    assert memory.replay_entry_bytes(env) * 100 == memory.tree_bytes(ring.data)


def test_search_tree_bytes_match_the_mctx_tree():
    env = envs.make("tictactoe")
    config = NetworkConfig(channels=4, policy_filters=1, value_filters=1, value_hidden=4)
    net = make_network(env, config)
    params = init_params(env, config, jax.random.key(0))
    search = SearchConfig(num_simulations=3)
    search_fn = make_search_fn(env, net.apply, search)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(1), 2))
    tree = jax.eval_shape(search_fn, params, search.as_arrays(), jax.random.key(2),
                          states).search_tree
    held = memory.tree_bytes(tree) - memory.tree_bytes((tree.root_invalid_actions,
                                                        tree.extra_data))
    assert memory.search_tree_bytes(env, 2, 3) == held


def test_network_bytes_match_the_parameters():
    env = envs.make("connect_four")
    config = NetworkConfig(channels=8, num_blocks=1)
    params = init_params(env, config, jax.random.key(0))
    assert memory.network_bytes(env, config) == memory.tree_bytes(params)


@pytest.mark.parametrize("change, part", [
    ({"replay_capacity": 10**8}, "replay ring"),
    ({"selfplay": SelfPlayConfig(num_games=10**6)}, "self-play search trees"),
    ({"search": SearchConfig(num_simulations=10**5)}, "self-play search trees"),
    ({"network": NetworkConfig(channels=4096, num_blocks=8)}, "network"),
])
def test_a_program_that_cannot_fit_is_refused_by_check(memory_of, change, part):
    memory_of(GB)
    program = ProgramConfig(**{"replay_capacity": 10**7, **change})
    program.validate()  # every setting is fine on its own
    with pytest.raises(ValueError) as err:
        program.check(envs.make("tictactoe"))
    message = str(err.value)
    assert message.startswith("this training program would need ")
    assert part in message and "GB" in message and "more than the 1.0 GB of memory here" in message
    assert "\n" not in message


def test_a_program_is_refused_without_touching_the_device(memory_of, nothing_built):
    memory_of(GB)
    program = ProgramConfig(replay_capacity=2**31 - 10**4)  # 172 GB of replay
    env = envs.make("tictactoe")
    with nothing_built(), pytest.raises(ValueError,
                                        match=r"would need 17\d\.\d GB \(replay ring"):
        program.check(env)


def test_program_bytes_adds_the_parts_and_scales_with_the_group():
    env = envs.make("tictactoe")
    program = ProgramConfig()
    parts = program_parts(program, env)
    assert program_bytes(program, env) == sum(parts.values())
    assert program_bytes(program, env, experiments=3) == 3 * sum(parts.values())
    assert parts["replay ring"] == program.replay_capacity * memory.replay_entry_bytes(env)


def test_a_run_whose_evaluation_cannot_fit_is_refused(memory_of):
    env = envs.make("tictactoe")
    config = TrainConfig().replace(eval_games=10**6, search=SearchConfig(num_simulations=64))
    config.validate()
    config.program.check(env)  # training alone fits in the machine's memory...
    memory_of(program_bytes(config.program, env) + GB)
    with pytest.raises(ValueError, match=r"this training run would need .*evaluation games"):
        config.check(env)  # ...not beside a million evaluation games with search
    gated = TrainConfig().replace(regime="gating", gate_games=10**6, eval_every=0)
    with pytest.raises(ValueError, match="gating arena"):
        gated.check(env)

