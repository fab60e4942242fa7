"""The grid of a sweep: swept settings parsed from the command line, their product x seeds
as experiments, the experiments grouped by the program they compile to, and the groups
split into shards. Running them is `azjax.sweep.sweep`."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Sequence
from typing import Any

from azjax.core.fields import is_scalar, parse_setting
from azjax.core.search import policies_reading, search_changes
from azjax.run.config import TrainConfig, setting_paths
from azjax.run.game_options import option_value
from azjax.run.recipes import RECIPES

NOT_SWEPT = {
    "seed": "seeds are set with --seeds",
    "game": "a sweep trains one game",
    "game_options": "sweep one option with --param game_options.NAME=V1,V2,...",
    "eval_opponents": "not a scalar setting",
}


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
    head, dot, option = name.partition(".")
    if head == "game_options" and dot:
        if not option.isidentifier():
            raise ValueError(f"bad parameter {name!r}: game_options.NAME names one option")
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
    if path.startswith("game_options."):
        return option_value(path, text.strip(), where="bad --param")
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
        try:
            config = base.with_values(dict(assignment))
        except ValueError as err:
            raise ValueError(f"{config_label(assignment)}: {err}") from None
        for seed in seeds:
            experiments.append(Experiment(assignment, seed, config.replace(seed=seed)))
    return experiments


def reads_setting(config: TrainConfig, name: str) -> bool:
    """Whether a search of `config`'s training reads the search setting `name`: its
    self-play (and gating) search, or the search its evaluation scores
    (`run.eval_search_with`, unless that sets `name` itself). The search a trained
    agent plays with afterwards (`search.play_policy`) counts for nothing here: no
    figure of a sweep comes from it, and with the same seed the runs would train the
    same network.

    Args:
      config: an experiment's config.
      name: a `SearchConfig` field ('c_puct').

    Returns:
      Whether any of those searches reads it.
    """
    search = config.program.search
    if search.reads(name):
        return True
    changes = search_changes(config.run.eval_search_with)
    return (bool(changes) and name not in changes
            and dataclasses.replace(search, **changes).reads(name))


def _policy_source(config: TrainConfig) -> str:
    """Where an unswept `search.policy` comes from, as an error message names it."""
    game, policy = config.program.game, config.program.search.policy
    if game in RECIPES and RECIPES[game].program.search.policy == policy:
        return f"the {game} recipe's search.policy"
    return "the base config's search.policy"


def check_settings_read(params: Sequence[Param], experiments: Sequence[Experiment]
                        ) -> None:
    """Refuses a swept search setting that no experiment's search reads (a PUCT
    setting where every experiment searches with Gumbel, or the reverse): its values
    would train the same runs under different names.

    Args:
      params: the swept settings.
      experiments: the grid (`make_grid`).

    Raises:
      ValueError: one line naming the setting, the policy that never reads it and the
        options that would.
    """
    swept = {p.path: p for p in params}
    for param in params:
        head, _, name = param.path.partition(".")
        if head != "search" or any(reads_setting(e.config, name) for e in experiments):
            continue
        used = sorted({e.config.program.search.policy for e in experiments})
        readers = ",".join(policies_reading(name))
        if "search.policy" in swept:
            values = ",".join(str(v) for v in swept["search.policy"].values)
            where, fix = f"--param policy={values}", f"add {readers} to --param policy"
        else:
            where = _policy_source(experiments[0].config)
            fix = (f"sweep --param policy={readers},{','.join(used)} too, or set "
                   f"--search.policy {readers}")
        raise ValueError(f"{param.path} is never read by the {'/'.join(used)} search "
                         f"every experiment of this sweep uses ({where}); {fix}")


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
