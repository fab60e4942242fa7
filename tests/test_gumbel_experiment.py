"""benchmarks/gumbel_few_simulations.py: its table (means over seeds with t-intervals,
each row's own budget, the paper's claim per row), its seed-level comparisons, PUCT's
tuning choice, its budget (every experiment the same iterations, no wall clock), its
one-line errors, and (slow) its --quick mode end to end."""

from __future__ import annotations

import csv
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gumbel_few_simulations.py"
_spec = importlib.util.spec_from_file_location("gumbel_few_simulations", SCRIPT)
gfs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gfs)


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def row(policy: str, n: int, seed: int, share: float) -> dict[str, str]:
    """A row of evaluation.csv with every metric at `share`."""
    out = {"policy": policy, "simulations": str(n), "seed": str(seed),
           "eval_simulations": "200", "eval_positions": "1000", "iterations": "80",
           "games": "6000", "positions": "81920"}
    out.update({m: str(share) for m in gfs.metric_columns(200)})
    return out


def test_the_paper_claim_beside_each_row():
    assert gfs.paper_claim("puct", 2) == gfs.paper_claim("puct", 16)
    assert "fails" in gfs.paper_claim("puct", 16)
    assert "fails" not in gfs.paper_claim("puct", 32)
    assert "fails" not in gfs.paper_claim("gumbel", 2)
    assert "fails" not in gfs.paper_claim("puct", 200)
    assert gfs.paper_claim("puct", 8) == gfs.paper_claim("gumbel", 8) == (
        "not trained in the paper")


def test_summary_is_the_mean_over_seeds_with_a_clipped_t_interval():
    rows = [row("gumbel", 4, s, v) for s, v in enumerate((0.5, 0.6, 0.9))]
    rows += [row("puct", 4, s, 1.0) for s in range(3)]
    rows += [row("puct", 2, s, 0.0) for s in range(3)]
    table = gfs.summarise(rows, ["net_optimal"])
    # PUCT before Gumbel, fewer simulations first
    assert [(r["policy"], r["simulations"]) for r in table] == [
        ("puct", 2), ("puct", 4), ("gumbel", 4)]
    low_row, high_row, mixed = table
    edge = 0.025 ** (1 / 3)  # three seeds at a bound: the exact interval for 3 of 3
    assert (low_row["net_optimal_mean"], low_row["net_optimal_low"],
            low_row["net_optimal_high"]) == pytest.approx((0.0, 0.0, 1 - edge))
    assert (high_row["net_optimal_mean"], high_row["net_optimal_low"],
            high_row["net_optimal_high"]) == pytest.approx((1.0, edge, 1.0))
    half = 4.3027 * statistics.stdev([0.5, 0.6, 0.9]) / 3 ** 0.5
    assert (mixed["net_optimal_mean"], mixed["net_optimal_low"],
            mixed["net_optimal_high"]) == pytest.approx((2 / 3, 2 / 3 - half, 1.0), abs=1e-4)
    assert mixed["net_optimal_seeds"] == [0.5, 0.6, 0.9]
    assert mixed["seeds"] == 3 and mixed["paper"] == gfs.paper_claim("gumbel", 4)
    assert (mixed["iterations"], mixed["positions"]) == ("80", "81,920")


def test_a_row_whose_seeds_differ_in_budget_says_so():
    rows = [row("puct", 2, s, 0.4) for s in range(2)]
    rows[1].update(iterations="96", positions="98304")
    (only,) = gfs.summarise(rows, ["net_optimal"])
    assert (only["iterations"], only["positions"]) == ("80-96", "81,920-98,304")
    assert "| 80-96 | 81,920-98,304 |" in gfs.markdown([only], {"net_optimal": "x"})


def test_markdown_shows_shares_with_bracketed_intervals_and_the_claims():
    rows = [row(p, n, s, 0.25 + 0.1 * s) for p in gfs.POLICIES for n in (2, 32)
            for s in range(3)]
    headings = gfs.metric_columns(200)
    table = gfs.summarise(rows, list(headings))
    text = gfs.markdown(table, headings)
    lines = text.splitlines()
    assert len(lines) == 2 + 4
    assert "PUCT-200: optimal" in lines[0] and "Gumbel-200: result kept" in lines[0]
    assert "| 3 | 80 | 81,920 | 6,000 | 35.0% [10.2, 59.8] |" in lines[2]
    assert "±" not in text
    assert lines[2].endswith(f"| {gfs.paper_claim('puct', 2)} |")
    assert lines[-1].endswith(f"| {gfs.paper_claim('gumbel', 32)} |")
    per_seed = gfs.seeds_markdown(table, "net_optimal").splitlines()
    assert per_seed[2] == "| PUCT | 2 | 25.0% | 35.0% | 45.0% |"


def test_gumbel_is_compared_with_puct_over_seeds_not_pooled_games():
    rows = [row("puct", 2, s, v) for s, v in enumerate((0.36, 0.40, 0.38))]
    rows += [row("gumbel", 2, s, v) for s, v in enumerate((0.55, 0.50, 0.58, 0.53, 0.54))]
    rows += [row("gumbel", 8, s, 0.5) for s in range(3)]  # no PUCT at 8: no comparison
    (only,) = gfs.comparisons(gfs.summarise(rows, ["net_optimal"]), ["net_optimal"])
    welch = stats.ttest_ind([0.55, 0.50, 0.58, 0.53, 0.54], [0.36, 0.40, 0.38],
                            equal_var=False)
    assert only["simulations"] == 2 and only["difference"] == pytest.approx(0.54 - 0.38)
    assert only["p"] == pytest.approx(welch.pvalue)
    assert only["low"] < only["difference"] < only["high"]
    text = gfs.comparisons_markdown([only], {"net_optimal": "network alone: optimal"})
    assert "| 2 | network alone: optimal | +16.0 |" in text


