"""benchmarks/gumbel_few_simulations.py: its table (means over seeds with bootstrap
intervals, the paper's claim per row), its budget (every experiment the same iterations,
no wall clock), its one-line errors, and (slow) its --quick mode end to end."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gumbel_few_simulations.py"
_spec = importlib.util.spec_from_file_location("gumbel_few_simulations", SCRIPT)
gfs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gfs)


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


def test_summary_is_the_mean_over_seeds_with_an_interval_inside_the_seeds_range():
    rows = [row("gumbel", 4, s, v) for s, v in enumerate((0.5, 0.6, 0.9))]
    rows += [row("puct", 4, s, 1.0) for s in range(3)]
    rows += [row("puct", 2, s, 0.0) for s in range(3)]
    table = gfs.summarise(rows, ["net_optimal"])
    # PUCT before Gumbel, fewer simulations first
    assert [(r["policy"], r["simulations"]) for r in table] == [
        ("puct", 2), ("puct", 4), ("gumbel", 4)]
    low_row, high_row, mixed = table
    assert (low_row["net_optimal_mean"], low_row["net_optimal_low"],
            low_row["net_optimal_high"]) == (0.0, 0.0, 0.0)  # all failures
    assert (high_row["net_optimal_mean"], high_row["net_optimal_low"],
            high_row["net_optimal_high"]) == (1.0, 1.0, 1.0)  # all successes
    assert mixed["net_optimal_mean"] == pytest.approx(2.0 / 3.0)
    assert 0.5 <= mixed["net_optimal_low"] < mixed["net_optimal_mean"]
    assert mixed["net_optimal_mean"] < mixed["net_optimal_high"] <= 0.9
    assert mixed["seeds"] == 3 and mixed["paper"] == gfs.paper_claim("gumbel", 4)


def test_markdown_shows_shares_with_bracketed_intervals_and_the_claims():
    rows = [row(p, n, s, 0.25 + 0.1 * s) for p in gfs.POLICIES for n in (2, 32)
            for s in range(3)]
    headings = gfs.metric_columns(200)
    text = gfs.markdown(gfs.summarise(rows, list(headings)), headings)
    lines = text.splitlines()
    assert len(lines) == 2 + 4
    assert "PUCT-200: optimal" in lines[0] and "Gumbel-200: result kept" in lines[0]
    assert "35.0% [25.0, 45.0]" in lines[2]
    assert "±" not in text
    assert lines[2].endswith(f"| {gfs.paper_claim('puct', 2)} |")
    assert lines[-1].endswith(f"| {gfs.paper_claim('gumbel', 32)} |")


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
    with open(out / "evaluation.csv", newline="") as f:
        rows = list(csv.DictReader(f))
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
    assert report.count("\n| PUCT |") == 2 and report.count("\n| Gumbel |") == 2
    assert (out / "gumbel_few_simulations.png").stat().st_size > 10_000
    assert (out / "gumbel_few_simulations_curves.png").stat().st_size > 10_000
    # a rerun trains and evaluates nothing again, and reports the same table
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "evaluated " not in again.stdout and "0 groups to run" in again.stdout
    assert (out / "gumbel_few_simulations.md").read_text() == report
