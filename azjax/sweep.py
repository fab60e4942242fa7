"""Ablation sweeps: a grid of training settings x seeds, as few compiled programs as possible.

Every configuration of the grid (the product of the swept values) runs once per seed.
Experiments whose configs differ only in settings that the compiled iteration receives
as traced values form one *compile group* and run as ONE jitted program vmapped over a
leading experiment axis: the seed, the float search settings (`SearchParams`: c_puct,
pb_c_base, Dirichlet alpha and fraction, Gumbel scale, and `rollout_lambda` among values
> 0, since lambda > 0 compiles the playouts in) and the learning rate (held in the Optax
state by `inject_hyperparams`). Everything else (simulations, PUCT vs Gumbel, considered
actions, batch size, replay size, temperature moves, network sizes, weight decay, ...)
changes the program and makes a group of its own.

Each experiment of a group computes what `azjax.train.train` computes for its config
(same initial state from `jax.random.key(seed)`, same iteration function); on the host,
between iterations, the group evaluates each experiment, records the first point where
the network alone is perfect (tic-tac-toe, coin splitting) and stops when all are
perfect or the budget (`iterations`, `max_minutes` per group) is spent.

Out directory: `sweep.json` (the base config; a rerun must use the same one), one
per-seed CSV per shard (`seeds.csv`, or `seeds-shard-I-of-N.csv`), rows appended when
a group finishes (so finished groups are never rerun), `groups/<id>/` with orbax
checkpoints of a running group's stacked state (deleted when it finishes),
`results.csv` (one row per configuration: mean and 95% t-interval over seeds) built
from every per-seed CSV present, and `sweep.png`.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import itertools
import json
import math
import os
import shutil
import time
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from azjax.config import TrainConfig
from azjax.learner import LearnerConfig
from azjax.networks import NetworkConfig
from azjax.search import SearchConfig
from azjax.selfplay import SelfPlayConfig

# ----------------------------------------------------------------------------- names

SHORT_NAMES = {
    "num_simulations": "search.num_simulations",
    "policy": "search.policy",
    "c_puct": "search.c_puct",
    "dirichlet_alpha": "search.dirichlet_alpha",
    "dirichlet_fraction": "search.dirichlet_fraction",
    "gumbel_scale": "search.gumbel_scale",
    "max_num_considered_actions": "search.max_num_considered_actions",
    "rollout_lambda": "search.rollout_lambda",
    "temperature_moves": "selfplay.temperature_moves",
    "learning_rate": "learner.learning_rate",
    "batch_size": "learner.batch_size",
    "replay_capacity": "replay_capacity",
}
"""The usual ablation knobs; any other scalar setting can be swept by its full path
(e.g. `gradient_steps`, `selfplay.random_move_prob`, `network.channels`)."""

NESTED = {
    "network": NetworkConfig,
    "search": SearchConfig,
    "selfplay": SelfPlayConfig,
    "learner": LearnerConfig,
}
NOT_SWEPT = {
    "seed": "seeds are set with --seeds",
    "game": "a sweep trains one game",
    "game_options": "a sweep trains one game",
    "eval_opponents": "not a scalar setting",
    "regime": "sweeps run the alphazero regime only",
}

TRACED = (
    "search.c_puct",
    "search.pb_c_base",
    "search.dirichlet_alpha",
    "search.dirichlet_fraction",
    "search.gumbel_scale",
    "search.rollout_lambda",
    "learner.learning_rate",
)
"""Settings the compiled iteration takes as traced values: experiments differing only in
these (and the seed) share one program. `rollout_lambda` only among values > 0."""

PERFECT_GAMES = ("tictactoe", "coin_split")
"""Games whose evaluation can say the network alone plays perfectly."""

TIME_METRICS = ("games_to_perfect", "iterations_to_perfect")
"""Censored metrics: a run that never gets there counts its budget and `reached_perfect=0`."""

TABLE_METRICS = {
    "tictactoe": (*TIME_METRICS, "net_optimal_share"),
    "coin_split": (*TIME_METRICS, "net_winning_move_share"),
    "connect_four": (
        "net_move_accuracy", "net_move_accuracy_hard", "net_value_accuracy",
        "search_move_accuracy",
    ),
}
DEFAULT_METRICS = ("net_vs_random", "search_vs_random")

SWEEP_FILE = "sweep.json"
RESULTS_FILE = "results.csv"
PLOT_FILE = "sweep.png"
GROUPS_DIR = "groups"
GROUP_PROGRESS_FILE = "progress.json"
REACHED = "reached_perfect"
STATUS_EVERY_S = 2.0
"""Seconds between status lines while a group trains."""


def table_metrics(game: str) -> tuple[str, ...]:
    """The metrics the results table summarises for `game`."""
    return TABLE_METRICS.get(game, DEFAULT_METRICS)


def _field_types(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def sweepable_fields() -> dict[str, Any]:
    """Every sweepable setting: full path ('search.num_simulations') -> its type."""
    out: dict[str, Any] = {}
    for name, kind in _field_types(TrainConfig).items():
        if name in NOT_SWEPT:
            continue
        if name in NESTED:
            for sub, sub_kind in _field_types(NESTED[name]).items():
                out[f"{name}.{sub}"] = sub_kind
        else:
            out[name] = kind
    return out


def resolve_name(name: str) -> str:
    """The full path of a setting given by short name, unique field name or full path."""
    fields = sweepable_fields()
    name = name.strip().replace("-", "_")
    if name in SHORT_NAMES:
        return SHORT_NAMES[name]
    if name in fields:
        return name
    if name in NOT_SWEPT:
        raise ValueError(f"cannot sweep {name!r}: {NOT_SWEPT[name]}")
    matches = [path for path in fields if path.split(".")[-1] == name]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f"ambiguous parameter {name!r}: say one of {', '.join(matches)}")
    raise ValueError(
        f"unknown parameter {name!r}; short names: {', '.join(SHORT_NAMES)} "
        "(or any setting's path, e.g. learner.weight_decay)"
    )


def parse_value(path: str, text: str) -> Any:
    """One value of setting `path` parsed from text (ValueError when it cannot be)."""
    kind = sweepable_fields()[path]
    text = text.strip()
    choices = typing.get_args(kind) if typing.get_origin(kind) is typing.Literal else None
    try:
        if choices is not None:
            if text not in choices:
                raise ValueError
            return text
        if kind is bool:
            lowered = text.lower()
            if lowered not in ("true", "false", "1", "0"):
                raise ValueError
            return lowered in ("true", "1")
        if kind is int:
            return int(text)
        if kind is float:
            value = float(text)
            if not math.isfinite(value):
                raise ValueError
            return value
        if kind is str:
            if not text:
                raise ValueError
            return text
    except ValueError:
        expected = f"one of {', '.join(choices)}" if choices else getattr(kind, "__name__", kind)
        raise ValueError(f"bad value {text!r} for {path} (expected {expected})") from None
    raise ValueError(f"cannot sweep {path}: not a scalar setting")


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
    texts = [t for t in values.split(",")]
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


def get_setting(config: TrainConfig, path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def with_setting(config: TrainConfig, path: str, value: Any) -> TrainConfig:
    """`config` with the setting at `path` replaced."""
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(config, **{head: value})
    inner = dataclasses.replace(getattr(config, head), **{rest: value})
    return dataclasses.replace(config, **{head: inner})


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
        return self.label, self.seed


def config_label(assignment: Sequence[tuple[str, Any]]) -> str:
    return " ".join(f"{path}={format_value(v)}" for path, v in assignment) or "base"


def make_grid(base: TrainConfig, params: Sequence[Param], seeds: Sequence[int]) -> list[Experiment]:
    """Every configuration (product of the values, in order) x every seed."""
    experiments = []
    for values in itertools.product(*(p.values for p in params)):
        assignment = tuple((p.path, v) for p, v in zip(params, values))
        config = base
        for path, value in assignment:
            config = with_setting(config, path, value)
        for seed in seeds:
            experiments.append(Experiment(assignment, seed, dataclasses.replace(config, seed=seed)))
    return experiments


def compile_key(config: TrainConfig) -> str:
    """Equal for configs that run as one group: the same compiled program (traced
    settings masked) and the same driver settings (budget, evaluation cadence)."""
    data = config.to_dict()
    data["seed"] = None
    for path in TRACED:
        head, sub = path.split(".")
        data[head][sub] = None
    data["search"]["rollout_lambda"] = config.search.rollout_lambda > 0
    return json.dumps(data, sort_keys=True)


def program_key(config: TrainConfig) -> str:
    """`compile_key` without the run-control settings, which only the driver reads."""
    from azjax.train import RUN_CONTROL_FIELDS

    data = json.loads(compile_key(config))
    for name in RUN_CONTROL_FIELDS:
        data[name] = None
    return json.dumps(data, sort_keys=True)


@dataclasses.dataclass(frozen=True)
class Group:
    """Experiments that run as one vmapped program."""

    experiments: tuple[Experiment, ...]

    @property
    def id(self) -> str:
        text = json.dumps([[e.label, e.seed] for e in self.experiments]) + compile_key(
            self.experiments[0].config
        )
        return hashlib.sha1(text.encode()).hexdigest()[:10]

    @property
    def size(self) -> int:
        return len(self.experiments)


def group_experiments(experiments: Sequence[Experiment]) -> list[Group]:
    """Compile groups, in order of first appearance; experiments keep the grid order."""
    groups: dict[str, list[Experiment]] = {}
    for e in experiments:
        groups.setdefault(compile_key(e.config), []).append(e)
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


# ----------------------------------------------------------------------------- stats


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer `df` (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 1:
        total, term = 0.0, 1.0
        if df > 1:
            total = term
            for k in range(1, (df - 3) // 2 + 1):
                term *= c2 * (2 * k) / (2 * k + 1)
                total += term
            return 2 / math.pi * (theta + s * math.cos(theta) * total)
        return 2 / math.pi * theta
    total, term = 1.0, 1.0
    for k in range(1, (df - 2) // 2 + 1):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p >= 0.5) of Student's t with integer `df` >= 1, by bisection."""
    if not 0.5 <= p < 1 or df < 1:
        raise ValueError(f"need 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")
    target = 2 * p - 1
    low, high = 0.0, 1.0
    while _t_two_sided(high, df) < target:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if _t_two_sided(mid, df) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the t-interval for the mean (nan bounds with one value)."""
    x = np.asarray(values, np.float64)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if x.size == 1:
        return mean, math.nan, math.nan
    half = t_quantile(0.5 + level / 2, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half


# ------------------------------------------------------------------------ the runner


def stack_states(states: Sequence[Any]) -> Any:
    """One pytree with a leading experiment axis from equally shaped pytrees."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def unstack(tree: Any, index: int) -> Any:
    """Experiment `index` of a stacked pytree."""
    return jax.tree.map(lambda x: x[index], tree)