def test_puct_tuning_combines_the_changes_that_won_and_keeps_the_recipe_on_a_tie():
    scores = {label: 0.40 for label in gfs.TUNING}
    assert gfs.combined_candidate(scores) is None
    assert gfs.best_candidate(scores) == "recipe"
    scores.update({"alpha=1.4": 0.45, "c_puct=0.75": 0.43, "c_puct=2.5": 0.44})
    label, changes = gfs.combined_candidate(scores)
    # the better of the two c_puct values, with alpha
    assert label == "alpha=1.4+c_puct=2.5"
    assert changes == {"search.dirichlet_alpha": 1.4, "search.c_puct": 2.5}
    scores[label] = 0.42
    assert gfs.best_candidate(scores) == "alpha=1.4"
    scores = {label: 0.40 for label in gfs.TUNING} | {"c_puct=0.75": 0.43, "c_puct=2.5": 0.41}
    assert gfs.combined_candidate(scores) is None  # one setting: nothing to combine


def test_seeds_per_simulation_count():
    assert gfs.parse_seeds(3, "2=5,32=5,200=2", (2, 16, 32, 200)) == {
        2: 5, 16: 3, 32: 5, 200: 2}
    assert gfs.parse_seeds(2, "", (2, 4)) == {2: 2, 4: 2}
    assert gfs.parse_seeds(3, "8=5", (2,)) == {2: 3}  # a count not trained: ignored
    for bad in ("2", "2=0", "x=3"):
        with pytest.raises(ValueError, match="--seeds-at takes N=SEEDS"):
            gfs.parse_seeds(3, bad, (2,))


def test_every_experiment_gets_the_same_iterations_and_no_wall_clock():
    config = gfs.base_config(80, ["num_blocks=2"], quick=False)
    assert config.run.iterations == 80 and config.run.max_minutes == 0
    assert config.run.eval_search_every == 0 and not config.run.stop_when_perfect
    assert config.program.network.num_blocks == 2
    assert config.program.selfplay.num_games == gfs.SMALLER["selfplay.num_games"]
    with pytest.raises(ValueError, match="bad --set 'num_blocks'"):
        gfs.base_config(80, ["num_blocks"], quick=False)


@pytest.mark.parametrize("args, says", [
    (["--simulations", "2,0"], "--simulations must be distinct counts >= 1"),
    (["--simulations", "2,2"], "--simulations must be distinct counts >= 1"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--seeds-at", "2=x"], "--seeds-at takes N=SEEDS"),
    (["--report-only", "--out", "{tmp}/none"], "holds no training"),
])
def test_bad_options_get_one_line(args, says, tmp_path, capsys):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert gfs.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0]


@pytest.mark.slow
def test_quick_mode_trains_evaluates_and_reports_every_configuration(tmp_path):
    out = tmp_path / "quick"
    command = [sys.executable, str(SCRIPT), "--quick", "--out", str(out)]
    first = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    rows = read_csv(out / "evaluation.csv")
    configs = {(r["policy"], r["simulations"]) for r in rows}
    assert configs == {(p, n) for p in gfs.POLICIES for n in ("2", "4")}
    assert sorted(r["seed"] for r in rows) == ["0", "0", "0", "0", "1", "1", "1", "1"]
    # the same training compute for every experiment: iterations and positions
    assert {(r["iterations"], r["positions"]) for r in rows} == {
        (rows[0]["iterations"], rows[0]["positions"])}
    assert rows[0]["iterations"] == "2"
    for r in rows:
        for metric in gfs.metric_columns(4):
            assert 0.0 <= float(r[metric]) <= 1.0
    report = (out / "gumbel_few_simulations.md").read_text()
    assert report.count("\n| PUCT | 2 |") == 2 and report.count("\n| Gumbel | 4 |") == 2
    # PUCT was tuned first, every candidate over the seeds, and trained with the winner
    tuned = {r["candidate"]: r for r in read_csv(out / "tune.csv")}
    assert set(gfs.TUNING) <= set(tuned) and "PUCT's tuning" in report
    chosen = [line for line in first.stdout.splitlines() if line.startswith("tuned PUCT: ")]
    assert len(chosen) == 1
    winner = json.loads(tuned[chosen[0].split()[2]]["settings"])
    config = json.loads((gfs.train_dir(out, "puct", 2, 0) / "config.json").read_text())
    for path, value in winner.items():
        section, name = path.split(".")
        assert config["program"][section][name] == value
    assert (out / "gumbel_few_simulations.png").stat().st_size > 10_000
    assert (out / "gumbel_few_simulations_curves.png").stat().st_size > 10_000
    # a rerun trains and evaluates nothing again, and reports the same table
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "evaluated " not in again.stdout and "0 groups to run" in again.stdout
    assert (out / "gumbel_few_simulations.md").read_text() == report
