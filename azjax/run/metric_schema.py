"""The one schema of what a run logs to `metrics.jsonl`: for every metric its name (the
record's JSON key), a label (plots, the status line), a unit and which way is better.

A record holds the metrics of its iteration: training losses, self-play shares, the
host's counters and clock, and, when due, an evaluation (ground truth or games against
baselines) and a gate. Most keys are fixed names (`SCHEMA`); a few are built from a
pattern (`FAMILIES`): the score against a baseline is `vs <spec>` (`versus_key`), the
points margin against it `margin vs <spec>` (`margin_key`), and a game's own ground
truth reports `net_<name>` and `search_<name>` (`ground_truth_key`). `metric(key)` finds
the description of any key, fixed or built.

A figure of a game's own (`net_<name>` of its ground truth's checks, say) has the unit
and direction its game declares (`Env.metric_kinds`, turned into descriptions by
`declare`); one that no one declares has a label but no unit and no better direction, so
that it is shown as a plain number (`declared_metric` is None for it).

The keys are what existing runs, notebooks and docs read: they never change here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

HIGHER, LOWER, NONE = "higher", "lower", "none"
"""Which way a metric is better (`Metric.better`): NONE for a description of the run
(a share of draws, a game length) that no direction improves."""
SHARE, FLAG = "share", "0/1"
"""The units the status line and the plots show in their own way: a share in [0, 1]
(in percent) and a yes/no flag."""


@dataclasses.dataclass(frozen=True)
class Metric:
    """One metric of a metrics record.

    Attributes:
      name: its key in a record (and in metrics.jsonl).
      label: its name in plots and legends.
      unit: what its value counts (SHARE, FLAG, 'nats', 'seconds', ...; '' for none).
      better: HIGHER, LOWER or NONE.
      doc: one line on what it is.
      short: its name on the status line, where shorter than `label`.
    """

    name: str
    label: str
    unit: str
    better: str
    doc: str
    short: str = ""

    @property
    def status_label(self) -> str:
        """The status line's name of the metric (`short`, else `label`)."""
        return self.short or self.label


@dataclasses.dataclass(frozen=True)
class Family:
    """Metrics whose keys share a prefix: `prefix + what` (a baseline's spec, a name).

    Attributes:
      prefix: how every key of the family begins.
      label: the label of a key is this prefix followed by `what` (its underscores as
        spaces).
      unit, better: as `Metric`'s, the same for every key.
      doc: one line on what its keys are.
    """

    prefix: str
    label: str
    unit: str
    better: str
    doc: str

    def key(self, what: str) -> str:
        """The key of `what` in this family.

        Args:
          what: a baseline's spec, or a ground-truth metric's name.

        Returns:
          `prefix + what`.
        """
        return self.prefix + what

    def metric(self, key: str) -> Metric:
        """The description of one of the family's keys."""
        what = key[len(self.prefix):]
        return Metric(key, self.label + what.replace("_", " "), self.unit, self.better,
                      self.doc)


def _m(name: str, label: str, unit: str, better: str, doc: str, short: str = "") -> Metric:
    return Metric(name, label, unit, better, doc, short)


# Training (`azjax.core.iteration`): means over the iteration's gradient steps.
LOSS = _m("loss", "loss", "", LOWER, "total loss: value + policy + L2 term")
VALUE_LOSS = _m("value_loss", "value loss", "", LOWER, "squared error of the value head", "v")
POLICY_LOSS = _m("policy_loss", "policy loss", "nats", LOWER,
                 "cross-entropy of the policy head against the search policy", "p")
POLICY_ENTROPY = _m("policy_entropy", "policy entropy", "nats", NONE,
                    "entropy of the network's policy on training positions", "H")
OWNERSHIP_LOSS = _m("ownership_loss", "ownership loss", "", LOWER,
                    "squared error of the ownership head (Go)")
SCORE_LOSS = _m("score_loss", "score loss", "", LOWER,
                "squared error of the score head's margin per cell (Go)")
LOSSES = (LOSS, VALUE_LOSS, POLICY_LOSS)
"""The losses every training iteration reports; a record whose one of them is not finite
has diverged."""

# Self-play (`azjax.core.iteration`): the games that ended in the iteration.
GAMES_FINISHED = _m("games_finished", "games finished", "games", NONE,
                    "self-play games that ended in the iteration")
MEAN_GAME_LENGTH = _m("mean_game_length", "mean game length", "plies", NONE,
                      "mean length of those games")
FIRST_PLAYER_WIN = _m("first_player_win", "first player wins", SHARE, NONE,
                      "share of those games the first player won")
