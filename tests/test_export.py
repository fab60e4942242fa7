"""Agents exported to one file and loaded back with Agent.load."""

from __future__ import annotations

import dataclasses
import datetime
import json
import shlex
import subprocess
import sys
import typing

import go_tiny
import jax
import numpy as np
import pytest
import tiny
from flax import serialization
from test_training import ROOT, SMALL, leaves_equal

import azjax
from azjax import Agent
from azjax.commands.command_line import parse_with_preset, read_command_line
from azjax.commands.export import main as export_main
from azjax.commands.info import main as info_main
from azjax.commands.train import Experiment
from azjax.core.iteration import init_train_state
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.run.agents.agent_file import AgentFileError, write_agent_file
from azjax.run.agents.provenance import Provenance
from azjax.run.agents.run_provenance import UNKNOWN, training_command
from azjax.run.config import TrainConfig
from azjax.run.directory.run_dir import RunDir
from azjax.run.recipes import recipe


@pytest.fixture
def run_dir(tiny_run):
    """A run with checkpoints 1 and 2 (the tiny run: read, never changed)."""
    return tiny_run


def checkpoint_params(run_dir, step):
    """The network parameters of checkpoint `step`, restored with the whole state."""
    config = RunDir(run_dir).load_config()
    state = init_train_state(config.make_env(), config.program, jax.random.key(0))
    return RunDir(run_dir).checkpoints.restore(state, step).params


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
    assert RunDir(run_dir).checkpoints.steps() == [2, 1]
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


def test_version_1_files_are_refused_in_one_line(run_dir, tmp_path):
    """Version 1 files (a flat training config) were written before azjax 0.1.0."""
    path = Agent.load(run_dir).export(tmp_path / "new.azjax")
    payload = serialization.msgpack_restore(path.read_bytes())
    payload.update(version=1)
    (tmp_path / "v1.azjax").write_bytes(serialization.msgpack_serialize(payload))
    with pytest.raises(AgentFileError, match="agent file version 1; this azjax reads "
                                             "versions 2") as err:
        Agent.load(tmp_path / "v1.azjax")
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------------------
# Provenance: what trained an exported agent
# --------------------------------------------------------------------------------------


