"""Ablation sweeps: a grid of training settings x seeds, as few compiled programs as possible.

Every configuration of the grid (the product of the swept values) runs once per seed, and
every such experiment is a normal run with a run directory of its own,
`<out>/runs/<setting>=<value>/.../seed=<s>/`, that `Agent.load`, `python -m azjax.play`,
`azjax.league` and `azjax.export` open like any other. Experiments whose programs differ
only in traced settings (`azjax.fields`: c_puct, Dirichlet noise, the Gumbel scale,
`rollout_lambda` among values > 0, the learning rate), seeds and run options form one
*compile group* and train as ONE vmapped program (`azjax.driver.train_group`); any other
setting (simulations, PUCT or Gumbel, batch and replay sizes, network, ...) makes a group
of its own.

A sweep resumes as its runs do: a finished run is left alone, a group with unfinished
runs resumes each from its newest checkpoint. `--shard I/N` runs a fixed, disjoint part
of the groups. `merge` reads every run directory present into `seeds.csv` (one row per
finished run), `results.csv` (per configuration: mean and 95% t-interval over seeds) and
`sweep.png`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from azjax import checkpoint as ckpt
from azjax.config import TrainConfig, setting_paths
from azjax.driver import finished, train_group
from azjax.evaluation import make_evaluator
from azjax.fields import is_scalar, parse_setting
from azjax.sweep_plots import plot_sweep
from azjax.sweep_table import (
    REACHED,
    TIME_METRICS,
    markdown_table,
    param_columns,
    results_table,
    write_csv,
)

NOT_SWEPT = {
    "seed": "seeds are set with --seeds",
    "game": "a sweep trains one game",
    "game_options": "a sweep trains one game",
    "eval_opponents": "not a scalar setting",
}
SWEEP_FILE = "sweep.json"
RUNS_DIR = "runs"
SEEDS_FILE = "seeds.csv"
RESULTS_FILE = "results.csv"
PLOT_FILE = "sweep.png"


# ----------------------------------------------------------------------------- names


def sweepable_fields() -> dict[str, Any]:
    """Every sweepable setting: path ('search.num_simulations', 'iterations') -> type."""
    return {path: kind for path, kind in setting_paths().items()
            if path.split(".")[0] not in NOT_SWEPT}


def short_names() -> dict[str, str]:
    """Setting names that need no path, because no other setting has that name
    ('num_simulations' -> 'search.num_simulations')."""
    leaves: dict[str, list[str]] = {}
    for path in sweepable_fields():
        leaves.setdefault(path.split(".")[-1], []).append(path)
    return {leaf: paths[0] for leaf, paths in leaves.items() if len(paths) == 1}


def resolve_name(name: str) -> str:
    """The path of a setting given by its path or by its name alone (when unique)."""
    fields = sweepable_fields()
    name = name.strip().replace("-", "_")
    if name in fields:
        return name
    if name in NOT_SWEPT:
        raise ValueError(f"cannot sweep {name!r}: {NOT_SWEPT[name]}")
    short = short_names()
    if name in short:
        return short[name]
    matches = [path for path in fields if path.split(".")[-1] == name]
    if matches:
        raise ValueError(f"ambiguous parameter {name!r}: say one of {', '.join(matches)}")
    raise ValueError(
        f"unknown parameter {name!r}; e.g. num_simulations, policy, c_puct, learning_rate, "
        "batch_size, replay_capacity (any setting by its name, or its path such as "
        "learner.weight_decay)"
    )


def parse_value(path: str, text: str) -> Any:
    """One value of setting `path` parsed from text (ValueError when it cannot be)."""
    kind = sweepable_fields()[path]
    if not is_scalar(kind):
        raise ValueError(f"cannot sweep {path}: not a scalar setting")
    return parse_setting(path, kind, text)


def format_value(value: Any) -> str:
    """The canonical text of a swept value (also its CSV cell)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


@dataclasses.dataclass(frozen=True)
class Param:
    """One swept setting and its values."""

    path: str
    values: tuple[Any, ...]

    @property
    def name(self) -> str:
        """Short display name (the last part of the path)."""
        return self.path.split(".")[-1]


