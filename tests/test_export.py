"""Agents exported to one file and loaded back with Agent.load."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import typing

import go_tiny
import jax
import numpy as np
import pytest
from flax import serialization
from test_training import ROOT, SMALL, leaves_equal

from azjax import Agent
from azjax.core.iteration import init_train_state
from azjax.core.search import SearchConfig
from azjax.export import main as export_main
from azjax.run import checkpoint as ckpt
from azjax.run.agent_file import AgentFileError, write_agent_file
from azjax.run.recipes import recipe


@pytest.fixture
def run_dir(tiny_run):
    """A run with checkpoints 1 and 2 (the tiny run: read, never changed)."""
    return tiny_run


def checkpoint_params(run_dir, step):
    """The network parameters of checkpoint `step`, restored with the whole state."""
    config = ckpt.load_config(run_dir)
    state = init_train_state(config.make_env(), config.program, jax.random.key(0))
    manager = ckpt.checkpoint_manager(run_dir)
    try:
        return ckpt.restore(manager, state, step).params
    finally:
        manager.close()


def export_command(*args):
    return subprocess.run([sys.executable, "-m", "azjax.export", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)


def test_exported_agent_is_the_same_agent(run_dir, tmp_path):
    agent = Agent.load(run_dir).with_search(num_simulations=24, policy="puct")
    path = agent.export(tmp_path / "agents" / "ttt.azjax")
    loaded = Agent.load(path)
    assert leaves_equal(loaded.params, agent.params)
    assert loaded.env.name == "tictactoe"
    assert loaded.search_config == agent.search_config
    assert dataclasses.replace(loaded.program, search=SMALL.program.search) == agent.program
    env = agent.env
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(3), 16))
    logits, values = agent.evaluate(states.observation)
    logits2, values2 = loaded.evaluate(states.observation)
    assert np.array_equal(np.asarray(logits), np.asarray(logits2))
    assert np.array_equal(np.asarray(values), np.asarray(values2))
    key = jax.random.key(4)
    assert np.array_equal(np.asarray(agent.act(states, key, greedy=False)),
                          np.asarray(loaded.act(states, key, greedy=False)))
    # A search override at load time still applies to a file.
    assert Agent.load(path, search=SMALL.program.search).search_config == SMALL.program.search
    assert not list(path.parent.glob("*.partial"))


def other_value(kind, value):
    """A valid setting of type `kind` other than `value`."""
    choices = typing.get_args(kind)
    if choices:
        return next(choice for choice in choices if choice != value)
    if kind is bool:
        return not value
    if kind is int:
        return value + 1
    return value / 2 if value else 0.5


def test_an_exported_agent_searches_as_it_was_given(tmp_path):
    """Every search setting survives export and load, on a program whose search has play
    settings (go9x9's) that loading must not apply again."""
    search = recipe("go9x9", "cpu").program.search
    assert search.play_simulations and search.play_policy and search.play_skip_futile
    program = dataclasses.replace(go_tiny.CONFIG.program, search=search)
    env = program.make_env()
    agent = Agent(env, program, go_tiny.random_params(env, program.network))
    kinds = typing.get_type_hints(SearchConfig)
    for field in dataclasses.fields(SearchConfig):
        value = other_value(kinds[field.name], getattr(agent.search_config, field.name))
        changed = agent.with_search(**{field.name: value})
        loaded = Agent.load(changed.export(tmp_path / f"{field.name}.azjax"))
        assert loaded.search_config == changed.search_config, field.name


def test_export_command_line(run_dir, tmp_path, capsys):
    """`python -m azjax.export` in a process of its own; its other cases through its
    `main`, in this process."""
    assert ckpt.checkpoint_steps(run_dir) == [2, 1]
    newest, first = checkpoint_params(run_dir, 2), checkpoint_params(run_dir, 1)
    assert not leaves_equal(newest, first)
    out = tmp_path / "agent.azjax"
    done = export_command(run_dir, out)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stdout
    assert leaves_equal(Agent.load(out).params, newest)
    capsys.readouterr()
    assert export_main([str(run_dir), str(tmp_path / "first.azjax"), "--step", "1"]) == 0
    assert f"wrote {tmp_path / 'first.azjax'}" in capsys.readouterr().out
    assert leaves_equal(Agent.load(tmp_path / "first.azjax").params, first)
    assert export_main([str(tmp_path / "none"), str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and "does not exist" in err
    assert "Traceback" not in err


def test_export_of_a_missing_step_lists_the_steps_there(run_dir, tmp_path, capsys):
    out = tmp_path / "agent.azjax"
    assert export_main([str(run_dir), str(out), "--step", "7"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no checkpoint at step 7 in ") and err.count("\n") == 1
    assert str(run_dir) in err and err.rstrip().endswith("steps there: [1, 2]")
    assert not out.exists()


def test_bad_agent_files_are_clear_errors(run_dir, tmp_path):
    with pytest.raises(AgentFileError, match="is not an azjax agent file"):
        (tmp_path / "junk.azjax").write_bytes(b"\x00\x01 not msgpack at all")
        Agent.load(tmp_path / "junk.azjax")
    with pytest.raises(AgentFileError, match="is not an azjax agent file"):
        (tmp_path / "other.azjax").write_bytes(serialization.msgpack_serialize({"a": 1}))
        Agent.load(tmp_path / "other.azjax")

    agent = Agent.load(run_dir)
    path = agent.export(tmp_path / "a.azjax")
    with pytest.raises(AgentFileError, match="no steps"):
        Agent.load(path, step=2)

    payload = serialization.msgpack_restore(path.read_bytes())
    payload["version"] = 99
    (tmp_path / "future.azjax").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(AgentFileError, match="version 99"):
        Agent.load(tmp_path / "future.azjax")

    # Weights of one network under the config of a wider one.
    wider = dataclasses.replace(agent.program, network=dataclasses.replace(
        agent.program.network, channels=48))
    write_agent_file(tmp_path / "mismatch.azjax", wider, agent.params)
    with pytest.raises(AgentFileError, match="shape"):
        Agent.load(tmp_path / "mismatch.azjax")

    payload = serialization.msgpack_restore(path.read_bytes())
    config = json.loads(payload["config"])
    config["game"] = "chess"
    payload["config"] = json.dumps(config)
    (tmp_path / "chess.azjax").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(AgentFileError, match="unknown game"):
        Agent.load(tmp_path / "chess.azjax")


def test_version_1_files_still_load(run_dir, tmp_path):
    """Files written before the config had two halves hold a flat training config."""
    agent = Agent.load(run_dir)
    path = agent.export(tmp_path / "new.azjax")
    payload = serialization.msgpack_restore(path.read_bytes())
    program = json.loads(payload["config"])
    flat = {**program, **dataclasses.asdict(SMALL.run), "seed": 0}
    flat["eval_opponents"] = list(flat["eval_opponents"])
    payload.update(version=1, config=json.dumps(flat))
    (tmp_path / "v1.azjax").write_bytes(serialization.msgpack_serialize(payload))
    old = Agent.load(tmp_path / "v1.azjax")
    assert old.program == agent.program
    assert leaves_equal(old.params, agent.params)
