"""The README's headline: `python experiments/tictactoe.py`, the default command, reaches
perfect play from a fresh run directory.

Slow (about a minute and a half of training on 2 CPU cores): `.ci/run` runs it in its
second step (`pytest -m slow`). The command compiles as a user's does: without the
session's fast-compile setting (`tests/users_build.py`). Perfect play is checked twice:
by the run's own evaluator (what stops training), and independently of every package
solver by the retrograde solver of `tests/test_tictactoe_oracle.py` on the agent loaded
back from the run directory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from test_tictactoe_oracle import SOLVED, O, X, from_board, guaranteed
from users_build import users_environment

import envs
from azjax import Agent
from azjax.evaluation.evaluators import make_evaluator
from azjax.run.recipes import recipe

ROOT = Path(__file__).resolve().parents[1]
# The README's first command after its install, word for word (tests/test_docs.py holds
# them together); run from a directory where experiments/ is the repository's.
COMMAND = ("python", "experiments/tictactoe.py")


@pytest.mark.slow
def test_default_tictactoe_command_reaches_perfect_play(tmp_path):
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    out = subprocess.run([sys.executable, *COMMAND[1:]], env=users_environment(),
                         capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_dir = tmp_path / "runs" / "tictactoe"  # where the README says it writes

    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = records[-1]
    assert last["perfect"] == 1.0 and last["net_optimal_share"] == 1.0
    assert last["net_unbeatable_first"] == 1.0 and last["net_unbeatable_second"] == 1.0
    # Not a statistical criterion: the run is the recipe's fixed seed, and a run repeats
    # itself bit for bit (tests/test_devices.py, tests/test_faults.py), so on a given
    # backend this test passes or fails every time (false-failure rate 0 from run to run).
    # A change that redraws the random stream draws a fresh seed: seeds 0-9 all reached
    # perfect play in 17-73 of the 300 iterations (recipes.py), which bounds a seed's
    # failure rate only below upper_bound(0, 10) = 37% (99%): no derivation of < 1e-3 per
    # seed is possible from ten seeds (it takes 4,603 clean ones).
    assert last["iteration"] < recipe("tictactoe", "auto").run.iterations  # it stopped on reaching it
    assert not any(r.get("perfect") == 1.0 for r in records[:-1])

    agent = Agent.load(run_dir)
    assert agent.program == recipe("tictactoe", "auto").program
    states = make_evaluator(envs.make("tictactoe")).truth.states
    logits, _ = jax.device_get(agent.evaluate(states.observation))
    legal = np.asarray(states.legal_action_mask)
    moves = np.where(legal, logits, -np.inf).argmax(axis=1)
    positions = [from_board(b) for b in np.asarray(states.board)]
    assert sorted(positions) == sorted(SOLVED.live)
    policy = dict(zip(positions, moves.tolist()))
    wrong = [p for p in SOLVED.live if policy[p] not in SOLVED.optimal[p]]
    assert not wrong, f"{len(wrong)} positions without an optimal move, e.g. {wrong[:3]}"
    assert guaranteed(policy, X) == 0 and guaranteed(policy, O) == 0  # draws from both seats