def init_group_state(env, configs: Sequence[TrainConfig]) -> Any:
    """The stacked initial TrainStates, each as `train` would start its config."""
    from azjax.loop import init_train_state

    return stack_states([init_train_state(env, c, jax.random.key(c.seed)) for c in configs])


def make_group_step(env, configs: Sequence[TrainConfig]) -> Callable:
    """`step(stacked_state) -> (stacked_state, metrics [E])`: one jitted vmapped iteration
    (the stacked state is donated). All configs must share one compile key; the step is
    cached by that key."""
    from azjax.loop import make_iteration_fn

    keys = {program_key(c) for c in configs}
    if len(keys) != 1:
        raise ValueError("these configs do not share one compiled program")
    return _cached(_STEPS, keys.pop(), lambda: jax.jit(
        jax.vmap(make_iteration_fn(env, configs[0])), donate_argnums=0))


# Jitted group steps by program key, evaluators by game, network and search: a later
# group with the same program (a resumed or split group, another budget, a rerun in the
# same process) reuses the compilation.
_STEPS: dict[str, Callable] = {}
_EVALUATORS: dict[str, Any] = {}
MAX_CACHED = 4


def _cached(cache: dict[str, Any], key: str, make: Callable[[], Any]) -> Any:
    if key not in cache:
        if len(cache) >= MAX_CACHED:
            cache.pop(next(iter(cache)))
        cache[key] = make()
    return cache[key]


