"""The ratings league: round robin, Elo fit, run_league over a tiny run's checkpoints, CLI."""

from __future__ import annotations

import csv
import json
import shutil

import jax
import numpy as np
import pytest
from tiny import CONFIG

import envs
from azjax import train
from azjax.commands.league import main
from azjax.evaluation.baselines import random_player, solver_player
from azjax.evaluation.league import CSV_COLUMNS, fit_league, round_robin, run_league
from azjax.evaluation.match import MatchResult
from azjax.evaluation.player_specs import make_player
from azjax.evaluation.ratings import fit_elo
from azjax.run.agents.agent import Agent
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir

# The tiny program (tests/tiny.py) for three iterations, a checkpoint after each.
TINY = CONFIG.replace(iterations=3, checkpoint_every=1)
FILES = ("league.csv", "league.md", "league.json", "league.png")
# The baselines of the command-line leagues: the same matches (so the same programs) in
# this process and in the command's own.
ANCHORED = "random,mcts:4,c=2"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("league") / "run"
    train(TINY, path, progress=None)
    return path


def _result(a: str, b: str, wins: int, draws: int, losses: int) -> MatchResult:
    results = np.array([1] * wins + [0] * draws + [-1] * losses, np.int8)
    return MatchResult(a, b, results, np.arange(len(results)) % 2)


def test_round_robin_of_baselines_ranks_solver_over_mcts_over_random():
    env = envs.make("tictactoe")
    players = [random_player(), solver_player(env), make_player("mcts:50", env)]
    messages = []
    matches = round_robin(env, players, jax.random.key(0), games_per_pair=40,
                          progress=messages.append)
    assert len(matches) == 3 == len(messages)
    assert {(m.name_a, m.name_b) for m in matches} == {
        ("random", "solver"), ("random", "mcts:50"), ("solver", "mcts:50")}
    assert all(m.num_games == 40 for m in matches)
    assert messages[0].startswith("league: 1/3 pairs")
    assert "random vs solver" in messages[0] and "ETA" in messages[0]
    assert "done" in messages[-1]
    for m in matches:  # the solver never loses, whichever side of the pair it is
        solver_losses = m.losses if m.name_a == "solver" else m.wins if m.name_b == "solver" else 0
        assert solver_losses == 0
    ratings = fit_league([p.name for p in players], matches, anchor="random")
    elo = dict(zip(ratings.names, ratings.elo))
    assert elo["random"] == 0.0
    # False-failure rate < 1.2e-4 (so < 1e-3), derived offline: 2,000 games a pair (key
    # 12345) gave random-solver 0/256/1744 (wins/draws/losses of the first), random-mcts:50
    # 72/126/1802, solver-mcts:50 734/1266/0. At the 99% Clopper-Pearson ends that favour
    # a wrong order (the solver's wins over mcts:50 at least 34.2%, random's draws with the
    # solver at most 14.6%, random's wins and draws with mcts:50 at least 2.7% and 5.1%),
    # 40,000 round robins of 40 games a pair sampled from those odds (pooled over seats,
    # which only widens them) and fitted like this one never broke the order (solver over
    # mcts:50 by 104 Elo on average, sd 29, least 3.8): upper_bound(0, 40000) = 1.2e-4.
    assert elo["solver"] > elo["mcts:50"] > elo["random"]


def test_fit_league_counts_draws_as_half_points():
    matches = [_result("a", "b", 6, 4, 2), _result("b", "c", 3, 2, 5), _result("a", "c", 1, 8, 1)]
    ratings = fit_league(["a", "b", "c"], matches, anchor="b")
    expected = fit_elo(["a", "b", "c"], [(0, 1, 8.0, 12), (1, 2, 4.0, 10), (0, 2, 5.0, 10)],
                       anchor=1)
    np.testing.assert_allclose(ratings.elo, expected.elo)
    assert ratings.elo[1] == 0.0
    with pytest.raises(ValueError, match="anchor 'x' is not among"):
        fit_league(["a", "b", "c"], matches, anchor="x")
    with pytest.raises(ValueError, match="'c' is not among"):
        fit_league(["a", "b"], matches, anchor="a")


def test_round_robin_rejects_duplicate_names():
    env = envs.make("tictactoe")
    with pytest.raises(ValueError, match="unique"):
        round_robin(env, [random_player(), random_player()], jax.random.key(0), 2)