def checkout_head() -> str | None:
    """HEAD of the checkout these tests run from (None outside a git checkout)."""
    if not (ROOT / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()


def test_export_records_the_run_s_provenance_and_load_returns_it(run_dir, tmp_path, capsys):
    """The file says which code and command trained the run (provenance.jsonl's record of
    the process that trained it), and the budget metrics.jsonl records at the exported
    checkpoint (iteration 2, or 1 with --step 1); the run's agent says the same, undated;
    `with_search` keeps it."""
    records = {record["iteration"]: record for record in RunDir(run_dir).metrics.read()}
    assert sorted(records) == [1, 2] and records[1]["games"] < records[2]["games"]
    out, first = tmp_path / "agent.azjax", tmp_path / "first.azjax"
    assert export_main([str(run_dir), str(out)]) == 0
    assert export_main([str(run_dir), str(first), "--step", "1"]) == 0
    printed = capsys.readouterr().out
    assert f"provenance: iteration 2, azjax {azjax.__version__}, commit " in printed
    facts = Agent.load(out).provenance
    assert facts.azjax_version == azjax.__version__
    head = checkout_head()
    assert facts.commit == UNKNOWN if head is None else facts.commit.startswith(head)
    [trained_by] = RunDir(run_dir).read_provenance()
    assert facts.command == trained_by["command"] and trained_by["iteration"] == 0
    assert (facts.game, facts.preset) == ("tictactoe", "cpu")
    for step, path in ((2, out), (1, first)):
        facts = Agent.load(path).provenance
        assert facts.iterations == step
        assert facts.games == records[step]["games"]
        assert facts.positions == records[step]["positions"] > 0
        assert facts.wall_minutes == pytest.approx(records[step]["wall_time"] / 60)
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert facts.exported == today
    in_run = Agent.load(run_dir, step=1).provenance
    assert in_run == dataclasses.replace(facts, exported=None)
    assert Agent.load(first).with_search(num_simulations=3).provenance == facts


def parsed(command: str) -> tuple[TrainConfig, str]:
    """The config and run directory `azjax train` reads from a command line (parsed as
    the command parses it, over the same recipe; nothing is trained)."""
    words = shlex.split(command)
    assert words[:2] == ["azjax", "train"]
    experiment, _ = parse_with_preset(Experiment, read_command_line(words[2:]),
                                      lambda config: Experiment(config=config),
                                      lambda experiment: None)
    return experiment.config, experiment.run_dir


REBUILT = {
    "tiny": tiny.CONFIG.replace(devices=2),
    "settings of every kind": recipe("go7x7", "cpu").with_values({
        "eval_opponents": ("random", "gnugo:1"), "search.average_symmetries": True,
        "stop_when_perfect": False, "game_options.komi": 7.5, "seed": 3,
        "search.play_policy": "puct", "warm_start": "runs/a b",
        "eval_search_with": ("average_symmetries=true",), "learner.learning_rate": 1e-4,
        "max_minutes": 75.0}),
    "an empty list": recipe("go7x7", "gpu").replace(eval_opponents=()),
    "a warm-up's minutes": recipe("go9x9", "gpu").replace(max_minutes=20.0),
    "a game of no recipe": TrainConfig(program=ProgramConfig(
        game="go", game_options={"size": 5})).replace(iterations=7),
}


@pytest.mark.parametrize("name", list(REBUILT))
def test_the_rebuilt_command_trains_the_config_it_was_rebuilt_from(name):
    config = REBUILT[name]
    command = training_command(config, "runs/my run")
    assert parsed(command) == (config, "runs/my run"), command


def test_the_run_s_own_rebuilt_command_gives_its_config(tiny_run_copy):
    """A run from before provenance.jsonl: its command, rebuilt, trains its config."""
    RunDir(tiny_run_copy).provenance_file.unlink()
    config = RunDir(tiny_run_copy).load_config()
    command = Agent.load(tiny_run_copy).provenance.command
    assert command.startswith(f"azjax train tictactoe --preset cpu --run-dir {tiny_run_copy}")
    assert parsed(command) == (config, str(tiny_run_copy))


def test_a_file_without_provenance_loads_and_says_not_recorded(run_dir, tmp_path, capsys):
    """A file as azjax wrote it before provenance (no such key) loads as before, and its
    provenance is nothing recorded, which `azjax info` says in one line."""
    agent = Agent.load(run_dir)
    path = write_agent_file(tmp_path / "old.azjax", agent.program, agent.params)
    assert "provenance" not in serialization.msgpack_restore(path.read_bytes())
    old = Agent.load(path)
    assert leaves_equal(old.params, agent.params)
    assert old.provenance == Provenance() and not old.provenance.recorded
    assert old.provenance.lines() == ["provenance: not recorded"]
    assert info_main([str(path)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == f"agent: {path}" and shown[1] == "game: tictactoe"
    assert shown[-1] == "provenance: not recorded" and len(shown) == 5
    # the same agent exported today records what it knows
    assert Agent.load(agent.export(tmp_path / "new.azjax")).provenance.recorded


def test_provenance_from_a_newer_azjax_loads_and_a_damaged_one_is_one_line(run_dir, tmp_path):
    path = Agent.load(run_dir).export(tmp_path / "a.azjax")
    payload = serialization.msgpack_restore(path.read_bytes())
    facts = json.loads(payload["provenance"])
    payload["provenance"] = json.dumps({**facts, "hardware": "a TPU pod"})
    (tmp_path / "newer.azjax").write_bytes(serialization.msgpack_serialize(payload))
    assert Agent.load(tmp_path / "newer.azjax").provenance == Agent.load(path).provenance
    for damaged, message in (("{not json", "not a JSON object"),
                             (json.dumps({**facts, "iterations": "2"}), "iterations is '2'")):
        payload["provenance"] = damaged
        (tmp_path / "bad.azjax").write_bytes(serialization.msgpack_serialize(payload))
        with pytest.raises(AgentFileError, match=message) as err:
            Agent.load(tmp_path / "bad.azjax")
        assert "\n" not in str(err.value)


def test_info_of_a_run_directory_shows_its_provenance(run_dir, capsys):
    assert info_main([str(run_dir), "--step", "1"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[:2] == [f"agent: {run_dir}", "game: tictactoe"]
    assert shown[2] == "network: mlp torso, 1 layer of 16 units; " + shown[2].split("; ")[1]
    assert shown[3] == "search: gumbel, 4 simulations"
    assert shown[4] == "provenance:" and "  iterations: 1" in shown
    assert f"  azjax version: {azjax.__version__}" in shown
    assert "  exported: not recorded" in shown
