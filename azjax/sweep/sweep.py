"""Ablation sweeps: a grid of training settings x seeds, as few compiled programs as possible.

Every configuration of the grid (the product of the swept values) runs once per seed, and
every such experiment is a normal run with a run directory of its own,
`<out>/runs/<setting>=<value>/.../seed=<s>/`, that `Agent.load`, `python -m azjax.play`,
`azjax.league` and `azjax.export` open like any other. Experiments whose programs differ
only in traced settings (`azjax.core.fields`: c_puct, Dirichlet noise, the Gumbel scale,
`rollout_lambda` among values > 0, the learning rate), seeds and run options form one
*compile group* and train as ONE vmapped program (`azjax.driver.driver.train_group`); any other
setting (simulations, PUCT or Gumbel, batch and replay sizes, network, ...) makes a group
of its own.

A sweep resumes as its runs do: a finished run is left alone, a group with unfinished
runs resumes each from its newest checkpoint. `--shard I/N` runs a fixed, disjoint part
of the groups. `merge` reads every run directory present into `seeds.csv` (one row per
finished run), `results.csv` (per configuration, each metric over seeds as
`azjax.sweep.table` summarises it) and `sweep.png`.

A sweep that sweeps a setting that no experiment reads (c_puct where every experiment
searches with Gumbel: `azjax.core.search.POLICY_SETTINGS`), or whose configurations
differ only in settings they do not read, is refused before anything trains
(`azjax.sweep.grid.check_settings_read`). Each experiment's budget is its own
`iterations` (equal iterations: equal self-play positions and gradient steps); its
`max_minutes` is its compile group's wall clock, which the group's experiments share
(`clock_warning`). `merge` reads every run at its experiment's budget (a run trained
further counts with its record at that iteration), and a configuration whose runs still
stand for unequal budgets says so (`budget` in results.csv, a note under the table).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from azjax.driver.driver import train_group
from azjax.driver.status import changed_settings, finished, records_at
from azjax.evaluation.evaluators import make_evaluator
from azjax.run import metric_schema as ms
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.run.process.progress import format_duration
from azjax.sweep.grid import (
    Experiment,
    Group,
    Param,
    check_settings_read,
    config_label,
    format_value,
    group_experiments,
    make_grid,
    split_shards,
)
from azjax.sweep.plots import plot_sweep
from azjax.sweep.table import (
    BUDGET,
    REACHED,
    TIME_METRICS,
    best_config,
    markdown_table,
    param_columns,
    results_table,
    write_csv,
)

SWEEP_FILE = "sweep.json"
RUNS_DIR = "runs"
SEEDS_FILE = "seeds.csv"
RESULTS_FILE = "results.csv"
SWEEP_PLOT = "sweep.png"


# ----------------------------------------------------------------------------- names


# ------------------------------------------------------------------------------ grid


# ------------------------------------------------------------------------- runs on disk


def _open_run(run_dir: RunDir | Path) -> tuple[RunDir, TrainConfig] | None:
    """A run directory and its config; None where there is no run (no config.json)."""
    try:
        run = RunDir(run_dir)
        return run, run.load_config()
    except RunDirError:
        return None


def _read_run(run_dir: RunDir | Path, budget: RunConfig | None = None
              ) -> tuple[TrainConfig, list[dict[str, Any]], RunConfig] | None:
    """A finished run read at a budget (`_finished_at`; default: its own config's run
    options); None for a missing, cut-off or unfinished run."""
    opened = _open_run(run_dir)
    if opened is None:
        return None
    run, config = opened
    return _finished_at(run, config, budget or config.run)


def _finished_at(run: RunDir, config: TrainConfig, budget: RunConfig
                 ) -> tuple[TrainConfig, list[dict[str, Any]], RunConfig] | None:
    """A run read at a budget.

    Args:
      run: the run directory.
      config: its config.
      budget: the run options to judge and read it by, e.g. a sweep's experiment asked
        for more, or fewer, iterations than the run was trained for.

    Returns:
      Its config, its records up to `budget.iterations` (`records_at`: a run trained
      past the budget is read as it stood there) and the budget, where it is over at
      that budget (`finished`) with its newest state checkpointed; None for a cut-off or
      unfinished run.
    """
    records = run.metrics.read()
    if not records or not run.checkpoints.step_dir(records[-1]["iteration"]).is_dir():
        return None
    records = records_at(records, budget.iterations)
    if not records or not finished(budget, records, records[-1]["iteration"]):
        return None
    return config, records, budget


def run_finished(run_dir: RunDir | Path, budget: RunConfig | None = None) -> bool:
    """Whether the run in `run_dir` is over (iterations, time, perfect play) at a budget,
    with its newest state checkpointed; False for a missing or cut-off run. A run trained
    past the budget is over at it (`merge` then reads it at the budget).

    Args:
      run_dir: the run.
      budget: the run options to judge it by (default: its own config's), e.g. a
        sweep's experiment asked for more iterations than the run was trained for.

    Returns:
      Whether it is over.
    """
    return _read_run(run_dir, budget) is not None


def find_runs(root: Path) -> list[Path]:
    """The run directories (holding a config.json) below `root`, sorted. It does not look
    inside a run, where another process (a shard) may be writing a checkpoint."""
    if RunDir(root).config_file.is_file():
        return [root]
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    return [run for child in children for run in find_runs(child)]


def run_row(run_dir: Path, paths: Sequence[str], can_be_perfect: bool,
            name: str | None = None, budget: RunConfig | None = None) -> dict[str, Any]:
    """One run as a row of seeds.csv (`_row`), read at `budget` (default: its own
    config's run options) and named `name` (default: the run directory)."""
    run = RunDir(run_dir)
    config = run.load_config()
    return _row(config, run.metrics.read(), paths, can_be_perfect, name or str(run),
                budget or config.run)


def _row(config: TrainConfig, records: Sequence[dict[str, Any]], paths: Sequence[str],
         can_be_perfect: bool, name: str, budget: RunConfig) -> dict[str, Any]:
    """One run as a row, measured at a budget.

    Args:
      config: the run's config.
      records: its metrics records.
      paths: the swept settings.
      can_be_perfect: whether the game's evaluation can say 'perfect'.
      name: its run directory as the row names it.
      budget: the run options it is measured at: its records after `budget.iterations`
        are left out (a run trained past a sweep's budget counts at the budget).

    Returns:
      The swept settings, seed, the training done (iterations, games, positions), why
      it is over (`stopped`: 'iterations', 'perfect', 'time'; '' while it is not), the
      iterations its figures stand for (`BUDGET`), the first point of perfect play
      (censored at the end when never reached), the last evaluation and `run_dir`.
    """
    records = records_at(records, budget.iterations)
    last = records[-1]
    assignment = [(path, config.get(path)) for path in paths]
    row: dict[str, Any] = {"config": config_label(assignment)}
    row.update({path: format_value(value) for path, value in assignment})
    stopped = finished(budget, records, last[ms.ITERATION.name]) or ""
    row.update(seed=config.seed, iterations=last[ms.ITERATION.name],
               games=last[ms.GAMES.name], positions=last[ms.POSITIONS.name],
               stopped=stopped)
    evaluated = next((r for r in reversed(records) if ms.PERFECT.name in r), {})
    # Stopped by its iterations, or sooner at perfect play, a run had the budget asked
    # for ('at most N iterations, sooner at perfect play'); stopped by its minutes, or
    # last evaluated before its end, its figures stand for fewer iterations.
    measured = evaluated.get(ms.ITERATION.name, last[ms.ITERATION.name])
    row[BUDGET] = (budget.iterations if stopped in ("iterations", "perfect")
                   and measured == last[ms.ITERATION.name] else measured)
    if can_be_perfect:
        first = next((r for r in records if r.get(ms.PERFECT.name)), None)
        reached = first or last
        row[REACHED] = int(first is not None)
        row["iterations_to_perfect"] = reached[ms.ITERATION.name]
        row["games_to_perfect"] = reached[ms.GAMES.name]
        row["seconds_to_perfect"] = round(reached[ms.WALL_TIME.name], 2)
    scores = tuple(f.prefix for f in ms.FAMILIES if f is not ms.MARGIN)
    row.update({k: v for k, v in evaluated.items() if k.startswith(scores)})
    row["run_dir"] = name
    return row


# ------------------------------------------------------------------------------ sweeps


@dataclasses.dataclass
class SweepResult:
    """What `run_sweep` / `merge` did and produced."""

    groups_run: list[str]
    experiments_run: int
    experiments_skipped: int
    table: list[dict[str, Any]]
    markdown: str


def check_out_dir(out_dir: Path, base: TrainConfig, params: Sequence[Param]) -> None:
    """Writes `sweep.json` (the base config and the swept settings), or checks that a
    sweep already in `out_dir` has the same base program and swept settings (its values,
    seeds and run options may grow: more seeds, more iterations)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SWEEP_FILE
    paths = [p.path for p in params]
    if path.is_file():
        saved = json.loads(path.read_text())
        saved_base = TrainConfig.from_dict(saved["base"])
        different = changed_settings(saved_base, base.replace(seed=saved_base.seed))
        if different:
            raise ValueError(
                f"{out_dir} holds a sweep with another base config (differs in "
                f"{', '.join(different)}); use another --out or the same options"
            )
        if saved["params"] != paths:
            raise ValueError(f"{out_dir} holds a sweep over {', '.join(saved['params'])}; "
                             "use another --out to sweep other settings")
    path.write_text(json.dumps({"base": base.to_dict(), "params": paths}, indent=1) + "\n")


def saved_base(out_dir: Path | str) -> TrainConfig | None:
    """The base config of the sweep in `out_dir`, as its sweep.json records it (its
    `run.preset` too), or None where there is no sweep yet.

    Args:
      out_dir: the sweep's out directory.

    Returns:
      The saved base config, or None.

    Raises:
      ValueError: for a sweep.json that does not hold a base config.
    """
    path = Path(out_dir) / SWEEP_FILE
    if not path.is_file():
        return None
    try:
        return TrainConfig.from_dict(json.loads(path.read_text())["base"])
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a sweep's record ({err})") from None


def merge(out_dir: Path | str, write: Callable[[str], None] | None = print) -> SweepResult:
    """Builds seeds.csv, results.csv and sweep.png from the runs in `out_dir` that are
    finished at the budget the sweep asks of them (`requested_budget`), each read at that
    budget: a run trained past it counts with its records up to it.

    Args:
      out_dir: the sweep's out directory.
      write: where the line naming what was written goes (None: nowhere).

    Returns:
      The result: its table, and the table as Markdown, with a note under it where a
      configuration pools runs of unequal budgets (`budget_note`).
    """
    out_dir = Path(out_dir)
    path = out_dir / SWEEP_FILE
    if not path.is_file():
        raise ValueError(f"{out_dir} holds no sweep (no {SWEEP_FILE})")
    saved = json.loads(path.read_text())
    base, paths = TrainConfig.from_dict(saved["base"]), saved["params"]
    evaluator = make_evaluator(base.make_env())
    runs = out_dir / RUNS_DIR
    rows = []
    for d in find_runs(runs):
        opened = _open_run(d)
        if opened is None:
            continue
        run, config = opened
        found = _finished_at(run, config, requested_budget(base, paths, config))
        if found is not None:
            config, records, budget = found
            rows.append(_row(config, records, paths, evaluator.can_be_perfect,
                             str(d.relative_to(runs)), budget))
    if not rows:
        return SweepResult([], 0, 0, [], "(no finished experiments yet)")
    header = list(dict.fromkeys(k for r in rows for k in r))
    write_csv(out_dir / SEEDS_FILE, [{k: r.get(k, "") for k in header} for r in rows])
    params = param_columns(header)
    metrics = [m for m in (*(TIME_METRICS if evaluator.can_be_perfect else ()),
                           *evaluator.summary_metrics) if m in header]
    text_rows = [{k: str(v) for k, v in r.items()} for r in rows]
    declared = evaluator.declared_metrics
    table = results_table(text_rows, params, metrics, declared)
    write_csv(out_dir / RESULTS_FILE, table)
    mixed = mixed_budgets(table)
    plot_sweep(text_rows, params, metrics, out_dir / SWEEP_PLOT,
               title=f"{base.program.game}: {len(rows)} runs"
               + (f", {len(mixed)} configuration{'s' * (len(mixed) != 1)} pooling "
                  "unequal budgets" if mixed else ""),
               declared=declared)
    if write is not None:
        # The headline: the first metric (time to perfect play where the game has one).
        top = (best_config(table, metrics[0], declared) if metrics and len(table) > 1
               else None)
        headline = f"; best {metrics[0]}: {top['config']}" if top else ""
        write(f"wrote {out_dir / RESULTS_FILE} ({len(table)} configurations, {len(rows)} "
              f"runs) and {out_dir / SWEEP_PLOT}{headline}")
    markdown = markdown_table(table, params, metrics, declared)
    if mixed:
        markdown += "\n\n" + budget_note(mixed)
    return SweepResult([], 0, 0, table, markdown)


def requested_budget(base: TrainConfig, paths: Sequence[str], config: TrainConfig
                     ) -> RunConfig:
    """The run options a sweep asks of one of its runs: the base config's (as sweep.json
    records it, the newest command's) with the run's swept settings, so that a swept
    `iterations` is each configuration's own.

    Args:
      base: the sweep's base config.
      paths: the swept settings.
      config: the run's config.

    Returns:
      Those options; the run's own where its settings do not make a config of the sweep.
    """
    try:
        return base.with_values({path: config.get(path) for path in paths}).run
    except ValueError:
        return config.run


def mixed_budgets(table: Sequence[dict[str, Any]]) -> list[str]:
    """The configurations of a results table whose runs stand for unequal budgets.

    Args:
      table: rows of `results_table`.

    Returns:
      Their labels, in the table's order.
    """
    return [row["config"] for row in table if "-" in str(row.get(BUDGET, ""))]


def budget_note(mixed: Sequence[str]) -> str:
    """The note under a sweep's table where some configuration pools unequal budgets.

    Args:
      mixed: those configurations (`mixed_budgets`).

    Returns:
      One line naming them and why their budgets differ.
    """
    return (f"note: {len(mixed)} configuration{'s' * (len(mixed) != 1)} "
            f"({'; '.join(mixed)}) pool{'s' * (len(mixed) == 1)} runs of unequal "
            "budgets (the budget column's "
            "range: runs stopped by --max-minutes, or last evaluated before the end); "
            "compare at equal --iterations with --max-minutes 0")


def prepare_sweep(base: TrainConfig, params: Sequence[Param], seeds: Sequence[int]
                  ) -> list[Experiment]:
    """The grid, every config checked (ValueError naming the configuration otherwise),
    every swept setting read by some experiment and no two configurations the same runs
    (`check_settings_read`)."""
    if not seeds:
        raise ValueError("need at least one seed")
    env = base.make_env()
    experiments = make_grid(base, params, seeds)
    check_settings_read(params, experiments)
    checked = set()
    for e in experiments:
        if e.label not in checked:
            try:
                e.config.program.check(
                    env if e.config.program.game_options == base.program.game_options
                    else e.config.make_env())  # a swept game option: another board
            except ValueError as err:
                raise ValueError(f"{e.label}: {err}") from None
            checked.add(e.label)
    return experiments


def time_bound(groups: Sequence[Group]) -> str:
    """'; at most M minutes of training' when every run of `groups` has --max-minutes
    (the groups run one after another, each until its slowest run's budget), else ''."""
    budgets = [[e.config.run.max_minutes for e in g.experiments] for g in groups]
    if not budgets or not all(b > 0 for group in budgets for b in group):
        return ""
    return f"; at most {format_duration(60 * sum(max(b) for b in budgets))} of training"


def clock_warning(groups: Sequence[Group], shards: int) -> str:
    """A warning line where `--max-minutes` bounds experiments that do not all train in
    one group (one vmapped program in one process), else ''.

    An experiment's minutes are the wall clock of its compile group: every iteration
    steps all of the group's experiments at once (finished ones too) and runs their
    evaluations one after another, so an experiment of a larger group, or of a group on
    slower devices, gets less training in the same minutes. Equal iterations are equal
    positions and gradient steps wherever they run.

    Args:
      groups: the sweep's compile groups.
      shards: N of `--shard I/N` (a group may be split between shards).

    Returns:
      The line, or ''.
    """
    timed = any(e.config.run.max_minutes > 0 for g in groups for e in g.experiments)
    units = [unit for shard in split_shards(groups, shards) for unit in shard]
    if not timed or len(units) < 2:
        return ""
    sizes = sorted({unit.size for unit in units})
    shown = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}"
    return (f"warning: --max-minutes is a wall clock each compile group shares, and this "
            f"sweep trains in {len(units)} groups of {shown} experiments: how much "
            "training an experiment gets in its minutes depends on its group and "
            "devices, so compare configurations at equal --iterations (--max-minutes 0)")


def run_sweep(
    base: TrainConfig,
    params: Sequence[Param],
    seeds: Sequence[int],
    out_dir: Path | str,
    shard: tuple[int, int] = (1, 1),
    write: Callable[[str], None] | None = print,
    on_iteration: Callable[[list[int]], None] | None = None,
) -> SweepResult:
    """Runs this shard's part of the grid (a group whose runs are all finished is
    skipped), then builds the results from every finished run in `out_dir`.

    `on_iteration(iterations)` is called after each iteration of a group (see
    `azjax.driver.driver.train_group`).
    """
    out_dir = Path(out_dir)
    say = write or (lambda _: None)
    experiments = prepare_sweep(base, params, seeds)
    check_out_dir(out_dir, base, params)
    groups = group_experiments(experiments)
    mine = split_shards(groups, shard[1])[shard[0] - 1]
    runs = out_dir / RUNS_DIR
    run_dirs = {e.run_name: RunDir(runs / e.run_name)
                for g in mine for e in g.experiments}
    todo = [g for g in mine if not all(run_finished(run_dirs[e.run_name], e.config.run)
                                       for e in g.experiments)]
    skipped = sum(g.size for g in mine) - sum(g.size for g in todo)
    say(f"sweep: {len(experiments)} experiments in {len(groups)} compile groups; "
        f"shard {shard[0]}/{shard[1]}: {sum(g.size for g in mine)} experiments, "
        f"{skipped} already done, {len(todo)} groups to run{time_bound(todo)}")
    if warning := clock_warning(groups, shard[1]):
        say(warning)
    for number, group in enumerate(todo, 1):
        shown = "; ".join(dict.fromkeys(e.label for e in group.experiments))
        say(f"group {number}/{len(todo)} ({group.id}): {group.size} experiments as one "
            f"vmapped program: {shown}; seeds {sorted({e.seed for e in group.experiments})}")
        train_group([e.config for e in group.experiments],
                    [run_dirs[e.run_name] for e in group.experiments], progress=say,
                    on_iteration=on_iteration)
    result = merge(out_dir, write=say)
    result.groups_run = [g.id for g in todo]
    result.experiments_run = sum(g.size for g in todo)
    result.experiments_skipped = skipped
    return result