DRAW = _m("draw", "draws", SHARE, NONE, "share of those games drawn")
SECOND_PLAYER_WIN = _m("second_player_win", "second player wins", SHARE, NONE,
                       "share of those games the second player won")
SEARCH_VALUE = _m("search_value", "search value", "", NONE,
                  "mean root value of the self-play searches, in [-1, 1]")
REPLAY_SAMPLEABLE = _m("replay_sampleable", "replay positions", "positions", NONE,
                       "positions in replay with a known outcome (0: nothing to learn from)")
RESIGNED = _m("resigned", "resigned", SHARE, NONE,
              "share of the ended games that ended by resignation")
RESIGN_CHECKED = _m("resign_checked", "resignations checked", "games", NONE,
                    "games played on past a resignation, to check it")
FALSE_RESIGN = _m("false_resign", "false resignations", "games", LOWER,
                  "of those, games the resigning player won or drew")
REUSED_VISITS = _m("reused_visits", "reused visits", SHARE, NONE,
                   "with search.reuse_tree, the share of the searches' root visits that "
                   "the tree kept from the move before brought")
RESTARTED = _m("restarted", "restarted games", SHARE, NONE,
               "with selfplay.restart_prob, the share of the games begun that started "
               "from an archived state")

# The host (`azjax.driver.host_run`): counters and clock.
ITERATION = _m("iteration", "iteration", "iterations", NONE, "the iteration logged", "it")
GAMES = _m("games", "self-play games", "games", NONE,
           "self-play games ended since the run began", "games")
POSITIONS = _m("positions", "positions", "positions", NONE,
               "self-play positions played since the run began")
POSITIONS_PER_S = _m("positions_per_s", "positions per second", "positions/s", HIGHER,
                     "self-play positions per second since the last record", "pos/s")
WALL_TIME = _m("wall_time", "wall time", "seconds", NONE,
               "seconds of training since the run began (resumed runs add up)")
DEVICE_PEAK_BYTES = _m("device_peak_bytes", "device peak memory", "bytes", LOWER,
                       "peak memory of the device so far, where the device says")

# Evaluation (`azjax.evaluation.evaluators`), in records where one was due.
PERFECT = _m("perfect", "perfect play", FLAG, HIGHER,
             "the network alone plays right in every reachable position (complete ground "
             "truth)")
EVALUATION_SKIPPED = _m("evaluation_skipped", "evaluation skipped", FLAG, NONE,
                        "an evaluation was due but a stop signal skipped it")
NET_VALUE_ACCURACY = _m("net_value_accuracy", "net value sign", SHARE, HIGHER,
                        "share of ground-truth positions where the value's sign is right")

# Gating (`azjax.evaluation.gating`), in records where a gate was due.
GATE_SCORE = _m("gate_score", "gate score", SHARE, HIGHER,
                "the latest network's score against the best one in the arena", "gate")
PROMOTED = _m("promoted", "promoted", FLAG, NONE, "the latest network became the best one")
BEST_ITERATION = _m("best_iteration", "best iteration", "iterations", NONE,
                    "the iteration of the best network (after the gate)")

NET, SEARCH = "net", "search"
PLAYERS = {NET: "the network alone (greedy)", SEARCH: "network + search (noise off)"}
"""Who an evaluation measures: the prefix of its keys (`ground_truth_key`), and what it
is."""
VS_RANDOM = "vs_random"
"""The name (after the player's) of the score against uniformly random play."""
# The figures of each player an evaluation reports for the bundled games (their
# `envs.*.GROUND_TRUTH`, or games against random play), by name: the label after the
# player's, and what it is.
_PLAYER_FIGURES = {
    "optimal_share": ("optimal", "share of reachable positions with an optimal move"),
    "unbeatable": ("unbeatable", "never loses from either seat (tic-tac-toe)"),
    "unbeatable_first": ("unbeatable first", "never loses as the first player"),
    "unbeatable_second": ("unbeatable second", "never loses as the second player"),
    "move_accuracy": ("moves", "share of solver positions with an optimal move"),
    "move_accuracy_hard": ("hard moves", "the same where a wrong move is no immediate win"),
    "result_kept": ("results kept", "share of solver positions whose move keeps the result"),
    "result_kept_hard": ("hard results kept", "the same on the hard positions"),
    "winning_move_share": ("winning moves", "share of winning moves where there is one"),
    VS_RANDOM: ("vs random", "score against uniformly random play (no ground truth)"),
}
_FLAGS = ("unbeatable", "unbeatable_first", "unbeatable_second")


