"""The one metric schema (`azjax.run.metric_schema`): it knows every key a run logs, and
the status line, the plots, the sweep table and the docs read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import envs
from azjax.driver import status
from azjax.evaluation.evaluators import RandomOpponentEvaluator, make_evaluator
from azjax.run import metric_schema as ms
from azjax.run.directory import plots
from azjax.run.directory.run_dir import RunDir
from azjax.sweep.table import best_config, markdown_table, results_table

DOCS = Path(__file__).resolve().parent.parent / "docs" / "getting-started.md"


def test_every_key_of_a_real_run_is_in_the_schema(tiny_run):
    records = RunDir(tiny_run).metrics.read()
    keys = {k for r in records for k in r}
    assert {m.name for m in ms.LOSSES} <= keys
    assert [k for k in keys if not ms.is_known(k)] == []


def test_the_evaluators_report_keys_the_schema_knows():
    summaries = [*RandomOpponentEvaluator.summary_metrics,
                 *make_evaluator(envs.make("connect_four")).summary_metrics,
                 *make_evaluator(envs.make("tictactoe")).summary_metrics]
    assert all(k in ms.SCHEMA for k in summaries), summaries
    assert "net_move_accuracy_hard" in summaries


def test_built_keys_are_the_ones_runs_have_always_logged():
    assert ms.versus_key("gnugo:1") == "vs gnugo:1"
    assert ms.margin_key("gnugo:1") == "margin vs gnugo:1"
    assert ms.ground_truth_key(ms.SEARCH, "move_accuracy", "hard") == "search_move_accuracy_hard"
    with pytest.raises(ValueError, match="no player"):
        ms.ground_truth_key("nets", "optimal_share")
    margin, score = ms.metric("margin vs mcts:8"), ms.metric("vs mcts:8")
    assert (margin.unit, margin.label) == ("points", "margin vs mcts:8")
    assert (score.unit, score.better) == (ms.SHARE, ms.HIGHER)
    assert ms.metric("net_my_share").label == "net my share"  # a user's ground truth
    assert not ms.is_known("no_such_metric") and not ms.is_known("vs ")
    records = [{"vs a": 0.5, "margin vs a": 1.0}, {"vs b": 0.2}]
    assert ms.keys_of(records, ms.VERSUS) == ["vs a", "vs b"]
    assert ms.keys_of(records, ms.MARGIN) == ["margin vs a"]


def test_the_status_line_shows_the_schemas_labels():
    record = {"iteration": 7, "games": 100, "positions_per_s": 5.0, "loss": 1.0,
              "value_loss": 0.25, "policy_loss": 0.75, "policy_entropy": 1.5,
              "net_optimal_share": 0.5, "net_unbeatable": 1.0, "vs gnugo:1": 0.25,
              "margin vs gnugo:1": -3.0, "gate_score": 0.6, "promoted": 1.0,
              "best_iteration": 7, "wall_time": 2.0}
    line = status.format_progress(record)
    for part in ("it     7", f"{ms.LOSS.label} 1.000 (v 0.250 p 0.750)", "H 1.50",
                 f"{ms.SCHEMA['net_optimal_share'].label} 50.0%",
                 f"{ms.SCHEMA['net_unbeatable'].label} yes", "vs gnugo:1 25.0%",
                 "margin vs gnugo:1 -3.0", "gate 60.0% promoted (best it 7)"):
        assert part in line, (part, line)


def test_the_plots_show_the_schemas_labels(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    figures = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *args, **kwargs: figures.append(fig))
    records = [{"iteration": i, "games": 10 * i, "loss": 1.0, "value_loss": 0.5,
                "policy_loss": 0.5, "policy_entropy": 1.0, "net_move_accuracy": 0.5,
                "vs gnugo:1": 0.1, "margin vs gnugo:1": -2.0} for i in (1, 2)]
    plots.plot_run(records, tmp_path / "plot.png")
    axes = figures[0].axes
    legends = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in axes
               if ax.get_legend()]
    assert legends == [[m.label for m in ms.LOSSES],
                       [ms.SCHEMA["net_move_accuracy"].label, "vs gnugo:1"],
                       ["margin vs gnugo:1"]]
    assert axes[0].get_xlabel() == ms.GAMES.label
    assert axes[1].get_title() == f"{ms.POLICY_ENTROPY.label} (nats)"


def test_the_best_configuration_goes_the_metrics_way():
    rows = [{"config": c, "x": x, "seed": str(s), "reached_perfect": str(r),
             "games_to_perfect": str(g), "net_optimal_share": str(share)}
            for c, x, s, r, g, share in [("a", "1", 0, 1, 50, 1.0), ("a", "1", 1, 1, 70, 1.0),
                                         ("b", "2", 0, 1, 20, 0.9), ("b", "2", 1, 0, 30, 0.9),
                                         ("c", "3", 0, 1, 90, 0.95), ("c", "3", 1, 1, 80, 0.95)]]
    table = results_table(rows, ["x"], ["games_to_perfect", "net_optimal_share"])
    # b is fastest on paper, but one of its seeds never got there: a is the best time.
    assert best_config(table, "games_to_perfect")["config"] == "a"
    assert best_config(table, "net_optimal_share")["config"] == "a"
    assert best_config(table, "no_such_column") is None
    assert ms.best([3.0, 1.0, 2.0], "loss") == 1.0
    assert ms.best([3.0, 1.0, 2.0], "gate_score") == 3.0
    with pytest.raises(ValueError, match="no better direction"):
        ms.best([1.0], "draw")
    # Shares (by the schema's unit) in percent with their interval over seeds: both seeds
    # at 100%, the exact one for 2 of 2 (0.025^(1/2) = 15.81%); two equal seeds inside
    # (0, 1) leave no spread to estimate one from. A loss as it is, with its t-interval.
    text = markdown_table(table, ["x"], ["net_optimal_share"])
    assert "| 1 | 2 | 2/2 | 100.00% [15.81, 100.00] |" in text
    assert "| 2 | 2 | 1/2 | 90.00% |" in text
    loss_rows = [{**r, "loss": "0.5"} for r in rows]
    assert "| 0.5 ± 0 |" in markdown_table(results_table(loss_rows, ["x"], ["loss"]),
                                           ["x"], ["loss"])


def test_the_docs_table_is_the_schema():
    text = DOCS.read_text()
    found = re.search(r"<!-- metric-schema: begin -->\n(.*?)\n<!-- metric-schema: end -->",
                      text, re.DOTALL)
    assert found, f"{DOCS} lost its metric-schema markers"
    assert found.group(1) == ms.markdown_table(), (
        "docs/getting-started.md's table of metrics differs from azjax.run.metric_schema: "
        "paste the output of `python -c 'from azjax.run import metric_schema as m; "
        "print(m.markdown_table())'` between its markers")
