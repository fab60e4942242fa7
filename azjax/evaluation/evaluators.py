"""What a run reports about its agent while it trains.

An evaluator scores *players* (`azjax.core.players.Player`): `network_metrics(player)` for the
network alone (cheap; includes `perfect`, which stops training when the game's ground
truth says the network plays perfectly) and `search_metrics(player, key)` for network +
search (noise off; costlier, run less often). `make_evaluator(env)` picks the game's:

* `PositionEvaluator`: the share of positions where the player picks a right move, on the
  game's ground truth (`Env.ground_truth`: every reachable tic-tac-toe and coin-splitting
  position, Connect Four solver positions), and the value sign where winners are known;
* `RandomOpponentEvaluator`: the score against a uniformly random player (`play_match`),
  for a game without ground truth.

`versus` plays a player against chosen baselines (a run's `eval_opponents`).

Each evaluator's `declared_metrics` describes the figures of the game's own that it
reports (`azjax.run.metric_schema.declare`): its shares of right moves, and what the game
declares (`Env.metric_kinds`); a sweep's table shows the declared ones (`summary_metrics`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import chex
import jax
import numpy as np

from azjax.core.players import Player, compiled
from azjax.evaluation.baselines import random_player
from azjax.evaluation.match import play_match
from azjax.run.grammar.specs import PlayerFailed
from azjax.run.metric_schema import (
    HIGHER,
    NET,
    NET_VALUE_ACCURACY,
    PERFECT,
    SEARCH,
    SHARE,
    VS_RANDOM,
    Metric,
    declare,
    ground_truth_key,
    margin_key,
    versus_key,
)
from envs import Env, GroundTruth, GroundTruthSource


def _game_declared(env: Env, reported: Sequence[str]
                   ) -> tuple[dict[str, Metric], tuple[str, ...]]:
    """What the game declares of its own figures (`Env.metric_kinds`), and those of its
    keys that a sweep's table shows beside `reported` (the evaluator's own)."""
    declared = declare(env.metric_kinds(), env.name)
    return declared, tuple(k for k in declared if k not in reported)


class PositionEvaluator:
    """Scores players on a game's ground truth (`GroundTruthSource`), loaded on first use.

    Reports `<prefix><metric>` (share of counted positions with a right move), one share
    per subset, `net_value_accuracy` (where the ground truth knows winners and the player
    has a value) and the ground truth's own checks; `perfect` when the positions are
    every reachable one and the network alone chooses right in all of them.
    """

    def __init__(self, env: Env, source: GroundTruthSource):
        self.env = env
        self.source = source
        self.can_be_perfect = source.complete
        # What a sweep's table shows: with complete ground truth, the share of right moves
        # (next to the time to perfect play); else every share the evaluation makes.
        metric = source.metric
        self.summary_metrics: tuple[str, ...] = (ground_truth_key(NET, metric),)
        if not source.complete:
            self.summary_metrics += (
                *(ground_truth_key(NET, metric, name) for name in source.subsets),
                *((NET_VALUE_ACCURACY.name,) if source.values else ()),
                ground_truth_key(SEARCH, metric))
        shares = [metric, *(f"{metric}_{name}" for name in source.subsets)]
        declared, shown = _game_declared(env, self.summary_metrics)
        self.summary_metrics += shown
        # Its shares of right moves are shares, whatever the game declares.
        self.declared_metrics = {**declared,
                                 **declare(dict.fromkeys(shares, (SHARE, HIGHER)), env.name)}

    @functools.cached_property
    def truth(self) -> GroundTruth:
        """The ground truth (loaded now if not yet; it must be what its source says)."""
        truth = self.source.load(self.env)
        if (tuple(truth.subsets) != self.source.subsets
                or (truth.value_states is not None) != self.source.values):
            raise ValueError(f"the ground truth of {self.env.name!r} does not match its "
                             "source's subsets and values")
        return truth

    def prepare(self) -> None:
        """Loads the ground truth now, not at the first evaluation (the driver calls it
        while the first training step compiles)."""
        _ = self.truth

    def actions(self, player: Player, key: chex.PRNGKey | None = None) -> np.ndarray:
        """The player's move [N] in every ground-truth position (a greedy network player
        needs no key)."""
        key = jax.random.key(0) if key is None else key
        act = compiled(player.policy)(player.params, self.truth.states, key)
        return np.asarray(jax.device_get(act))

    def score(self, actions: np.ndarray, player: str) -> dict[str, float]:
        """Shares of right moves (all counted positions, and each subset) and the ground
        truth's own checks (1.0 passed, 0.0 failed), for a table of actions [N] of
        `player` (NET or SEARCH of `azjax.run.metric_schema`: the keys' prefix)."""
        truth, metric = self.truth, self.source.metric
        right = truth.right_moves[np.arange(len(actions)), actions]
        out = {ground_truth_key(player, metric): _share(right, truth.counted)}
        for name, subset in truth.subsets.items():
            out[ground_truth_key(player, metric, name)] = _share(right, subset)
        if truth.check_actions is not None:
            out.update({ground_truth_key(player, k): v
                        for k, v in truth.check_actions(actions).items()})
        return out

    def network_metrics(self, player: Player) -> dict[str, float]:
        """The network alone (a greedy network player), its value sign, and `perfect`:
        complete ground truth, a right move everywhere and every check passed."""
        metrics = self.score(self.actions(player), NET)
        perfect = self.can_be_perfect and all(v == 1.0 for v in metrics.values())
        truth = self.truth
        if truth.value_states is not None and player.value is not None:
            value = compiled(player.value)(player.params, truth.value_states)
            right = (np.asarray(jax.device_get(value)) > 0) == (truth.value_sign > 0)
            metrics[NET_VALUE_ACCURACY.name] = float(right.mean())
        metrics[PERFECT.name] = float(perfect)
        return metrics

    def search_metrics(self, player: Player, key: chex.PRNGKey) -> dict[str, float]:
        """Network + search (a greedy search player)."""
        return self.score(self.actions(player, key), SEARCH)


def _share(right: np.ndarray, counted: np.ndarray) -> float:
    return float(right[counted].mean()) if counted.any() else 1.0


class RandomOpponentEvaluator:
    """Score (wins + draws / 2) against a uniformly random player, half the games per
    seat: for games without ground truth."""

    can_be_perfect = False
    summary_metrics = (ground_truth_key(NET, VS_RANDOM), ground_truth_key(SEARCH, VS_RANDOM))

    def __init__(self, env: Env, net_games: int = 128, search_games: int = 32):
        self.env, self.net_games, self.search_games = env, net_games, search_games
        self.opponent = random_player()
        self.declared_metrics, shown = _game_declared(env, self.summary_metrics)
        self.summary_metrics = type(self).summary_metrics + shown

    def network_metrics(self, player: Player, key: chex.PRNGKey | None = None
                        ) -> dict[str, float]:
        """The network alone against random play (by default the same random opponent
        every time, so that a change between evaluations is the network's)."""
        key = jax.random.key(0) if key is None else key
        result = play_match(self.env, player, self.opponent, key, self.net_games)
        return {ground_truth_key(NET, VS_RANDOM): result.score, PERFECT.name: 0.0}

    def search_metrics(self, player: Player, key: chex.PRNGKey) -> dict[str, float]:
        """Network + search (noise off) against random play."""
        result = play_match(self.env, player, self.opponent, key, self.search_games)
        return {ground_truth_key(SEARCH, VS_RANDOM): result.score}


Evaluator = PositionEvaluator | RandomOpponentEvaluator


def make_evaluator(env: Env) -> Evaluator:
    """The evaluator of `env`: its ground truth (`Env.ground_truth`) where the game has
    one, else games against random play."""
    source = env.ground_truth()
    if source is None:
        return RandomOpponentEvaluator(env)
    if not isinstance(source, GroundTruthSource):
        raise ValueError(f"{env.name}.ground_truth() returned {type(source).__name__}, "
                         "not an envs.GroundTruthSource (or None)")
    return PositionEvaluator(env, source)


def versus(env: Env, player: Player, opponents: Sequence[Player], key: chex.PRNGKey,
           num_games: int, opening_plies: int = 0,
           failed: Callable[[str, PlayerFailed], None] | None = None) -> dict[str, float]:
    """`player`'s score against each opponent, as `{"vs <name>": score}` (one subkey
    each), and in a game decided by points its mean margin, `{"margin vs <name>": ...}`.
    With `failed`, an opponent that fails a move (`PlayerFailed`, e.g. GNU Go's) is passed to
    `failed(name, error)` and left out; the others still play."""
    keys = jax.random.split(key, len(opponents))
    by_points = env.score_margin() is not None
    out = {}
    for opponent, k in zip(opponents, keys):
        try:
            result = play_match(env, player, opponent, k, num_games, opening_plies,
                                record=by_points)
        except PlayerFailed as err:
            if failed is None:
                raise
            failed(opponent.name, err)
            continue
        out[versus_key(opponent.name)] = result.score
        if by_points:
            out[margin_key(opponent.name)] = result.mean_margin
    return out