def parse_param(spec: str) -> Param:
    """`NAME=V1,V2,...` -> Param (ValueError with a one-line message when malformed)."""
    name, sep, values = spec.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"bad --param {spec!r}: expected NAME=V1,V2,...")
    path = resolve_name(name)
    texts = values.split(",")
    if not values.strip() or any(not t.strip() for t in texts):
        raise ValueError(f"bad --param {spec!r}: empty value")
    parsed = tuple(parse_value(path, t) for t in texts)
    if len(set(parsed)) != len(parsed):
        raise ValueError(f"bad --param {spec!r}: a value is repeated")
    return Param(path, parsed)


def parse_params(specs: Sequence[str]) -> list[Param]:
    """All `--param` options; a setting may appear once."""
    params = [parse_param(s) for s in specs]
    paths = [p.path for p in params]
    for path in paths:
        if paths.count(path) > 1:
            raise ValueError(f"{path} is swept twice; give all its values in one --param")
    return params


# ------------------------------------------------------------------------------ grid


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One configuration of the grid with one seed."""

    assignment: tuple[tuple[str, Any], ...]  # (path, value) per swept setting
    seed: int
    config: TrainConfig

    @property
    def label(self) -> str:
        """Identifies the configuration (not the seed): 'search.policy=puct search.c_puct=1.0'."""
        return config_label(self.assignment)

    @property
    def key(self) -> tuple[str, int]:
        """(label, seed): identifies the experiment in the grid."""
        return self.label, self.seed

    @property
    def run_name(self) -> str:
        """Its run directory, relative to the sweep's `runs/`: one level per setting,
        'policy=puct/c_puct=1.0/seed=0' (no commas, so a player spec can name it)."""
        names = [path.split(".")[-1] for path, _ in self.assignment]
        if len(set(names)) < len(names):
            names = [path for path, _ in self.assignment]
        parts = [f"{n}={format_value(v)}" for n, (_, v) in zip(names, self.assignment)]
        return "/".join([*parts, f"seed={self.seed}"])


def config_label(assignment: Sequence[tuple[str, Any]]) -> str:
    """'search.policy=puct search.c_puct=1.0' ('base' when nothing is swept)."""
    return " ".join(f"{path}={format_value(v)}" for path, v in assignment) or "base"


def make_grid(base: TrainConfig, params: Sequence[Param], seeds: Sequence[int]
              ) -> list[Experiment]:
    """Every configuration (product of the values, in order) x every seed."""
    experiments = []
    for values in itertools.product(*(p.values for p in params)):
        assignment = tuple((p.path, v) for p, v in zip(params, values))
        config = base
        for path, value in assignment:
            config = config.with_value(path, value)
        for seed in seeds:
            experiments.append(Experiment(assignment, seed, config.replace(seed=seed)))
    return experiments


@dataclasses.dataclass(frozen=True)
class Group:
    """Experiments that run as one vmapped program."""

    experiments: tuple[Experiment, ...]

    @property
    def id(self) -> str:
        """A short hash of the group's experiments and program."""
        text = json.dumps([[e.label, e.seed] for e in self.experiments])
        text += self.experiments[0].config.program.compile_key()
        return hashlib.sha1(text.encode()).hexdigest()[:10]

    @property
    def size(self) -> int:
        """E, the experiments in the group."""
        return len(self.experiments)


def group_experiments(experiments: Sequence[Experiment]) -> list[Group]:
    """Compile groups (one per program), in order of first appearance; experiments keep
    the grid order."""
    groups: dict[str, list[Experiment]] = {}
    for e in experiments:
        groups.setdefault(e.config.program.compile_key(), []).append(e)
    return [Group(tuple(members)) for members in groups.values()]


