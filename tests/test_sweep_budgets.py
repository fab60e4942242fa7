"""The budget a sweep's tables measure its runs at: a run trained past the sweep's
iterations counts at them, and a configuration whose runs stand for unequal budgets says
so. The runs are written by hand (a config, metrics records and checkpoint folders), so
nothing trains."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tiny import CONFIG

import azjax.sweep.sweep as sw
from azjax.driver.driver import TrainResult
from azjax.driver.status import past_budget, records_at, summarize
from azjax.run import metric_schema as ms
from azjax.run.directory.run_dir import RunDir
from azjax.sweep.grid import make_grid, parse_params

PARAMS = parse_params(["learning_rate=0.001,0.003"])  # read by every experiment
SEEDS = (0, 1)
SHARE = "net_optimal_share"


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def record(iteration: int, share: float, minutes: float = 0.0, perfect: bool = False
           ) -> dict:
    """A metrics record of iteration `iteration`, evaluated (net_optimal_share `share`),
    `minutes` into training."""
    return {ms.ITERATION.name: iteration, ms.GAMES.name: 10 * iteration,
            ms.POSITIONS.name: 100 * iteration,
            ms.WALL_TIME.name: 60.0 * minutes or float(iteration),
            ms.PERFECT.name: float(perfect), SHARE: share}


def fake_sweep(out: Path, base, records_of) -> dict[tuple[str, int], Path]:
    """A sweep of `base` x PARAMS x SEEDS in `out` whose runs are written by hand:
    `records_of(experiment)` gives each run's records; each has a checkpoint folder at
    its last iteration. Returns the run directories by (label, seed)."""
    sw.check_out_dir(out, base, PARAMS)
    dirs = {}
    for e in make_grid(base, PARAMS, SEEDS):
        run = RunDir.open(out / sw.RUNS_DIR / e.run_name)
        run.path.mkdir(parents=True)
        e.config.save(run.config_file)
        records = records_of(e)
        run.metrics.file.write_text("".join(json.dumps(r) + "\n" for r in records))
        run.checkpoints.step_dir(records[-1][ms.ITERATION.name]).mkdir(parents=True)
        dirs[e.key] = run.path
    return dirs


@pytest.fixture
def titles(monkeypatch) -> list[str]:
    """The titles of the sweep plots drawn (none is drawn)."""
    drawn = []
    monkeypatch.setattr(sw, "plot_sweep", lambda *args, title, **kwargs: drawn.append(title))
    return drawn


def test_a_run_trained_past_the_sweeps_iterations_counts_at_them(tmp_path, titles):
    base = CONFIG.replace(iterations=2, eval_every=1)
    resumed = ("learner.learning_rate=0.003", 1)  # later trained on to iteration 4

    def records_of(e):
        more = [record(3, 0.9), record(4, 0.95)] if e.key == resumed else []
        return [record(1, 0.3), record(2, 0.5 + 0.01 * e.seed), *more]

    dirs = fake_sweep(tmp_path, base, records_of)
    result = sw.merge(tmp_path, write=None)
    rows = {(r["config"], int(r["seed"])): r for r in read_csv(tmp_path / sw.SEEDS_FILE)}
    row = rows[resumed]
    # Its figures are those of iteration 2, the sweep's budget, not of its iteration 4.
    assert (row["iterations"], row["games"], row["positions"]) == ("2", "20", "200")
    assert float(row[SHARE]) == 0.51 and row["budget"] == "2"
    assert row["stopped"] == "iterations"
    table = {r["config"]: r for r in read_csv(tmp_path / sw.RESULTS_FILE)}
    assert float(table[resumed[0]][f"{SHARE}_mean"]) == pytest.approx(0.505)
    assert {r["budget"] for r in table.values()} == {"2"}
    assert "budget" not in result.markdown.splitlines()[0]  # one budget: the command's
    assert "unequal" not in result.markdown and "unequal" not in titles[0]
    # Judged at the sweep's budget, the run is over there; asked for more, it is not yet,
    # and at 3 it counts at iteration 3.
    assert sw.run_finished(dirs[resumed], base.run)
    assert not sw.run_finished(dirs[resumed], base.run.replace(iterations=5))
    at_three = sw.run_row(dirs[resumed], ["learner.learning_rate"], True,
                          budget=base.run.replace(iterations=3))
    assert at_three["iterations"] == 3 and at_three[SHARE] == 0.9


def test_a_configuration_whose_runs_stand_for_unequal_budgets_says_so(tmp_path, titles):
    # At most 5 iterations or 1 minute, sooner at perfect play.
    base = CONFIG.replace(iterations=5, eval_every=1, max_minutes=1.0,
                          stop_when_perfect=True)

    def records_of(e):
        if e.config.program.learner.learning_rate == 0.001:
            if e.seed == 0:  # out of time after iteration 3
                return [record(i, 0.1 * i, minutes=0.4 * i) for i in (1, 2, 3)]
            return [record(i, 0.1 * i, minutes=0.1 * i) for i in range(1, 6)]
        # Perfect play at iteration 2 stops a run within the same budget.
        if e.seed == 0:
            return [record(1, 0.5, minutes=0.1), record(2, 1.0, minutes=0.2, perfect=True)]
        return [record(i, 0.1 * i, minutes=0.1 * i) for i in range(1, 6)]

    fake_sweep(tmp_path, base, records_of)
    result = sw.merge(tmp_path, write=None)
    rows = {(r["config"], r["seed"]): r for r in read_csv(tmp_path / sw.SEEDS_FILE)}
    slow = "learner.learning_rate=0.001"
    assert (rows[slow, "0"]["stopped"], rows[slow, "0"]["budget"]) == ("time", "3")
    assert (rows[slow, "1"]["stopped"], rows[slow, "1"]["budget"]) == ("iterations", "5")
    fast = "learner.learning_rate=0.003"
    assert (rows[fast, "0"]["stopped"], rows[fast, "0"]["budget"]) == ("perfect", "5")
    table = {r["config"]: r for r in read_csv(tmp_path / sw.RESULTS_FILE)}
    assert table[slow]["budget"] == "3-5" and table[fast]["budget"] == "5"
    lines = result.markdown.splitlines()
    assert lines[0].startswith("| learning_rate | seeds | budget | perfect |")
    assert any(line.startswith("| 0.001 | 2 | 3-5 |") for line in lines)
    assert lines[-1].startswith(f"note: 1 configuration ({slow}) pools runs of unequal "
                                "budgets")
    assert "1 configuration pooling unequal budgets" in titles[0]


def test_records_at_a_budget_and_the_lines_of_a_run_past_it():
    records = [record(i, 0.1 * i) for i in (1, 2, 3, 4)]
    assert [r["iteration"] for r in records_at(records, 2)] == [1, 2]
    assert records_at(records, 9) == records
    run = CONFIG.run.replace(iterations=2)
    assert past_budget(2, run) is None
    assert past_budget(4, run).startswith(
        "this run already trained 4 iterations, more than the 2 asked for")
    result = TrainResult(None, records, None)
    assert summarize(result, 2).startswith(
        "finished 4 iterations (more than the 2 asked for")
    assert summarize(result).startswith("finished 4 iterations; last evaluation")
    assert summarize(result, 4).startswith("finished 4 iterations;")