def test_run_league_writes_one_row_per_player(run_dir):
    league = run_league(RunDir.open(run_dir), baselines=("random", "solver"),
                        games_per_pair=4, kind="network", progress=None)
    names = ["it1", "it2", "it3", "random", "solver"]
    assert league.names == names
    assert len(league.matches) == 10 and all(m.num_games == 4 for m in league.matches)
    for name in FILES:
        assert (run_dir / name).stat().st_size > 0

    with open(run_dir / "league.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames) == CSV_COLUMNS
    assert [r["name"] for r in rows] == names
    metrics = {r["iteration"]: r for r in RunDir(run_dir).metrics.read()}
    for row in rows[:3]:
        step = int(row["iteration"])
        assert row["kind"] == "checkpoint" and row["name"] == f"it{step}"
        assert float(row["wall_time_s"]) == pytest.approx(metrics[step]["wall_time"])
        assert int(row["games"]) == metrics[step]["games"]
    for row in rows[3:]:
        assert row["kind"] == "baseline"
        assert row["iteration"] == row["wall_time_s"] == row["games"] == ""
    by_name = {r["name"]: r for r in rows}
    assert float(by_name["random"]["elo"]) == 0.0
    assert all(int(r["games_played"]) == 16 for r in rows)  # 4 opponents x 4 games
    for r in rows:
        assert float(r["elo_low"]) <= float(r["elo"]) <= float(r["elo_high"])

    data = json.loads((run_dir / "league.json").read_text())
    assert data["game"] == "tictactoe" and data["anchor"] == "random"
    assert len(data["matches"]) == 10 and set(data["ratings"]) == set(names)
    markdown = (run_dir / "league.md").read_text()
    assert "| rank | name | Elo |" in markdown
    matrix = [line for line in markdown.splitlines()
              if line.startswith("|") and line.split("|")[1].strip() in names]
    assert len(matrix) == 5 and all(len(line.split("|")) == 5 + 3 for line in matrix)


def test_run_league_overrides_simulations(run_dir, monkeypatch):
    budgets = []
    original = Agent.player

    def spy(self, kind="alphazero", name=None, greedy=True):
        budgets.append((kind, self.search_config.num_simulations))
        return original(self, kind, name, greedy)

    monkeypatch.setattr(Agent, "player", spy)
    league = run_league(RunDir.open(run_dir), baselines=["random"], steps=[3],
                        games_per_pair=2, simulations=2, progress=None)
    assert budgets == [("alphazero", 2)]
    assert league.names == ["it3", "random"]
    assert league.entrants[0].iteration == 3


def test_run_league_errors(run_dir, tmp_path):
    messages = []
    run = RunDir.open(run_dir)
    with pytest.raises(RunDirError, match=r"step\(s\) \[7\].*available steps: \[1, 2, 3\]"):
        run_league(run, steps=[7], progress=messages.append)
    with pytest.raises(RunDirError, match="does not exist"):
        run_league(RunDir.open(tmp_path / "missing"), progress=messages.append)
    with pytest.raises(ValueError, match="anchor 'solver' is not among the players"):
        run_league(run, baselines=["random"], anchor="solver", progress=messages.append)
    with pytest.raises(ValueError, match="simulations applies only"):
        run_league(run, kind="network", simulations=4, progress=messages.append)
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(run_dir / "config.json", empty / "config.json")
    with pytest.raises(RunDirError, match="no checkpoint"):
        run_league(RunDir.open(empty), progress=messages.append)
    assert messages == []  # every error comes before any game is played


def test_cli_reports_bad_input(tmp_path, capsys):
    assert main(["--run-dir", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "does not exist" in err and "Traceback" not in err


def test_cli_plays_and_prints_the_table(run_dir, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    code = main(["--run-dir", str(copy), "--baselines", ANCHORED, "--steps", "2,3",
                 "--games", "2", "--kind", "network", "--openings", "1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "6/6 pairs" in out and "| rank | name | Elo |" in out and "mcts:4,c=2" in out
    assert f"wrote {copy / 'league.png'}" in out
    rows = list(csv.DictReader((copy / "league.csv").read_text().splitlines()))
    assert [r["name"] for r in rows] == ["it2", "it3", "random", "mcts:4,c=2"]


def test_cli_anchor_is_the_player_at_0_elo(run_dir, tmp_path):
    """`python -m azjax.league ... --anchor NAME` through the command line."""
    import subprocess
    import sys
    from pathlib import Path

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    done = subprocess.run(
        [sys.executable, "-m", "azjax.league", "--run-dir", str(copy), "--baselines",
         ANCHORED, "--steps", "3", "--games", "2", "--openings", "1", "--kind", "network",
         "--anchor", "mcts:4,c=2"],
        capture_output=True, text=True, timeout=300, check=False,
        cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    league = json.loads((copy / "league.json").read_text())
    assert league["anchor"] == "mcts:4,c=2"
    rows = {r["name"]: r for r in csv.DictReader((copy / "league.csv").read_text().splitlines())}
    assert set(rows) == {"it3", "random", "mcts:4,c=2"}
    assert float(rows["mcts:4,c=2"]["elo"]) == 0.0
    assert "mcts:4,c=2" in done.stdout