def parse_shard(text: str) -> tuple[int, int]:
    """'I/N' (1 <= I <= N) -> (I, N)."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or n < 1 or not 1 <= i <= n:
        raise ValueError(f"bad --shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return i, n


def split_shards(groups: Sequence[Group], n: int) -> list[list[Group]]:
    """A deterministic split of the groups into `n` disjoint shards of similar size.

    Groups are split into halves (keeping experiments of a group together where
    possible) while there are fewer units than shards; then units go, largest first, to
    the shard with the fewest experiments so far.
    """
    units = list(groups)
    while len(units) < n:
        largest = max(range(len(units)), key=lambda j: (units[j].size, -j))
        if units[largest].size < 2:
            break
        members = units[largest].experiments
        half = (len(members) + 1) // 2
        units[largest: largest + 1] = [Group(members[:half]), Group(members[half:])]
    shards: list[list[Group]] = [[] for _ in range(n)]
    loads = [0] * n
    for unit in sorted(units, key=lambda u: -u.size):  # stable: ties keep grid order
        target = min(range(n), key=lambda j: (loads[j], j))
        shards[target].append(unit)
        loads[target] += unit.size
    order = {id(u): j for j, u in enumerate(units)}
    return [sorted(s, key=lambda u: order[id(u)]) for s in shards]


# ------------------------------------------------------------------------- runs on disk


def _read_run(run_dir: Path) -> tuple[TrainConfig, list[dict[str, Any]]] | None:
    """The config and records of a finished run: over by its own config (`finished`)
    with its final state checkpointed; None for a missing or cut-off run."""
    try:
        config = ckpt.load_config(run_dir)
    except ckpt.RunDirError:
        return None
    records = ckpt.read_metrics(run_dir)
    if not records:
        return None
    last = records[-1]["iteration"]
    if not (Path(run_dir) / ckpt.CHECKPOINT_DIR / str(last)).is_dir():
        return None
    return (config, records) if finished(config.run, records, last) else None


def run_finished(run_dir: Path) -> bool:
    """Whether the run in `run_dir` is over by its own config (iterations, time, perfect
    play) with its final state checkpointed; False for a missing or cut-off run."""
    return _read_run(run_dir) is not None


def find_runs(root: Path) -> list[Path]:
    """The run directories (holding a config.json) below `root`, sorted. It does not look
    inside a run, where another process (a shard) may be writing a checkpoint."""
    if (root / ckpt.CONFIG_FILE).is_file():
        return [root]
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    return [run for child in children for run in find_runs(child)]


def run_row(run_dir: Path, paths: Sequence[str], can_be_perfect: bool,
            name: str | None = None) -> dict[str, Any]:
    """One finished run as a row: the swept settings, seed, budget used, the first point
    of perfect play (censored at the end when never reached), the last evaluation and
    `name` (default: the run directory)."""
    return _row(ckpt.load_config(run_dir), ckpt.read_metrics(run_dir), paths,
                can_be_perfect, name or str(run_dir))


def _row(config: TrainConfig, records: Sequence[dict[str, Any]], paths: Sequence[str],
         can_be_perfect: bool, name: str) -> dict[str, Any]:
    last = records[-1]
    assignment = [(path, config.get(path)) for path in paths]
    row: dict[str, Any] = {"config": config_label(assignment)}
    row.update({path: format_value(value) for path, value in assignment})
    row.update(seed=config.seed, iterations=last["iteration"], games=last["games"],
               positions=last["positions"])
    if can_be_perfect:
        first = next((r for r in records if r.get("perfect")), None)
        reached = first or last
        row[REACHED] = int(first is not None)
        row["iterations_to_perfect"] = reached["iteration"]
        row["games_to_perfect"] = reached["games"]
        row["seconds_to_perfect"] = round(reached["wall_time"], 2)
    evaluated = next((r for r in reversed(records) if "perfect" in r), {})
    row.update({k: v for k, v in evaluated.items()
                if k.startswith(("net_", "search_", "vs ")) and k != "perfect"})
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
        different = [line.split(":")[0] for line in saved_base.program_differences(
            base.replace(seed=saved_base.seed))]
        if different:
            raise ValueError(
                f"{out_dir} holds a sweep with another base config (differs in "
                f"{', '.join(different)}); use another --out or the same options"
            )
        if saved["params"] != paths:
            raise ValueError(f"{out_dir} holds a sweep over {', '.join(saved['params'])}; "
                             "use another --out to sweep other settings")
    path.write_text(json.dumps({"base": base.to_dict(), "params": paths}, indent=1) + "\n")


def merge(out_dir: Path | str, write: Callable[[str], None] | None = print) -> SweepResult:
    """Builds seeds.csv, results.csv and sweep.png from the finished runs in `out_dir`."""
    out_dir = Path(out_dir)
    path = out_dir / SWEEP_FILE
    if not path.is_file():
        raise ValueError(f"{out_dir} holds no sweep (no {SWEEP_FILE})")
    saved = json.loads(path.read_text())
    base, paths = TrainConfig.from_dict(saved["base"]), saved["params"]
    evaluator = make_evaluator(base.make_env())
    runs = out_dir / RUNS_DIR
    read = [(d, _read_run(d)) for d in find_runs(runs)]
    rows = [_row(*run, paths, evaluator.can_be_perfect, str(d.relative_to(runs)))
            for d, run in read if run is not None]
    if not rows:
        return SweepResult([], 0, 0, [], "(no finished experiments yet)")
    header = list(dict.fromkeys(k for r in rows for k in r))
    write_csv(out_dir / SEEDS_FILE, [{k: r.get(k, "") for k in header} for r in rows])
    params = param_columns(header)
    metrics = [m for m in (*(TIME_METRICS if evaluator.can_be_perfect else ()),
                           *evaluator.summary_metrics) if m in header]
    text_rows = [{k: str(v) for k, v in r.items()} for r in rows]
    table = results_table(text_rows, params, metrics)
    write_csv(out_dir / RESULTS_FILE, table)
    plot_sweep(text_rows, params, metrics, out_dir / PLOT_FILE,
               title=f"{base.program.game}: {len(rows)} runs")
    if write is not None:
        write(f"wrote {out_dir / RESULTS_FILE} ({len(table)} configurations, {len(rows)} "
              f"runs) and {out_dir / PLOT_FILE}")
    return SweepResult([], 0, 0, table, markdown_table(table, params, metrics))


def prepare_sweep(base: TrainConfig, params: Sequence[Param], seeds: Sequence[int]
                  ) -> list[Experiment]:
    """The grid, every config checked (ValueError naming the configuration otherwise)."""
    if not seeds:
        raise ValueError("need at least one seed")
    env = base.make_env()
    experiments = make_grid(base, params, seeds)
    checked = set()
    for e in experiments:
        if e.label not in checked:
            try:
                e.config.validate()
                e.config.program.check(env)
            except ValueError as err:
                raise ValueError(f"{e.label}: {err}") from None
            checked.add(e.label)
    return experiments


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
    `azjax.driver.train_group`).
    """
    out_dir = Path(out_dir)
    say = write or (lambda _: None)
    experiments = prepare_sweep(base, params, seeds)
    check_out_dir(out_dir, base, params)
    groups = group_experiments(experiments)
    mine = split_shards(groups, shard[1])[shard[0] - 1]
    runs = out_dir / RUNS_DIR
    todo = [g for g in mine if not all(run_finished(runs / e.run_name) for e in g.experiments)]
    skipped = sum(g.size for g in mine) - sum(g.size for g in todo)
    say(f"sweep: {len(experiments)} experiments in {len(groups)} compile groups; "
        f"shard {shard[0]}/{shard[1]}: {sum(g.size for g in mine)} experiments, "
        f"{skipped} already done, {len(todo)} groups to run")
    for number, group in enumerate(todo, 1):
        shown = "; ".join(dict.fromkeys(e.label for e in group.experiments))
        say(f"group {number}/{len(todo)} ({group.id}): {group.size} experiments as one "
            f"vmapped program: {shown}; seeds {sorted({e.seed for e in group.experiments})}")
        train_group([e.config for e in group.experiments],
                    [runs / e.run_name for e in group.experiments], progress=say,
                    on_iteration=on_iteration)
    result = merge(out_dir, write=say)
    result.groups_run = [g.id for g in todo]
    result.experiments_run = sum(g.size for g in todo)
    result.experiments_skipped = skipped
    return result