def game_evaluator(env, config: TrainConfig, search: SearchConfig | None = None):
    """The game's evaluator (`azjax.evaluation.make_evaluator`) for `config`'s network and
    `search` (default: the config's), cached."""
    from azjax.evaluation import make_evaluator
    from azjax.loop import make_network

    search = config.search if search is None else search
    key = json.dumps([config.game, config.game_options, dataclasses.asdict(config.network),
                      dataclasses.asdict(search)], sort_keys=True)
    return _cached(_EVALUATORS, key, lambda: make_evaluator(
        env, make_network(env, config).apply, search))


@dataclasses.dataclass
class GroupProgress:
    """Host-side state of a running group (saved next to its checkpoints)."""

    iteration: int = 0
    elapsed_s: float = 0.0
    first_perfect: list[dict[str, float] | None] = dataclasses.field(default_factory=list)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def _final_metrics(env, group: Group, params, evaluator) -> list[dict[str, float]]:
    """Each experiment's evaluation at the end (also with its own search, noise off, for
    games without a perfect-play verdict)."""
    out = []
    for i, e in enumerate(group.experiments):
        own = unstack(params, i)
        metrics = dict(evaluator.network_metrics(own))
        if e.config.game not in PERFECT_GAMES:
            searching = game_evaluator(env, e.config)
            metrics.update(searching.search_metrics(own, jax.random.key(e.seed + 1)))
        out.append(metrics)
    return out


