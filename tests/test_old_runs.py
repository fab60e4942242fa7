"""A run written by azjax 0.1.0 still resumes and loads: tests/data/run_0_1_0 (its
README.txt: the commit and the command that made it), a tiny tic-tac-toe run of two
iterations with one checkpoint, of iteration 2.

`azjax train` on a copy of it counts on from iteration 3 (its records kept as they were,
its counters counting on, not trained afresh), and `Agent.load` plays legal moves from
it. A config from before 0.1.0 is refused in one line (tests/test_training.py).
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from pathlib import Path

import jax
import numpy as np
from cli_in_process import command

from azjax import Agent
from azjax.commands.train import main as train_main

ROOT = Path(__file__).resolve().parents[1]
RUN_0_1_0 = ROOT / "tests" / "data" / "run_0_1_0"
COMMIT_0_1_0 = "226bae01838ada48b56b5cfc7c6a99f1b0be55e9"
# The flags that made it (README.txt), iterations aside.
FLAGS_0_1_0 = [
    "--preset", "cpu",
    "--network.channels", "16", "--network.mlp-layers", "1",
    "--search.num-simulations", "4", "--search.max-num-considered-actions", "9",
    "--selfplay.num-games", "16", "--learner.batch-size", "32",
    "--replay-capacity", "144", "--gradient-steps", "4",
    "--eval-every", "0", "--checkpoint-every", "2", "--no-stop-when-perfect",
]


def records_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()
            if line.strip()]


def test_the_fixture_is_a_run_that_0_1_0_wrote():
    readme = (RUN_0_1_0 / "README.txt").read_text()
    assert "azjax 0.1.0" in readme and COMMIT_0_1_0 in readme
    assert "python -m azjax train tictactoe" in readme
    # What 0.1.0 wrote: a config in two halves, one checkpoint without OCDBT, with its
    # manifest (format 1) and its copy of the records, and counters in two words.
    config = json.loads((RUN_0_1_0 / "config.json").read_text())
    assert set(config) == {"program", "run", "seed"}
    assert config["program"]["game"] == "tictactoe" and config["run"]["iterations"] == 2
    step = RUN_0_1_0 / "checkpoints" / "2"
    assert sorted(p.name for p in (RUN_0_1_0 / "checkpoints").iterdir()) == ["2"]
    manifest = json.loads((step / "azjax_manifest.json").read_text())
    assert manifest["format"] == 1 and manifest["step"] == 2
    assert manifest["config"] == config
    assert not (step / "default" / "manifest.ocdbt").exists()
    assert (step / "default" / "iteration.low").is_dir()
    assert (step / "default" / "iteration.high").is_dir()
    copied = gzip.decompress((step / "azjax_metrics.jsonl.gz").read_bytes()).decode()
    assert [json.loads(line) for line in copied.splitlines() if line.strip()] \
        == records_of(RUN_0_1_0)
    assert [r["iteration"] for r in records_of(RUN_0_1_0)] == [1, 2]


def test_a_0_1_0_run_resumes_where_it_stopped(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(RUN_0_1_0, run_dir)
    before = records_of(run_dir)
    done = command(train_main, ["tictactoe", "--run-dir", str(run_dir), *FLAGS_0_1_0,
                                "--iterations", "4"])
    assert done.returncode == 0, done.stderr
    assert f"resumed {run_dir} at iteration 2" in done.stdout + done.stderr
    records = records_of(run_dir)
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    assert records[:2] == before  # its own records untouched, not trained afresh
    # Its counters count on from the checkpoint's.
    assert records[2]["positions"] == before[-1]["positions"] + 144
    assert records[3]["positions"] == before[-1]["positions"] + 2 * 144
    assert records[2]["games"] >= before[-1]["games"]
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["2", "4"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both intact: no damage reported
        old, new = Agent.load(run_dir, step=2), Agent.load(run_dir)
    assert jax.tree.structure(old.params) == jax.tree.structure(new.params)
    assert not all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(old.params),
                                                        jax.tree.leaves(new.params)))
    # Its provenance: iterations 1-2 were trained by 0.1.0, which kept no provenance.jsonl.
    provenance = new.provenance
    assert provenance.iterations == 4 and provenance.positions == records[3]["positions"]
    assert any("provenance.jsonl" in note and "up to 2" in note for note in provenance.notes)
    assert json.loads((run_dir / "config.json").read_text())["run"]["iterations"] == 4


def test_a_0_1_0_run_loads_as_an_agent_and_plays_legal_moves(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(RUN_0_1_0, run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no damage reported
        agent = Agent.load(run_dir)
    assert agent.program.network.channels == 16
    # 0.1.0 kept no provenance.jsonl: the command is rebuilt from config.json.
    provenance = agent.provenance
    assert provenance.iterations == 2 and provenance.games == records_of(RUN_0_1_0)[-1]["games"]
    assert provenance.command.startswith("azjax train tictactoe")
    assert any("no provenance.jsonl" in note for note in provenance.notes)
    states = jax.vmap(agent.env.init)(jax.random.split(jax.random.key(1), 8))
    actions = np.asarray(agent.act(states, jax.random.key(2)))
    assert np.asarray(states.legal_action_mask)[np.arange(8), actions].all()