def ground_truth_key(player: str, name: str, subset: str = "") -> str:
    """The key of a ground-truth figure of one player.

    Args:
      player: NET or SEARCH (`PLAYERS`).
      name: the figure (a `GroundTruthSource.metric`, or a name its checks report).
      subset: a subset of the positions ('' for all of them).

    Returns:
      `<player>_<name>`, and `_<subset>` after it for a subset.
    """
    if player not in PLAYERS:
        raise ValueError(f"no player {player!r}: one of {', '.join(PLAYERS)}")
    return f"{player}_{name}" + (f"_{subset}" if subset else "")


PLAYER_FIGURES = tuple(
    _m(ground_truth_key(player, name), f"{player} {label}", FLAG if name in _FLAGS else SHARE,
       HIGHER, f"{doc}: {who}")
    for name, (label, doc) in _PLAYER_FIGURES.items() for player, who in PLAYERS.items())

VERSUS = Family("vs ", "vs ", SHARE, HIGHER,
                "score (wins + draws / 2) against the baseline of that spec "
                "(`run.eval_opponents`)")
MARGIN = Family("margin vs ", "margin vs ", "points", HIGHER,
                "mean points margin against that baseline, in a game decided by points")
FIGURES = tuple(Family(f"{p}_", f"{p} ", "", NONE,
                       f"a game's own figure: {who}; unit and direction as the game "
                       "declares them (`Env.metric_kinds`; a share for its ground truth's "
                       "share of right moves), else none")
                for p, who in PLAYERS.items())
"""A game's own figures: the keys its evaluation reports that `SCHEMA` does not fix."""
FAMILIES = (MARGIN, VERSUS, *FIGURES)
"""The patterned keys, a longer prefix before any it begins with."""


def versus_key(spec: str) -> str:
    """The key of the score against the baseline `spec` (e.g. 'vs gnugo:1')."""
    return VERSUS.key(spec)


def margin_key(spec: str) -> str:
    """The key of the mean points margin against the baseline `spec`."""
    return MARGIN.key(spec)


SCHEMA: dict[str, Metric] = {m.name: m for m in (
    ITERATION, GAMES, POSITIONS, POSITIONS_PER_S, WALL_TIME, DEVICE_PEAK_BYTES,
    LOSS, VALUE_LOSS, POLICY_LOSS, POLICY_ENTROPY, OWNERSHIP_LOSS, SCORE_LOSS,
    GAMES_FINISHED, MEAN_GAME_LENGTH, FIRST_PLAYER_WIN, DRAW, SECOND_PLAYER_WIN,
    SEARCH_VALUE, REPLAY_SAMPLEABLE, RESIGNED, RESIGN_CHECKED, FALSE_RESIGN, REUSED_VISITS,
    RESTARTED, PERFECT, EVALUATION_SKIPPED, *PLAYER_FIGURES, NET_VALUE_ACCURACY,
    GATE_SCORE, PROMOTED, BEST_ITERATION)}
"""Every fixed key of a metrics record, by name."""

EVALUATION_SHOWN = tuple(SCHEMA[name] for name in (
    "net_optimal_share", "net_unbeatable", "search_optimal_share", "search_unbeatable",
    "net_move_accuracy", "net_move_accuracy_hard", "search_move_accuracy",
    "search_move_accuracy_hard", "net_value_accuracy", "search_result_kept",
    "search_result_kept_hard", "net_winning_move_share", "search_winning_move_share",
    "net_vs_random", "search_vs_random"))
"""The evaluation figures the status line and the plots show, in their order."""


def _family_of(key: str, families: Iterable[Family]) -> Family | None:
    return next((f for f in families
                 if key.startswith(f.prefix) and len(key) > len(f.prefix)), None)


def declared_metric(key: str, declared: Mapping[str, Metric] | None = None
                    ) -> Metric | None:
    """The description of a record's key where its unit and direction are known: a fixed
    key (`SCHEMA`), a baseline's score or margin, or a figure its game declares.

    Args:
      key: a key of a metrics record.
      declared: the game's own figures' descriptions by key (`declare`); None: none.

    Returns:
      Its `Metric`, or None where neither the schema nor the game declares it.
    """
    if key in SCHEMA:
        return SCHEMA[key]
    if declared and key in declared:
        return declared[key]
    family = _family_of(key, (MARGIN, VERSUS))
    return None if family is None else family.metric(key)