def saved_iteration(checkpoint_dir: Path) -> int:
    """The iteration a group's checkpoint directory resumes from (0 when none)."""
    path = Path(checkpoint_dir) / GROUP_PROGRESS_FILE
    return json.loads(path.read_text())["iteration"] if path.is_file() else 0


def run_group(
    group: Group,
    checkpoint_dir: Path | None = None,
    write: Callable[[str], None] | None = print,
    on_iteration: Callable[[int, int, bool], None] | None = None,
    evaluator=None,
) -> list[dict[str, Any]]:
    """Trains the group's experiments as one vmapped program; one result row each.

    With `checkpoint_dir` the stacked state is saved there with orbax every
    `checkpoint_every` iterations and a rerun continues from the newest checkpoint.
    `on_iteration(iteration, perfect, finished)` is called after every iteration (for
    status lines; `perfect` counts experiments that reached perfect play);
    `evaluator` replaces the game's evaluator (it needs `network_metrics(params)`).
    """
    from azjax import checkpoint as ckpt

    say = write or (lambda _: None)
    configs = [e.config for e in group.experiments]
    base = configs[0]
    env = base.make_env()
    evaluator = evaluator or game_evaluator(env, base)
    can_be_perfect = base.game in PERFECT_GAMES
    num = group.size

    state = init_group_state(env, configs)
    record = GroupProgress(first_perfect=[None] * num)
    manager = None
    if checkpoint_dir is not None:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        manager = ckpt.checkpoint_manager(checkpoint_dir)
        step_saved = saved_iteration(checkpoint_dir)
        if step_saved and step_saved in manager.all_steps():
            data = json.loads((checkpoint_dir / GROUP_PROGRESS_FILE).read_text())
            state = ckpt.restore(manager, state, step_saved)
            record = GroupProgress(step_saved, data["elapsed_s"], data["first_perfect"])
            say(f"group {group.id}: resumed at iteration {step_saved}")
    step = make_group_step(env, configs)
    start = time.perf_counter()
    iteration = record.iteration

    def elapsed() -> float:
        return record.elapsed_s + time.perf_counter() - start

    def pending() -> list[int]:
        return [i for i in range(num) if record.first_perfect[i] is None]

    def evaluate() -> None:
        games, positions = np.asarray(state.games), np.asarray(state.positions)
        for i in pending():
            if evaluator.network_metrics(unstack(state.params, i)).get("perfect"):
                record.first_perfect[i] = {
                    "iteration": iteration, "games": int(games[i]),
                    "positions": int(positions[i]), "wall_s": elapsed(),
                }

    def out_of_time() -> bool:
        return base.max_minutes > 0 and elapsed() >= 60 * base.max_minutes

    done = can_be_perfect and base.stop_when_perfect and not pending()
    last = done or out_of_time() or iteration >= base.iterations
    while not last:
        state, _ = step(state)
        iteration += 1
        last = iteration >= base.iterations or out_of_time()
        if can_be_perfect and base.eval_every > 0 and iteration % base.eval_every == 0 and not last:
            evaluate()
            done = base.stop_when_perfect and not pending()
            last = last or done
        if manager is not None and not last and iteration % base.checkpoint_every == 0:
            ckpt.save(manager, iteration, state)
            _write_json(checkpoint_dir / GROUP_PROGRESS_FILE, {
                "iteration": iteration, "elapsed_s": elapsed(),
                "first_perfect": record.first_perfect,
            })
        if on_iteration is not None:
            jax.block_until_ready(state.iteration)
            on_iteration(iteration, num - len(pending()), last)

    if can_be_perfect:
        evaluate()
    finals = _final_metrics(env, group, state.params, evaluator)
    if manager is not None:
        manager.close()
    games, positions = np.asarray(state.games), np.asarray(state.positions)
    wall = elapsed()
    rows = []
    for i, e in enumerate(group.experiments):
        row: dict[str, Any] = {"config": e.label}
        row.update({path: format_value(v) for path, v in e.assignment})
        row.update(seed=e.seed, iterations=iteration, games=int(games[i]),
                   positions=int(positions[i]))
        if can_be_perfect:
            first = record.first_perfect[i]
            reached = first is not None
            row[REACHED] = int(reached)
            row["iterations_to_perfect"] = first["iteration"] if reached else iteration
            row["games_to_perfect"] = first["games"] if reached else int(games[i])
            row["seconds_to_perfect"] = round(first["wall_s"] if reached else wall, 2)
        row.update({k: v for k, v in finals[i].items() if k != "perfect"})
        row.update(group=group.id, group_size=num, group_wall_s=round(wall, 2))
        rows.append(row)
    return rows


