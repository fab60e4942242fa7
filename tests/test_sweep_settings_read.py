"""Which search reads which setting (`azjax.core.search.POLICY_SETTINGS`, the root noise
`NOISE_SETTINGS`), checked against the search itself, and the sweeps it refuses: a swept
setting that no experiment reads, and configurations that differ only in settings they
do not read (`azjax.sweep.grid.unread_settings`)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import CONFIG

import envs
from azjax.core.search import (
    NOISE_SETTINGS,
    POLICIES,
    POLICY_SETTINGS,
    SearchConfig,
    deterministic,
    make_search_fn,
    policies_reading,
)
from azjax.sweep.grid import (
    SWITCHED,
    group_experiments,
    make_grid,
    parse_params,
    reads_setting,
    sweepable_fields,
    unread_settings,
)
from azjax.sweep.sweep import clock_warning, prepare_sweep

# A value of each policy-specific setting far from its default, so that a search that
# reads it searches differently.
CHANGED = {"c_puct": 10.0, "pb_c_base": 1.0, "dirichlet_alpha": 10.0,
           "dirichlet_fraction": 0.9, "gumbel_scale": 0.0, "gumbel_value_scale": 10.0,
           "max_num_considered_actions": 2}


@pytest.fixture(scope="module")
def positions():
    """Eight tic-tac-toe positions a few random moves in, and a linear network."""
    env = envs.make("tictactoe")
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    states = jax.vmap(env.init)(keys)
    for ply in range(3):
        logits = jnp.where(states.legal_action_mask, 0.0, -1e9)
        moves = jax.random.categorical(jax.random.PRNGKey(ply + 1), logits)
        states = jax.vmap(env.step)(states, moves)
    features = int(np.prod(env.observation_shape))
    w_key, v_key = jax.random.split(jax.random.PRNGKey(7))
    params = {"w": jax.random.normal(w_key, (features, env.num_actions)),
              "v": jax.random.normal(v_key, (features,)) / features}

    def apply_fn(params, obs):
        flat = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        return flat @ params["w"], jnp.tanh(flat @ params["v"])

    return env, apply_fn, params, states


COMPILED: dict[tuple, object] = {}
"""The jitted searches by their compiled-in settings: a traced setting reaches a search as
an array, so one compiled search serves every value of it."""


def searched(positions, config: SearchConfig) -> np.ndarray:
    """The search policy (B, A) of `config` at the test positions, one fixed key."""
    env, apply_fn, params, states = positions
    static = (config.policy, config.num_simulations, config.gumbel_value_scale,
              config.max_num_considered_actions)
    if static not in COMPILED:
        COMPILED[static] = jax.jit(make_search_fn(env, apply_fn, config))
    out = COMPILED[static](params, config.as_arrays(), jax.random.PRNGKey(3), states)
    return np.asarray(out.action_weights)


@pytest.mark.parametrize("policy", POLICIES)
def test_each_search_reads_exactly_the_settings_the_mapping_gives_it(positions, policy):
    base = SearchConfig(policy=policy, num_simulations=16, max_num_considered_actions=9)
    reference = searched(positions, base)
    for name, value in CHANGED.items():
        config = dataclasses.replace(base, **{name: value})
        same = np.array_equal(searched(positions, config), reference)
        assert same != config.reads(name), (policy, name)
        assert config.reads(name) == (policy in policies_reading(name))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_greedy_search_reads_no_root_noise(positions, policy):
    # Evaluation, gating and games against baselines search greedily: the noise is off.
    base = SearchConfig(policy=policy, num_simulations=16, max_num_considered_actions=9)
    reference = searched(positions, deterministic(base))
    for name, value in {"dirichlet_alpha": 10.0, "dirichlet_fraction": 0.9,
                        "gumbel_scale": 2.0}.items():
        assert name in NOISE_SETTINGS
        changed = dataclasses.replace(base, **{name: value})
        assert np.array_equal(searched(positions, deterministic(changed)), reference), name


def test_the_mapping_names_settings_of_the_search_config():
    fields = {f.name for f in dataclasses.fields(SearchConfig)}
    assert set(POLICY_SETTINGS) == set(POLICIES)
    named = [n for names in POLICY_SETTINGS.values() for n in names]
    assert set(named) <= fields and len(named) == len(set(named))
    assert set(named) == set(CHANGED)
    assert policies_reading("num_simulations") == POLICIES
    assert policies_reading("c_puct") == ("puct",)
    assert policies_reading("gumbel_scale") == ("gumbel",)


GUMBEL = CONFIG.replace(iterations=1)
assert GUMBEL.program.search.policy == "gumbel"
PUCT = GUMBEL.replace(search=dataclasses.replace(GUMBEL.program.search, policy="puct"))


def refusal(base, specs) -> str:
    with pytest.raises(ValueError) as err:
        prepare_sweep(base, parse_params(specs), [0])
    return str(err.value)


def test_a_puct_setting_swept_under_gumbel_is_refused_in_one_line():
    for spec in ("c_puct=1,2", "pb_c_base=100,1000", "dirichlet_alpha=0.1,1",
                 "dirichlet_fraction=0,0.5"):
        name = spec.partition("=")[0]
        message = refusal(GUMBEL, [spec])
        assert message == (
            f"search.{name} is never read by the gumbel search every experiment of this "
            "sweep uses (the tictactoe recipe's search.policy); set --search.policy puct "
            "to sweep it")
    # Swept beside a policy that never reads it either.
    assert refusal(GUMBEL, ["policy=gumbel", "c_puct=1,2"]) == (
        "search.c_puct is never read by the gumbel search every experiment of this sweep "
        "uses (--param policy=gumbel); sweep c_puct in a separate sweep with "
        "--search.policy puct")


def test_a_gumbel_setting_swept_under_puct_is_refused():
    for spec in ("gumbel_scale=0.5,1", "gumbel_value_scale=0.1,1",
                 "max_num_considered_actions=2,4"):
        message = refusal(PUCT, [spec])
        assert message.startswith(f"search.{spec.partition('=')[0]} is never read by the "
                                  "puct search")
        assert message.endswith("; set --search.policy gumbel to sweep it")
        assert "\n" not in message


# GUMBEL scoring a PUCT search at every evaluation (the recipe's evaluation scores none).
SCORED = GUMBEL.replace(eval_every=1, eval_search_every=1, eval_search_with=("policy=puct",))


def test_settings_that_some_experiment_reads_are_allowed():
    for base, specs in ((SCORED, ["policy=puct,gumbel", "c_puct=1,2"]),
                        (PUCT, ["c_puct=1,2", "dirichlet_fraction=0,0.25"]),
                        (GUMBEL, ["gumbel_scale=0.5,1", "num_simulations=2,4"]),
                        (PUCT, ["num_simulations=2,4", "learning_rate=0.001,0.01"])):
        assert len(prepare_sweep(base, parse_params(specs), [0, 1])) == 8


def test_the_evaluation_search_counts_the_agents_play_search_does_not():
    # run.eval_search_with=policy=puct scores a PUCT search, which reads the swept c_puct.
    assert reads_setting(SCORED.with_value("search.c_puct", 2.0), "c_puct")
    assert len(prepare_sweep(SCORED, parse_params(["c_puct=1,2"]), [0])) == 2
    # Where the evaluation scores no search (the recipe's), nothing reads it.
    assert not reads_setting(GUMBEL.replace(eval_search_with=("policy=puct",)), "c_puct")
    # Unless it sets c_puct itself.
    fixed = SCORED.replace(eval_search_with=("policy=puct", "c_puct=2"))
    assert not reads_setting(fixed, "c_puct")
    refusal(fixed, ["c_puct=1,2"])
    # The search the agent plays with afterwards reports nothing to the sweep.
    played = GUMBEL.replace(search=dataclasses.replace(GUMBEL.program.search,
                                                       play_policy="puct"))
    assert "never read by the gumbel search" in refusal(played, ["c_puct=1,2"])


def test_configurations_that_differ_only_in_a_setting_their_policy_never_reads_are_refused():
    # Its PUCT experiments read c_puct, but its two Gumbel configurations would train the
    # same runs under two labels.
    assert refusal(GUMBEL, ["policy=puct,gumbel", "c_puct=1,2"]) == (
        "'search.policy=gumbel search.c_puct=1.0' and 'search.policy=gumbel "
        "search.c_puct=2.0' would train the same runs: search.c_puct is not read there: "
        "the gumbel search never reads it, only puct's does; sweep c_puct in a separate "
        "sweep with --search.policy puct")
    message = refusal(PUCT, ["policy=puct,gumbel", "gumbel_scale=0.5,1,2"])
    assert message.startswith("'search.policy=puct search.gumbel_scale=0.5', "
                              "'search.policy=puct search.gumbel_scale=1.0' and "
                              "'search.policy=puct search.gumbel_scale=2.0' would train the "
                              "same runs: search.gumbel_scale is not read there")
    assert message.endswith("; sweep gumbel_scale in a separate sweep with --search.policy "
                            "gumbel") and "\n" not in message


def test_root_noise_counts_as_read_by_self_play_alone():
    # The evaluation scores a PUCT search, but a greedy one: Dirichlet noise off.
    for spec in ("dirichlet_alpha=0.1,1", "dirichlet_fraction=0,0.5"):
        assert not reads_setting(SCORED, spec.partition("=")[0])
        message = refusal(SCORED, [spec])
        assert message.startswith(f"search.{spec.partition('=')[0]} is never read by the "
                                  "gumbel search every experiment of this sweep uses")
        assert "self-play alone reads it" in message
    message = refusal(SCORED, ["policy=puct,gumbel", "dirichlet_alpha=0.1,1"])
    assert message.startswith("'search.policy=gumbel search.dirichlet_alpha=0.1' and "
                              "'search.policy=gumbel search.dirichlet_alpha=1.0' would train "
                              "the same runs")
    assert "only self-play reads the root noise" in message
    # With no noise mixed in, its concentration is not read either.
    message = refusal(PUCT, ["dirichlet_fraction=0,0.25", "dirichlet_alpha=0.1,1"])
    assert "search.dirichlet_alpha is not read there: search.dirichlet_fraction is 0" in message
    assert message.endswith("--search.dirichlet-fraction above 0")
    assert len(prepare_sweep(PUCT, parse_params(["dirichlet_alpha=0.1,1"]), [0])) == 2


CAPPED = GUMBEL.replace(selfplay=dataclasses.replace(
    GUMBEL.program.selfplay, full_search_prob=0.5, cheap_simulations=2))


@pytest.mark.parametrize("base, specs, words", [
    # Playout cap randomisation off: no cheap search.
    (GUMBEL, ["cheap_simulations=2,3"],
     ["selfplay.cheap_simulations is never read by any experiment of this sweep: "
      "selfplay.full_search_prob is 1 (playout cap randomisation off); set "
      "--selfplay.full-search-prob below 1"]),
    (GUMBEL, ["full_search_prob=1,0.5", "cheap_simulations=2,3"],
     ["'selfplay.full_search_prob=1.0 selfplay.cheap_simulations=2' and "
      "'selfplay.full_search_prob=1.0 selfplay.cheap_simulations=3' would train the same "
      "runs: selfplay.cheap_simulations is not read there",
      "sweep cheap_simulations in a separate sweep with --selfplay.full-search-prob below 1"]),
    # Resignation off: no games played on to count false resignations.
    (GUMBEL, ["resign_playout_prob=0.1,0.2"], ["selfplay.resign_threshold is -1"]),
    (GUMBEL, ["regime=alphazero,gating", "gate_threshold=0.55,0.6"],
     ["'regime=alphazero gate_threshold=0.55' and 'regime=alphazero gate_threshold=0.6'",
      "--regime gating"]),
    (GUMBEL, ["eval_games=8,16"], ["no --eval-opponents"]),
    (GUMBEL, ["num_blocks=1,2"], ["network.torso is mlp"]),
    (GUMBEL, ["ownership_weight=0.5,1"], ["the network has no ownership head"]),
    (GUMBEL, ["play_simulations=8,16"],
     ["only a trained agent's play", "leave it out of the sweep"]),
])
def test_settings_another_one_switches_off_are_refused(base, specs, words):
    message = refusal(base, specs)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_settings_switched_on_are_allowed():
    for base, specs, configurations in (
            (CAPPED, ["cheap_simulations=2,3"], 2),
            (GUMBEL, ["full_search_prob=0.5,0.25", "cheap_simulations=2,3"], 4),
            (GUMBEL, ["resign_threshold=-0.9,-0.8", "resign_playout_prob=0.1,0.2"], 4),
            (GUMBEL, ["regime=gating", "gate_threshold=0.55,0.6"], 2),
            (GUMBEL, ["channels=8,16", "mlp_layers=1,2"], 4)):
        assert len(prepare_sweep(base, parse_params(specs), [0])) == configurations


def test_every_switched_setting_is_a_setting_and_read_where_switched_on():
    fields = sweepable_fields()
    assert all(path in fields for paths, *_ in SWITCHED for path in paths)
    paths = ["search.c_puct", "search.gumbel_scale", "selfplay.cheap_simulations",
             "learner.learning_rate"]
    assert list(unread_settings(CAPPED, paths)) == ["search.c_puct"]
    assert unread_settings(GUMBEL, paths)["selfplay.cheap_simulations"].needs == (
        "--selfplay.full-search-prob below 1")


def test_a_sweep_bounded_by_minutes_over_several_programs_warns():
    timed = GUMBEL.replace(max_minutes=5.0)
    two = group_experiments(make_grid(timed, parse_params(["num_simulations=2,4"]), [0, 1]))
    assert clock_warning(two, 1).startswith(
        "warning: --max-minutes is a wall clock each compile group shares, and this sweep "
        "trains in 2 groups of 2 experiments:")
    one = group_experiments(make_grid(timed, parse_params(["gumbel_scale=0.5,1"]), [0, 1]))
    assert clock_warning(one, 1) == ""  # one group: the same clock for every experiment
    assert "in 2 groups of 2 experiments" in clock_warning(one, 2)  # halved over shards
    sizes = group_experiments(make_grid(timed, parse_params(
        ["num_simulations=2,4", "gumbel_scale=0.5,1"]), [0]))
    assert "of 2 experiments" in clock_warning(sizes, 1)
    untimed = group_experiments(make_grid(GUMBEL, parse_params(["num_simulations=2,4"]),
                                          [0, 1]))
    assert clock_warning(untimed, 1) == ""
    uneven = group_experiments(make_grid(timed, parse_params(["num_simulations=2,4,8"]),
                                         [0, 1]))
    assert "in 4 groups of 1 to 2 experiments" in clock_warning(uneven, 4)