def metric(key: str, declared: Mapping[str, Metric] | None = None) -> Metric:
    """The description of a record's key, fixed (`SCHEMA`), built (`FAMILIES`) or
    declared by its game.

    Args:
      key: a key of a metrics record.
      declared: the game's own figures' descriptions by key (`declare`); None: none.

    Returns:
      Its `Metric` (for a built key, one made from its family: a game's own figure that
      the game does not declare has no unit and no better direction).

    Raises:
      KeyError: for a key the schema does not know.
    """
    found = declared_metric(key, declared)
    if found is not None:
        return found
    family = _family_of(key, FIGURES)
    if family is None:
        raise KeyError(f"{key!r} is not a metric of azjax.run.metric_schema")
    return family.metric(key)


def declare(kinds: Mapping[str, tuple[str, str]], game: str) -> dict[str, Metric]:
    """The descriptions of a game's own figures, from what it declares of them
    (`Env.metric_kinds`).

    Args:
      kinds: figure name -> (unit, better): unit SHARE ('share', in [0, 1]), FLAG
        ('0/1') or any other ('points', '' for none); better HIGHER, LOWER or NONE
        ('higher', 'lower', 'none').
      game: the game's name, for errors.

    Returns:
      The `Metric` of `net_<name>` and of `search_<name>`, by key, for every name (a key
      of `SCHEMA` keeps the schema's description: `declared_metric` looks there first).

    Raises:
      ValueError: one line, for what is not such a dict.
    """
    where = f"{game}.metric_kinds()"
    if not isinstance(kinds, Mapping):
        raise ValueError(f"{where} must return a dict of name -> (unit, better), not "
                         f"{type(kinds).__name__}")
    out = {}
    for name, kind in kinds.items():
        if not (isinstance(name, str) and name and name == name.strip()):
            raise ValueError(f"{where}: each key must be a name, got {name!r}")
        if not (isinstance(kind, (tuple, list)) and len(kind) == 2
                and isinstance(kind[0], str) and kind[1] in (HIGHER, LOWER, NONE)):
            raise ValueError(f"{where}: {name!r} must be (unit, better) with better "
                             f"{HIGHER!r}, {LOWER!r} or {NONE!r}, got {kind!r}")
        for family in FIGURES:
            key = family.key(name)
            out[key] = dataclasses.replace(family.metric(key), unit=kind[0], better=kind[1],
                                           doc=f"{game}'s own figure, as it declares")
    return out


def is_known(key: str) -> bool:
    """Whether the schema describes `key` (`metric` finds it)."""
    try:
        metric(key)
    except KeyError:
        return False
    return True


def keys_of(records: Iterable[dict[str, Any]], family: Family) -> list[str]:
    """The keys of `family` that any of `records` holds, sorted.

    Args:
      records: metrics records (dicts).
      family: e.g. `VERSUS`.

    Returns:
      The distinct keys that begin with the family's prefix (not those of a family with
      a longer prefix that begins the same way).
    """
    longer = [f.prefix for f in FAMILIES
              if f.prefix != family.prefix and f.prefix.startswith(family.prefix)]
    return sorted({k for r in records for k in r
                   if k.startswith(family.prefix) and not k.startswith(tuple(longer))})


def best(items: Iterable[T], name: str, value: Callable[[T], float] = float,
         declared: Mapping[str, Metric] | None = None) -> T:
    """The best of `items` by the direction of the metric `name`.

    Args:
      items: numbers, or anything `value` reads a number from (records, table rows).
      name: a metric (a record's key) whose `better` is HIGHER or LOWER.
      value: an item's value of that metric.
      declared: the game's own figures' descriptions by key (`declare`); None: none.

    Returns:
      The item of the largest value for HIGHER, of the smallest for LOWER (the first of
      equals).

    Raises:
      ValueError: for a metric with no better direction, or no items.
    """
    direction = metric(name, declared).better
    if direction == NONE:
        raise ValueError(f"{name!r} has no better direction")
    return (max if direction == HIGHER else min)(items, key=value)


def markdown_table() -> str:
    """The schema as a Markdown table (the docs' table of metrics.jsonl is this one).

    Returns:
      One row per fixed key, then one per family (its keys shown as `prefix<...>`): key,
      label, unit, better, what it is.
    """
    lines = ["| key | label | unit | better | what |", "|---|---|---|---|---|"]
    rows = [(f"`{m.name}`", m) for m in SCHEMA.values()]
    rows += [(f"`{f.prefix}<{'spec' if 'vs' in f.prefix else 'name'}>`",
              Metric(f.prefix, f.label + "...", f.unit, f.better, f.doc)) for f in FAMILIES]
    for key, m in rows:
        lines.append(f"| {key} | {m.label} | {m.unit or '-'} | {m.better} | {m.doc} |")
    return "\n".join(lines)