# ------------------------------------------------------------------------ files


def seed_csv_name(shard: tuple[int, int] = (1, 1)) -> str:
    """The per-seed CSV a shard appends to."""
    i, n = shard
    return "seeds.csv" if n == 1 else f"seeds-shard-{i}-of-{n}.csv"


def append_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Appends rows (one write; a header when the file is new)."""
    if not rows:
        return
    new = not path.is_file() or path.stat().st_size == 0
    if new:
        fields = list(rows[0])
    else:
        with open(path, newline="") as f:
            fields = next(csv.reader(f))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, extrasaction="ignore")
    if new:
        writer.writeheader()
    writer.writerows(rows)
    with open(path, "a", newline="") as f:
        f.write(buffer.getvalue())
        f.flush()
        os.fsync(f.fileno())


def read_seed_rows(out_dir: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of every per-seed CSV in `out_dir`; a (config, seed) seen twice
    counts once; torn rows of a killed write are skipped."""
    header: list[str] = []
    rows, seen = [], set()
    for path in sorted(Path(out_dir).glob("seeds*.csv")):
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            for name in reader.fieldnames or []:
                if name not in header:
                    header.append(name)
            for row in reader:
                if None in row or any(v is None for v in row.values()):
                    continue
                key = (row["config"], row["seed"])
                if key not in seen:
                    seen.add(key)
                    rows.append(row)
    return header, rows


def param_columns(header: Sequence[str]) -> list[str]:
    """The swept settings' columns of a per-seed CSV (between 'config' and 'seed')."""
    return list(header[header.index("config") + 1: header.index("seed")])


