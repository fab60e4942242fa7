"""The config in two halves: traced settings marked on their fields, what resume compares,
names of settings, and old flat config files."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import pytest

import envs
from azjax import ProgramConfig, RunConfig, SearchConfig, TrainConfig
from azjax.core.fields import traced_paths
from azjax.core.learner import LearnerConfig

TRACED = ["search.c_puct", "search.pb_c_base", "search.dirichlet_alpha",
          "search.dirichlet_fraction", "search.gumbel_scale", "search.rollout_lambda",
          "learner.learning_rate"]


def test_traced_settings_are_read_from_the_marks_on_the_fields():
    assert traced_paths(ProgramConfig) == TRACED
    assert traced_paths(RunConfig) == []
    # The marks make SearchConfig a pytree of exactly its traced settings.
    search = SearchConfig(c_puct=2.0, num_simulations=7)
    leaves, treedef = jax.tree.flatten(search)
    assert leaves == [2.0, 19652.0, 0.3, 0.25, 1.0, 0.0]
    assert jax.tree.unflatten(treedef, leaves) == search
    assert jax.tree.leaves(LearnerConfig(learning_rate=0.5)) == [0.5]

    seen = []

    @jax.jit
    def program(search):
        seen.append(search.num_simulations)  # static: a Python int while tracing
        return search.c_puct * search.num_simulations

    assert float(program(search.as_arrays())) == 14.0
    assert float(program(search.replace(c_puct=3.0).as_arrays())) == 21.0
    assert seen == [7]  # another c_puct did not compile again
    program(search.replace(num_simulations=8).as_arrays())
    assert seen == [7, 8]  # another simulation count did


def test_compile_key_ignores_traced_settings_only():
    base = TrainConfig()
    key = base.program.compile_key()
    for path, value in (("search.c_puct", 3.0), ("learner.learning_rate", 0.1),
                        ("search.rollout_lambda", 0.5)):
        changed = base.with_value(path, value)
        if path == "search.rollout_lambda":  # 0 compiles no playouts, > 0 does
            assert changed.program.compile_key() != key
            other = changed.with_value(path, 0.7)
            assert other.program.compile_key() == changed.program.compile_key()
        else:
            assert changed.program.compile_key() == key
    for path, value in (("search.num_simulations", 8), ("gradient_steps", 3),
                        ("network.channels", 8), ("game", "go"), ("regime", "gating")):
        assert base.with_value(path, value).program.compile_key() != key
    # Run options and the seed are not part of the program at all.
    assert base.replace(iterations=3, eval_every=1, seed=4).program.compile_key() == key


def test_resume_compares_the_program_half_and_the_seed():
    saved = TrainConfig()
    assert saved.program_differences(saved.replace(iterations=7, eval_opponents=("random",),
                                                   tensorboard=True)) == []
    lines = saved.program_differences(saved.replace(
        search=SearchConfig(num_simulations=8), seed=2))
    assert lines == ["search.num_simulations: saved 32, given 8", "seed: saved 0, given 2"]


def test_replace_routes_names_to_their_half():
    config = TrainConfig().replace(game="go", game_options={"size": 9}, iterations=5, seed=3,
                                   learner=LearnerConfig(batch_size=8))
    assert config.program.game == "go" and config.program.game_options == {"size": 9}
    assert config.run.iterations == 5 and config.seed == 3
    assert config.program.learner.batch_size == 8
    assert config.get("learner.batch_size") == 8 and config.get("iterations") == 5
    assert config.with_value("search.c_puct", 2.5).program.search.c_puct == 2.5
    assert config.with_value("eval_every", 3).run.eval_every == 3
    with pytest.raises(ValueError, match="unknown setting 'colour'"):
        config.replace(colour="red")
    with pytest.raises(ValueError, match="unknown setting"):
        config.get("search.c_puct.real")


def test_config_json_round_trip_and_the_flat_format_of_older_runs_refused(tmp_path):
    config = TrainConfig().replace(game="go", game_options={"size": 7, "komi": 5.5},
                                   eval_opponents=("random", "mcts:10"), seed=2)
    config.save(tmp_path / "config.json")
    data = json.loads((tmp_path / "config.json").read_text())
    assert set(data) == {"program", "run", "seed"}
    assert TrainConfig.load(tmp_path / "config.json") == config

    flat = {**data["program"], **data["run"], "seed": 2}  # azjax before 0.1.0 wrote this
    with pytest.raises(ValueError, match="without its 'program' and 'run' halves"):
        TrainConfig.from_dict(flat)
    partial = {"program": {"game": "tictactoe"}, "run": {"iterations": 9}}  # newer fields
    assert TrainConfig.from_dict(partial) == TrainConfig().replace(iterations=9)
    with pytest.raises(ValueError, match=r"unknown config field\(s\) \['colour'\] in run"):
        TrainConfig.from_dict({**data, "run": {**data["run"], "colour": "red"}})


def test_every_field_of_a_half_is_validated_where_it_lives():
    with pytest.raises(ValueError, match="gradient_steps"):
        ProgramConfig(gradient_steps=-1).validate()
    with pytest.raises(ValueError, match="eval_games"):
        RunConfig(eval_games=0).validate()
    with pytest.raises(ValueError, match="unknown player"):  # checked with the game
        TrainConfig().replace(eval_opponents=("grandmaster",)).check(envs.make("tictactoe"))
    assert dataclasses.replace(TrainConfig(), seed=5).seed == 5


def test_search_settings_as_arrays_keep_the_static_ones():
    search = SearchConfig(policy="puct", num_simulations=3).as_arrays()
    assert search.policy == "puct" and search.num_simulations == 3
    assert search.c_puct.dtype == jnp.float32 and search.c_puct.shape == ()
