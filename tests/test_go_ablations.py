"""benchmarks/go_ablations.py without training: its table (means over seeds, final arena
results with the seed as the unit, variants compared over seeds) and its resume/skip logic, on hand-written run directories
whose metrics.jsonl records carry the keys the driver writes (a 5x5 Go run's)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from scipy import stats

from azjax.evaluation.stats import wilson_interval

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "go_ablations.py"
_spec = importlib.util.spec_from_file_location("go_ablations", SCRIPT)
abl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(abl)


def record(iteration: int, seconds: float, score: float | None = None,
           margin: float | None = None) -> dict:
    """A metrics.jsonl record as the driver writes it (an evaluation one with a score)."""
    r = {"iteration": iteration, "draw": 0.05, "first_player_win": 0.3, "games_finished": 20.0,
         "loss": 3.47, "mean_game_length": 36.1, "policy_entropy": 3.21,
         "policy_loss": 3.19, "replay_sampleable": 3351.0, "search_value": -0.02,
         "second_player_win": 0.65, "value_loss": 0.25, "games": 10 * iteration,
         "positions": 1024 * iteration, "positions_per_s": 1083.3}
    if score is not None:
        r.update({"net_vs_random": 0.03, "perfect": 0.0, "vs gnugo:1": score,
                  "margin vs gnugo:1": margin})
    r["wall_time"] = seconds
    return r


def write_run(path: Path, records: list[dict], eval_games: int = 16,
              iterations: int = 100000) -> None:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(
        {"program": {"game": "go"}, "run": {"iterations": iterations, "max_minutes": 20.0,
                                            "eval_games": eval_games,
                                            "eval_opponents": ["gnugo:1"]}, "seed": 0}))
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def write_arena(out: Path, variant: str, seed: int, opponent: str, wins: int, draws: int,
                losses: int, margin: float, iteration: int) -> None:
    games = wins + draws + losses
    result = {"game": "go", "a": "alphazero", "b": opponent, "games": games, "wins": wins,
              "draws": draws, "losses": losses, "score": (wins + draws / 2) / games,
              "margin": margin, "trained_iteration": iteration}
    abl.arena_file(out, variant, seed, opponent).write_text(json.dumps(result))


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """Two seeds of 'all' (seed 1 has one evaluation more), one of 'none', and final
    arenas against gnugo:1 (seed 1 of 'all' against a stale iteration: not counted)."""
    write_run(abl.run_dir(tmp_path, "all", 0), [
        record(1, 30.0), record(20, 300.0, 0.25, -10.0), record(40, 600.0, 0.5, -2.0),
        record(41, 1201.0, 0.75, 4.0)])
    write_run(abl.run_dir(tmp_path, "all", 1), [
        record(20, 290.0, 0.5, -6.0), record(40, 610.0, 0.75, 2.0),
        record(60, 900.0, 0.75, 3.0), record(62, 1203.0, 1.0, 8.0)])
    write_run(abl.run_dir(tmp_path, "none", 0), [record(20, 400.0, 0.125, -20.5),
                                                 record(30, 1205.0, 0.375, -7.5)], 8)
    write_arena(tmp_path, "all", 0, "gnugo:1", 7, 1, 2, 5.0, 41)
    write_arena(tmp_path, "all", 1, "gnugo:1", 9, 0, 1, 9.0, 60)  # stale: trained to 62
    write_arena(tmp_path, "none", 0, "gnugo:1", 2, 0, 8, -12.0, 30)
    return tmp_path


def test_rows_average_the_kth_evaluation_and_every_seeds_last(out: Path):
    table = abl.summarize(out, {"all": [], "none": ["--x"]}, [0, 1], ["gnugo:1"])
    rows = table["all"]["evaluations"]
    assert [r["seeds"] for r in rows] == [2, 2, 1, 2]
    assert [r["games"] for r in rows] == [32, 32, 16, 32]
    assert [r["end"] for r in rows] == [False, False, False, True]
    assert rows[0]["score"] == pytest.approx(0.375) and rows[0]["margin"] == pytest.approx(-8)
    assert rows[0]["minutes"] == pytest.approx(295 / 60)
    assert rows[1]["score"] == pytest.approx(0.625) and rows[1]["margin"] == pytest.approx(0)
    assert rows[2]["score"] == pytest.approx(0.75) and rows[2]["iteration"] == 60
    assert rows[3]["score"] == pytest.approx(0.875) and rows[3]["margin"] == pytest.approx(6)
    assert rows[3]["minutes"] == pytest.approx(1202 / 60) and rows[3]["iteration"] == 51.5
    none = table["none"]["evaluations"]
    assert [(r["games"], r["score"], r["margin"]) for r in none] == [
        (8, 0.125, -20.5), (8, 0.375, -7.5)]
    assert table["none"]["flags"] == ["--x"]


def test_final_results_take_the_seed_as_the_unit(out: Path):
    table = abl.summarize(out, {"all": [], "none": []}, [0, 1], ["gnugo:1", "gnugo:10"])
    final = table["all"]["final"]
    assert list(final) == ["gnugo:1"]  # no gnugo:10 match; seed 1's is stale
    r = final["gnugo:1"]
    assert (r["seeds"], r["games"], r["wins"], r["draws"], r["losses"]) == (1, 10, 7, 1, 2)
    assert r["score"] == pytest.approx(0.75) and r["margin"] == pytest.approx(5.0)
    assert math.isnan(r["score_low"])  # one seed: no interval over seeds
    # Two seeds, 3 of 4 and 5 of 6 won: the mean of the seeds' scores (not 8 of 10 games
    # pooled), its t-interval over seeds with 1 degree of freedom, each seed's Wilson.
    pooled = abl.pool([{"games": 4, "wins": 3, "draws": 0, "losses": 1, "margin": 2.0},
                       {"games": 6, "wins": 5, "draws": 0, "losses": 1, "margin": 7.0}])
    mean = (0.75 + 5 / 6) / 2
    half = 12.7062 * abs(0.75 - 5 / 6) / 2
    assert pooled["score"] == pytest.approx(mean) and pooled["margin"] == pytest.approx(5.0)
    assert pooled["score_low"] == pytest.approx(mean - half, abs=1e-4)
    assert pooled["score_high"] == 1.0  # clipped
    assert pooled["per_seed"] == pytest.approx([0.75, 5 / 6])
    assert pooled["per_seed_low"][0] == pytest.approx(wilson_interval(0.75, 4)[0])
    assert abl.pool([]) is None


def test_variants_are_compared_over_seeds_with_welch(out: Path):
    def result(wins: int) -> dict:
        return {"games": 100, "wins": wins, "draws": 0, "losses": 100 - wins, "margin": 0.0}

    table = {"all": {"final": {"gnugo:1": abl.pool([result(57), result(64)])}},
             "pcr": {"final": {"gnugo:1": abl.pool([result(46), result(38)])}}}
    (row,) = abl.compare(table, "all")
    welch = stats.ttest_ind([0.46, 0.38], [0.57, 0.64], equal_var=False)
    assert row["difference"] == pytest.approx(0.42 - 0.605)
    assert row["p"] == pytest.approx(welch.pvalue) and row["p"] > 0.05
    assert row["low"] < row["difference"] < row["high"] and row["seeds"] == "2 / 2"
    text = abl.markdown(table | {n: {**v, "evaluations": [], "runs": {}}
                                 for n, v in table.items()}, "t")
    assert "| pcr | gnugo:1 | 2 / 2 | -18.5 |" in text
    assert "46.0% (36.6%-55.7%); 38.0%" in text


def test_a_run_is_complete_when_its_metrics_reach_the_budget(tmp_path: Path):
    path = tmp_path / "run"
    assert abl.needs_training(path, 20)  # no run yet
    write_run(path, [record(20, 300.0, 0.5, 1.0), record(40, 1199.0, 0.5, 1.0)])
    assert abl.needs_training(path, 20) and not abl.needs_training(path, 19.9)
    with (path / "metrics.jsonl").open("a") as f:
        f.write(json.dumps(record(41, 1200.5, 0.5, 1.0)) + "\n{broken")  # a torn last line
    assert not abl.needs_training(path, 20) and abl.needs_training(path, 21)
    short = tmp_path / "short"  # its iteration budget done before the minutes
    write_run(short, [record(10, 100.0, 0.5, 1.0)], iterations=10)
    assert not abl.needs_training(short, 20)


def test_a_saved_arena_counts_for_the_iteration_and_games_it_played(out: Path):
    file = abl.arena_file(out, "all", 0, "gnugo:1")
    assert abl.arena_done(file, 41, 10)["wins"] == 7
    assert abl.arena_done(file, 41) is not None
    assert abl.arena_done(file, 42, 10) is None and abl.arena_done(file, 41, 12) is None
    assert abl.arena_done(out / "missing.json", 41) is None


def test_training_skips_complete_runs_and_resumes_the_others(out: Path, monkeypatch):
    """Which subprocesses `train_all` starts: none for 'all' seed 0 (trained and played),
    the arena again for seed 1 (its match is stale); for 'more', training resumes seed 0
    (short of the budget) and starts seed 1 (no run), each followed by its arena."""
    write_run(abl.run_dir(out, "more", 0), [record(20, 600.0, 0.5, 1.0)])
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        if "--help" in command:
            return SimpleNamespace(returncode=0, stdout="--game-options --seed --a-flag")
        if "--run-dir" in command:  # training: a record at the budget
            path = Path(command[command.index("--run-dir") + 1])
            path.mkdir(parents=True, exist_ok=True)
            with (path / "metrics.jsonl").open("a") as f:
                f.write(json.dumps(record(50, 1200.0, 0.5, 1.0)) + "\n")
        if "azjax.arena" in command:
            Path(command[command.index("--json") + 1]).write_text(json.dumps(
                {"games": 10, "wins": 1, "draws": 0, "losses": 9, "margin": -3.0}))
        return SimpleNamespace(returncode=0)

    monkeypatch.setattr(abl.subprocess, "run", fake_run)
    args, variants, extra = abl.parse(["--recipe", "go9x9", "--out", str(out), "--minutes",
                                       "20", "--seeds", "0", "1", "--final-games", "10",
                                       "--final-opponents", "gnugo:1", "--define",
                                       "more=--a-flag 3", "--variants", "all", "more",
                                       "--eval-games", "4"])
    abl.train_all(args, variants, extra)
    trained = [c for c in calls if "--run-dir" in c]
    arenas = [c for c in calls if "azjax.arena" in c]
    assert len(trained) == 2
    for seed, command in enumerate(trained):
        assert command[2:] == ["--a-flag", "3", "--eval-games", "4", "--run-dir",
                               str(abl.run_dir(out, "more", seed)), "--seed", str(seed),
                               "--max-minutes", "20"]
    assert [c[3] for c in arenas] == [f"alphazero:{abl.run_dir(out, 'all', 1)}",
                                      f"alphazero:{abl.run_dir(out, 'more', 0)}",
                                      f"alphazero:{abl.run_dir(out, 'more', 1)}"]
    assert arenas[0][4:] == ["gnugo:1", "--games", "10", "--openings", "2", "--seed", "1",
                             "--json", str(abl.arena_file(out, "all", 1, "gnugo:1"))]
    saved = json.loads(abl.arena_file(out, "all", 1, "gnugo:1").read_text())
    assert saved["trained_iteration"] == 62  # tagged with the iteration it played
    calls.clear()
    abl.train_all(args, variants, extra)  # everything done: only --help runs
    assert len(calls) == 1 and "--help" in calls[0]
    with pytest.raises(abl.Failure, match="variant 'bad': .* has no option --b-flag"):
        abl.train_all(*abl.parse(["--recipe", "go9x9", "--out", str(out), "--define",
                                  "bad=--b-flag", "--variants", "bad"]))


@pytest.mark.parametrize("name", sorted(abl.VARIANTS))
def test_each_variant_sets_the_levers_its_name_says(name: str):
    """A variant's flags, parsed as experiments/go7x7.py parses them over the recipe, turn
    off the heads its name says and turn playout cap randomisation on only for `pcr*`."""
    import tyro

    from azjax.commands.train import Experiment
    from azjax.run.recipes import recipe

    base = recipe("go7x7", "cpu")
    assert base.program.selfplay.full_search_prob == 1.0  # the recipe searches in full
    program = tyro.cli(Experiment, default=Experiment(config=base),
                       args=abl.VARIANTS[name]).config.program
    assert program.network.ownership_head == (name not in ("none", "no-ownership",
                                                           "pcr-no-ownership"))
    assert program.network.score_head == (name not in ("none", "no-score", "pcr-no-score"))
    assert program.selfplay.full_search_prob == (0.25 if name.startswith("pcr") else 1.0)
    assert program.search == base.program.search and program.learner == base.program.learner


def test_default_variants_and_defined_ones():
    _, variants, _ = abl.parse(["--define", "eye=--search.skip-futile"])
    assert list(variants) == ["all", "no-ownership", "no-score", "none", "pcr", "eye"]
    assert variants["eye"] == ["--search.skip-futile"]
    _, variants, _ = abl.parse(["--variants", "pcr-no-score", "all"])
    assert variants == {"pcr-no-score": ["--selfplay.full-search-prob", "0.25",
                                         "--network.no-score-head"], "all": []}


def test_report_only_prints_the_table(out: Path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--report-only", "--out", str(out),
                             "--seeds", "0", "1", "--variants", "all", "none", "pcr",
                             "--final-opponents", "gnugo:1"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "| all | 4.9 | 20 | 2 | 32 | 37.5% | -8.0 |" in lines
    assert "| all | 20.0 (end) | 52 | 2 | 32 | 87.5% | +6.0 |" in lines
    assert "| none | 20.1 (end) | 30 | 1 | 8 | 37.5% | -7.5 |" in lines
    assert "| pcr | no run | | | | | |" in lines
    assert "| all | gnugo:1 | 1 | 10 | 75.0% | 75.0% (44.2%-91.9%) | 7/1/2 | +5.0 |" in lines
    assert "| none | gnugo:1 | 1 | 10 | 20.0% | 20.0% (5.7%-51.0%) | 2/0/8 | -12.0 |" in lines
    assert (out / "ablations.md").read_text() == result.stdout.lstrip("\n")
    raw = json.loads((out / "ablations.json").read_text())
    assert raw["variants"]["all"]["final"]["gnugo:1"]["wins"] == 7
    assert raw["variants"]["none"]["runs"]["0"]["iteration"] == 30


def test_failures_are_one_line(tmp_path: Path, capsys):
    """In this process, through the script's `main` (its exit status: the return value;
    the script as a process: test_report_only_prints_the_table)."""
    assert abl.main(["--report-only", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: no run of all, no-ownership, no-score, none, pcr in {tmp_path}"]


# --------------------------------------------------------------------------------------
# benchmarks/go_curve.py: the curve of one run against both GNU Go levels
# --------------------------------------------------------------------------------------

CURVE = ROOT / "benchmarks" / "go_curve.py"
# The curve's command line runs as a process once (the report test below); its refusals
# go through its `main` in this process, whose return value is the exit status.


def arena_result(wins: int, draws: int, losses: int, margin: float) -> dict:
    """An arena --json result (`MatchResult.as_dict`'s keys that the curve reads)."""
    games = wins + draws + losses
    return {"a": "alphazero:run", "b": "gnugo", "games": games, "wins": wins,
            "draws": draws, "losses": losses, "score": (wins + draws / 2) / games,
            "margin": margin}


def test_curve_report_reads_kept_checkpoints_and_their_arenas(tmp_path):
    """`--report-only`: one row per kept checkpoint, its minutes and games from the
    metrics record at (or before) that iteration, each level's score with its Wilson
    interval, W/D/L and margin; a level not played there is '-'."""
    sys.path.insert(0, str(CURVE.parent))
    import go_curve

    run = tmp_path / "run"
    write_run(run, [record(50, 300.0), record(100, 620.0), record(150, 900.0)])
    for step in (100, 150):
        (run / "checkpoints" / str(step)).mkdir(parents=True)
    played = {("gnugo:1", 100): arena_result(3, 2, 5, -6.5),
              ("gnugo:1", 150): arena_result(8, 0, 2, 4.25),
              ("gnugo:10", 150): arena_result(1, 1, 8, -12.0)}
    for (opponent, step), result in played.items():
        path = go_curve.result_path(run, opponent, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result))
    out = subprocess.run([sys.executable, str(CURVE), "--run-dir", str(run), "--report-only"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| 1")]
    low, high = wilson_interval(0.4, 10)
    assert rows == [
        f"| 10.3 | 100 | 1,000 | 40.0% ({100 * low:.1f}%-{100 * high:.1f}%) of 10 | 3/2/5 "
        "| -6.5 | - | - | - |",
        "| 15.0 | 150 | 1,500 | 80.0% (49.0%-94.3%) of 10 | 8/0/2 | +4.2 "
        "| 15.0% (3.5%-45.9%) of 10 | 1/1/8 | -12.0 |",
    ]
    saved = json.loads((run / "curve.json").read_text())
    assert [r["iteration"] for r in saved] == [100, 150]
    assert (run / "curve.md").read_text().strip() == "\n".join(
        line for line in out.stdout.splitlines() if line.startswith("|"))


def test_curve_refuses_a_directory_without_a_run(tmp_path, capsys):
    sys.path.insert(0, str(CURVE.parent))
    import go_curve

    assert go_curve.main(["--run-dir", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {tmp_path / 'none'} holds no training run (no metrics.jsonl)")


def test_curve_plays_only_the_steps_asked_for(tmp_path, capsys):
    sys.path.insert(0, str(CURVE.parent))
    import go_curve

    run = tmp_path / "run"
    write_run(run, [record(100, 600.0), record(200, 1200.0)])
    for step in (100, 200):
        (run / "checkpoints" / str(step)).mkdir(parents=True)
        path = go_curve.result_path(run, "gnugo:1", step)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(arena_result(1, 0, 1, 0.5)))
    command = ["--run-dir", str(run), "--report-only", "--opponents", "gnugo:1"]
    code = go_curve.main(command + ["--steps", "200"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert [line.split(" | ")[1] for line in out.out.splitlines()
            if line.startswith("| 1") or line.startswith("| 2")] == ["200"]
    assert go_curve.main(command + ["--steps", "150"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {run} kept no checkpoint of iteration 150 (kept: 100, 200)")