def _sort_key(text: str):
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def results_table(rows: Sequence[dict[str, str]], params: Sequence[str],
                  metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One row per configuration: its settings, the seed count and, per metric, the mean
    and the 95% t-interval over seeds (plus how many seeds reached perfect play)."""
    by_config: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_config.setdefault(row["config"], []).append(row)
    table = []
    for label, members in by_config.items():
        out: dict[str, Any] = {"config": label}
        out.update({p: members[0][p] for p in params})
        out["seeds"] = len(members)
        if REACHED in members[0]:
            out[REACHED] = sum(int(m[REACHED]) for m in members)
        for metric in metrics:
            if metric not in members[0]:
                continue
            mean, low, high = mean_ci([float(m[metric]) for m in members])
            out[f"{metric}_mean"], out[f"{metric}_ci_low"], out[f"{metric}_ci_high"] = (
                mean, low, high
            )
        table.append(out)
    table.sort(key=lambda r: [_sort_key(r[p]) for p in params])
    return table


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Writes rows (all with the same keys) atomically."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["config"])
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def _number(x: float) -> str:
    if math.isnan(x):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def markdown_table(table: Sequence[dict[str, Any]], params: Sequence[str],
                   metrics: Sequence[str]) -> str:
    """The results table as Markdown: mean +- 95% CI half-width per metric; shares in %;
    a time to perfect play is marked '>=' when some seed never got there (censored)."""
    metrics = [m for m in metrics if table and f"{m}_mean" in table[0]]
    head = [p.split(".")[-1] for p in params] + ["seeds"]
    if table and REACHED in table[0]:
        head.append("perfect")
    head += metrics
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = [row[p] for p in params] + [str(row["seeds"])]
        if REACHED in row:
            cells.append(f"{row[REACHED]}/{row['seeds']}")
        for m in metrics:
            mean, high = row[f"{m}_mean"], row[f"{m}_ci_high"]
            if "share" in m or "accuracy" in m:  # in percent, two decimals
                text = f"{100 * mean:.2f}%"
                if not math.isnan(high):
                    text += f" ± {100 * (high - mean):.2f}"
            else:
                text = _number(mean)
                if not math.isnan(high):
                    text += f" ± {_number(high - mean)}"
            if m in TIME_METRICS and row.get(REACHED, row["seeds"]) < row["seeds"]:
                text = "≥ " + text
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


@dataclasses.dataclass
class SweepResult:
    """What `run_sweep` / `merge` did and produced."""

    groups_run: list[str]
    experiments_run: int
    experiments_skipped: int
    table: list[dict[str, Any]]
    markdown: str


def check_out_dir(out_dir: Path, base: TrainConfig) -> None:
    """Writes `sweep.json`, or checks a sweep already there used the same base config."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SWEEP_FILE
    data = {"base": json.loads(json.dumps(base.to_dict()))}  # tuples as JSON lists
    if path.is_file():
        saved = json.loads(path.read_text())["base"]
        different = [k for k in data["base"] if saved.get(k) != data["base"][k]]
        if different:
            raise ValueError(
                f"{out_dir} holds a sweep with another base config (differs in "
                f"{', '.join(different)}); use another --out or the same options"
            )
        return
    _write_json(path, data)


def merge(out_dir: Path, write: Callable[[str], None] | None = print) -> SweepResult:
    """Builds results.csv and sweep.png from every per-seed CSV in `out_dir`."""
    out_dir = Path(out_dir)
    path = out_dir / SWEEP_FILE
    if not path.is_file():
        raise ValueError(f"{out_dir} holds no sweep (no {SWEEP_FILE})")
    game = json.loads(path.read_text())["base"]["game"]
    header, rows = read_seed_rows(out_dir)
    if not rows:
        return SweepResult([], 0, 0, [], "(no finished experiments yet)")
    params = param_columns(header)
    metrics = table_metrics(game)
    table = results_table(rows, params, metrics)
    write_csv(out_dir / RESULTS_FILE, table)
    from azjax.sweep_plots import plot_sweep

    plot_sweep(rows, params, [m for m in metrics if m in header], out_dir / PLOT_FILE,
               title=f"{game}: {len(rows)} runs")
    if write is not None:
        write(f"wrote {out_dir / RESULTS_FILE} ({len(table)} configurations) and "
              f"{out_dir / PLOT_FILE}")
    return SweepResult([], 0, 0, table, markdown_table(table, params, metrics))


def prepare_sweep(base: TrainConfig, params: Sequence[Param], seeds: Sequence[int]
                  ) -> list[Experiment]:
    """The grid, every config checked (ValueError naming the configuration otherwise)."""
    from azjax.loop import check_config

    if base.regime != "alphazero":
        raise ValueError("sweeps run the alphazero regime only (--regime alphazero)")
    if not seeds:
        raise ValueError("need at least one seed")
    env = base.make_env()
    experiments = make_grid(base, params, seeds)
    checked = set()
    for e in experiments:
        if e.label not in checked:
            try:
                check_config(env, e.config)
            except ValueError as err:
                raise ValueError(f"{e.label}: {err}") from None
            checked.add(e.label)
    return experiments


class _Status:
    """Status lines of a sweep: iterations over all its groups, rate and ETA."""

    def __init__(self, progress, num_groups: int, budget: int, perfect: bool,
                 hook: Callable[[int, int, bool], None] | None):
        self.progress, self.num_groups, self.budget = progress, num_groups, budget
        self.perfect, self.hook = perfect, hook
        self.number, self.size = 0, 0

    def start_group(self, number: int, size: int) -> None:
        self.number, self.size = number, size

    def __call__(self, iteration: int, perfect: int, finished: bool) -> None:
        if self.hook is not None:
            self.hook(iteration, perfect, finished)
        extra = f"group {self.number}/{self.num_groups} it {iteration}/{self.budget}"
        if self.perfect:
            extra += f" | perfect {perfect}/{self.size}"
        # A group that stopped early counts its whole budget as done.
        done = (self.number - 1) * self.budget + (self.budget if finished else iteration)
        self.progress.update(done, extra)


def run_sweep(
    base: TrainConfig,
    params: Sequence[Param],
    seeds: Sequence[int],
    out_dir: Path | str,
    shard: tuple[int, int] = (1, 1),
    write: Callable[[str], None] | None = print,
    checkpoint: bool = True,
    on_iteration: Callable[[int, int, bool], None] | None = None,
) -> SweepResult:
    """Runs this shard's part of the grid (skipping experiments already in a per-seed
    CSV), then builds the results table and plots from all per-seed CSVs present.

    `on_iteration(iteration, perfect, finished)` is called after each group iteration.
    """
    from azjax.progress import Progress

    out_dir = Path(out_dir)
    say = write or (lambda _: None)
    experiments = prepare_sweep(base, params, seeds)
    check_out_dir(out_dir, base)
    groups = group_experiments(experiments)
    mine = split_shards(groups, shard[1])[shard[0] - 1]
    _, rows = read_seed_rows(out_dir)
    finished = {(r["config"], int(r["seed"])) for r in rows}
    todo, skipped = [], 0
    for group in mine:
        left = tuple(e for e in group.experiments if e.key not in finished)
        skipped += group.size - len(left)
        if left:
            todo.append(Group(left))
    total_exp = sum(g.size for g in mine)
    say(f"sweep: {len(experiments)} experiments in {len(groups)} compile groups; "
        f"shard {shard[0]}/{shard[1]}: {total_exp} experiments, {skipped} already done, "
        f"{len(todo)} groups to run")
    csv_path = out_dir / seed_csv_name(shard)
    group_dirs = [out_dir / GROUPS_DIR / g.id for g in todo]
    restored = sum(saved_iteration(d) for d in group_dirs) if checkpoint else 0
    progress = Progress(base.iterations * len(todo), unit="it", label="sweep",
                        initial=restored, write=say, every=STATUS_EVERY_S)
    status = _Status(progress, len(todo), base.iterations, base.game in PERFECT_GAMES,
                     on_iteration)
    ran = []
    for number, (group, group_dir) in enumerate(zip(todo, group_dirs), 1):
        shown = "; ".join(dict.fromkeys(e.label for e in group.experiments))
        say(f"group {number}/{len(todo)} ({group.id}): {group.size} experiments as one "
            f"vmapped program: {shown}; seeds {sorted({e.seed for e in group.experiments})}")
        status.start_group(number, group.size)
        rows = run_group(group, group_dir if checkpoint else None, write=say,
                         on_iteration=status)
        append_rows(csv_path, rows)
        if checkpoint:
            shutil.rmtree(group_dir, ignore_errors=True)
        ran.append(group.id)
    result = merge(out_dir, write=say)
    result.groups_run = ran
    result.experiments_run = sum(g.size for g in todo)
    result.experiments_skipped = skipped
    return result
