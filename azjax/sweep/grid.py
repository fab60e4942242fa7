"""The grid of a sweep: swept settings parsed from the command line, their product x seeds
as experiments, the experiments grouped by the program they compile to, and the groups
split into shards. Running them is `azjax.sweep.sweep`."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from azjax.core.fields import is_scalar, parse_setting
from azjax.core.search import (
    NOISE_SETTINGS,
    SearchConfig,
    policies_reading,
    search_changes,
)
from azjax.run.config import TrainConfig, setting_paths
from azjax.run.grammar.game_options import option_value
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


@dataclasses.dataclass(frozen=True)
class Unread:
    """Why an experiment's training never reads a setting.

    Attributes:
      why: the reason, as a clause ('selfplay.full_search_prob is 1 (playout cap
        randomisation off)').
      needs: the option under which it would be read ('--selfplay.full-search-prob
        below 1'); '' where nothing a sweep measures ever reads it.
      policy: whether it is unread because of the search policy (`POLICY_SETTINGS`).
    """

    why: str
    needs: str
    policy: bool = False


SWITCHED: tuple[tuple[tuple[str, ...], Callable[[TrainConfig], bool], str, str], ...] = (
    # azjax.core.selfplay.make_play_fn: the cheap search runs only with the cap on.
    (("selfplay.cheap_simulations", "selfplay.cheap_moves"),
     lambda c: c.program.selfplay.full_search_prob >= 1.0,
     "selfplay.full_search_prob is 1 (playout cap randomisation off)",
     "--selfplay.full-search-prob below 1"),
    # azjax.core.selfplay.make_play_fn: the archive is kept only with restarts on.
    (("selfplay.archive_size", "selfplay.archive_prob"),
     lambda c: not c.program.selfplay.restarts,
     "selfplay.restart_prob is 0 (restarts off)", "--selfplay.restart-prob above 0"),
    # azjax.core.selfplay.init_games: the no-resign games are drawn with resignation on.
    (("selfplay.resign_playout_prob",),
     lambda c: not c.program.selfplay.resigns,
     "selfplay.resign_threshold is -1 (resignation off)",
     "--selfplay.resign-threshold above -1"),
    # azjax.core.search.make_search_fn: the utility is added only when its weight is > 0.
    (("search.score_utility_scale",),
     lambda c: c.program.search.score_utility <= 0,
     "search.score_utility is 0 (score utility off)", "--search.score-utility above 0"),
    # azjax.core.iteration: each auxiliary loss is weighed only where its head exists,
    # the score in the value target only with a mix above 0.
    (("learner.ownership_weight",), lambda c: not c.program.network.ownership_head,
     "the network has no ownership head", "--network.ownership-head"),
    (("learner.score_weight",), lambda c: not c.program.network.score_head,
     "the network has no score head", "--network.score-head"),
    (("learner.score_value_scale",), lambda c: c.program.learner.score_value_mix <= 0,
     "learner.score_value_mix is 0 (no score in the value target)",
     "--learner.score-value-mix above 0"),
    # azjax.core.networks.PolicyValueNet: the layers each torso and its heads build.
    (("network.num_blocks", "network.policy_filters", "network.value_filters",
      "network.value_hidden", "network.conv"),
     lambda c: c.program.network.torso == "mlp",
     "network.torso is mlp, which builds no conv layers", "--network.torso conv"),
    (("network.mlp_layers",), lambda c: c.program.network.torso != "mlp",
     "network.torso is conv", "--network.torso mlp"),
    (("network.value_filters",), lambda c: c.program.network.pooled_heads,
     "network.pooled_heads pools the value head's input", "--network.no-pooled-heads"),
    # azjax.driver.host_run: the gating arena plays under the gating regime alone.
    (("gate_every", "gate_games", "gate_threshold", "gate_simulations", "gate_openings"),
     lambda c: c.program.regime != "gating",
     "regime is alphazero, which has no gating arena", "--regime gating"),
    # azjax.driver.host_run._evaluate: games against baselines need baselines.
    (("eval_games", "eval_openings"),
     lambda c: not (c.run.evaluates and c.run.eval_opponents),
     "no --eval-opponents are played at evaluations", "--eval-opponents SPEC"),
    (("eval_simulations",),
     lambda c: not (c.run.evaluates and c.run.eval_search_every > 0),
     "the evaluation never scores the search (eval_search_every 0, or no evaluations)",
     "--eval-search-every above 0"),
    (("eval_search_every",), lambda c: not c.run.evaluates,
     "the run never evaluates (eval_every 0 and eval_every_minutes 0)",
     "--eval-every above 0"),
    # azjax.driver.warm_up: the warm-up's minutes count only where there is a warm-up.
    (("warm_up_minutes",), lambda c: not c.run.warm_up,
     "run.warm_up is '' (no warm-up)", "--warm-up RECIPE"),
)
"""Settings read only while another setting switches them on: (their paths, whether a
config has them off, why, the option that switches them on). Each was read off the code
named above it, so that no sweep is refused that would train different runs."""

PLAY_SETTINGS = ("play_simulations", "play_policy", "play_skip_futile")
"""Search settings of a trained agent's play (`azjax.core.search.play_search`: the arena,
the league, GTP), which neither training nor its evaluation reads."""


def _evaluation_search(config: TrainConfig) -> tuple[SearchConfig | None, dict[str, Any]]:
    """The search a run's evaluation scores on the game's ground truth.

    Args:
      config: an experiment's config.

    Returns:
      That search (`run.eval_search_with` applied to the training search; None where the
      run never scores a search: no evaluations, or `eval_search_every` 0), and the
      settings `eval_search_with` sets itself.
    """
    run = config.run
    if not (run.evaluates and run.eval_search_every > 0):
        return None, {}
    changes = search_changes(run.eval_search_with)
    return dataclasses.replace(config.program.search, **changes), changes


def _search_unread(config: TrainConfig, name: str) -> Unread | None:
    """Why `config`'s training never reads a search setting.

    Args:
      config: an experiment's config.
      name: a `SearchConfig` field ('c_puct').

    Returns:
      Why (`Unread`), or None where it is read.
    """
    search = config.program.search
    if name in PLAY_SETTINGS:
        return Unread("only a trained agent's play (the arena, the league) reads it, "
                      "neither training nor its evaluation", "")
    readers = policies_reading(name)
    if name in NOISE_SETTINGS:
        # Only self-play searches with the noise on: whatever the evaluation's policy,
        # its greedy search zeroes the noise.
        if search.policy not in readers:
            return Unread(f"the {search.policy} search never reads it, only "
                          f"{readers[0]}'s does, and only self-play reads the root noise "
                          "(evaluation and gating search with it off)",
                          f"--search.policy {readers[0]}", policy=True)
        if name == "dirichlet_alpha" and search.dirichlet_fraction <= 0:
            return Unread("search.dirichlet_fraction is 0 (no Dirichlet noise)",
                          "--search.dirichlet-fraction above 0")
        return None
    if search.reads(name):
        return None
    evaluated, changes = _evaluation_search(config)
    if evaluated is not None and name not in changes and evaluated.reads(name):
        return None
    return Unread(f"the {search.policy} search never reads it, only "
                  f"{'/'.join(readers)}'s does", f"--search.policy {'/'.join(readers)}",
                  policy=True)


def unread_settings(config: TrainConfig, paths: Sequence[str]) -> dict[str, Unread]:
    """The settings among `paths` that `config`'s training never reads, so that runs
    differing in them alone would be the same runs under other names.

    A search setting is read by the search self-play trains with, or by the search the
    evaluation scores (`run.eval_search_with`, unless that sets it itself), each of its
    policy (`POLICY_SETTINGS`); the root noise (`NOISE_SETTINGS`) by self-play alone,
    every other search of a run being greedy; a trained agent's play settings
    (`PLAY_SETTINGS`) by neither. A setting that another one switches on (playout cap
    randomisation's cheap simulations, resignation's playouts, a head's loss weight, a
    torso's layers, the gating arena's settings, ...) is read only while it is on.

    Args:
      config: an experiment's config.
      paths: setting paths ('search.c_puct', 'selfplay.cheap_simulations', 'gate_games').

    Returns:
      Each unread one of `paths`, in order, with why (`Unread`).
    """
    out: dict[str, Unread] = {}
    for path in paths:
        head, _, name = path.partition(".")
        if head == "search":
            found = _search_unread(config, name)
            if found is not None:
                out[path] = found
                continue
        for names, off, why, needs in SWITCHED:
            if path in names and off(config):
                out[path] = Unread(why, needs)
                break
    return out


def reads_setting(config: TrainConfig, name: str) -> bool:
    """Whether `config`'s training reads the search setting `name` (`unread_settings`):
    its self-play search, or the search its evaluation scores (`run.eval_search_with`,
    unless that sets `name` itself), the root noise by self-play alone. The search a
    trained agent plays with afterwards (`search.play_policy`) counts for nothing here:
    no figure of a sweep comes from it, and with the same seed the runs would train the
    same network.

    Args:
      config: an experiment's config.
      name: a `SearchConfig` field ('c_puct').

    Returns:
      Whether any of those searches reads it.
    """
    return f"search.{name}" not in unread_settings(config, [f"search.{name}"])


def _policy_source(config: TrainConfig) -> str:
    """Where an unswept `search.policy` comes from, as an error message names it."""
    game, policy = config.program.game, config.program.search.policy
    if game in RECIPES and RECIPES[game].program.search.policy == policy:
        return f"the {game} recipe's search.policy"
    return "the base config's search.policy"


def _never_read(param: Param, params: Sequence[Param], experiments: Sequence[Experiment],
                reasons: Sequence[Unread]) -> str:
    """The one line refusing a swept setting that no experiment reads.

    Args:
      param: the setting.
      params: every swept setting.
      experiments: the grid.
      reasons: why each configuration does not read it.

    Returns:
      The line: for a setting of the other search policy, the policy every experiment
      uses, where it comes from and how to sweep the other; else the first reason and
      the option that would have it read.
    """
    name = param.path.partition(".")[2]
    if not all(r.policy for r in reasons):
        first = reasons[0]
        fix = (f"set {first.needs} to sweep it" if first.needs else
               "leave it out of the sweep: no figure of a sweep comes from it")
        return (f"{param.path} is never read by any experiment of this sweep: "
                f"{first.why}; {fix}")
    swept = {p.path: p for p in params}
    used = sorted({e.config.program.search.policy for e in experiments})
    readers = ",".join(policies_reading(name))
    # Not "sweep the policy too": its other policy's configurations would then repeat
    # one configuration per value, which `check_settings_read` refuses as well.
    if "search.policy" in swept:
        values = ",".join(str(v) for v in swept["search.policy"].values)
        where = f"--param policy={values}"
        fix = f"sweep {param.name} in a separate sweep with --search.policy {readers}"
    else:
        where = _policy_source(experiments[0].config)
        fix = f"set --search.policy {readers} to sweep it"
    noise = ""
    if name in NOISE_SETTINGS and any(
            (found := _evaluation_search(e.config)[0]) is not None and found.reads(name)
            for e in experiments):
        noise = " (root noise: self-play alone reads it, evaluation searches without it)"
    return (f"{param.path} is never read by the {'/'.join(used)} search every experiment "
            f"of this sweep uses ({where}){noise}; {fix}")


def _quoted_labels(labels: Sequence[str]) -> str:
    """'a' and 'b'; 'a', 'b' and 'c'."""
    quoted = [f"'{label}'" for label in labels]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def check_settings_read(params: Sequence[Param], experiments: Sequence[Experiment]
                        ) -> None:
    """Refuses a sweep that would train the same runs under different names: a swept
    setting that no experiment reads (a PUCT setting where every experiment searches
    with Gumbel, or the reverse; playout cap randomisation's cheap simulations with the
    cap off), or configurations that differ only in settings that they do not read
    (`--param policy=puct,gumbel --param c_puct=1,2`: the two Gumbel configurations).

    Args:
      params: the swept settings.
      experiments: the grid (`make_grid`).

    Raises:
      ValueError: one line naming the setting and why it is not read, the duplicated
        configurations where some experiments do read it, and the fix.
    """
    paths = [p.path for p in params]
    configs = {e.label: e for e in experiments}  # one experiment per configuration
    unread = {label: unread_settings(e.config, paths) for label, e in configs.items()}
    for param in params:
        reasons = [found[param.path] for found in unread.values() if param.path in found]
        if len(reasons) == len(configs):
            raise ValueError(_never_read(param, params, experiments, reasons))
    # Configurations equal once the settings each does not read are set aside.
    same: dict[tuple, list[str]] = {}
    for label, e in configs.items():
        key = tuple((path, None if path in unread[label] else format_value(value))
                    for path, value in e.assignment)
        same.setdefault(key, []).append(label)
    for labels in same.values():
        if len(labels) < 2:
            continue
        first = configs[labels[0]]
        differing = [path for path, value in first.assignment
                     if any(configs[other].config.get(path) != value
                            for other in labels[1:])]
        path = next(p for p in differing if p in unread[labels[0]])
        reason = unread[labels[0]][path]
        name = path.split(".")[-1]
        fix = (f"sweep {name} in a separate sweep with {reason.needs}" if reason.needs else
               f"leave {name} out of the sweep: no figure of a sweep comes from it")
        raise ValueError(f"{_quoted_labels(labels)} would train the same runs: {path} is "
                         f"not read there: {reason.why}; {fix}")


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
