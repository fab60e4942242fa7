"""Training-time games against chosen baselines (`TrainConfig.eval_opponents`).

The agent is the network + search at the training budget, noise off. Each baseline is
a player spec (`azjax.player_specs`); its score is logged as `vs <spec>`.
"""

from __future__ import annotations

import functools

import chex
import jax

from azjax import match
from azjax.player_specs import make_player
from azjax.players import search_player
from azjax.search import SearchConfig
from envs import Env

PREFIX = "vs "


def metric_key(spec: str) -> str:
    """The metrics.jsonl key of the score against `spec`."""
    return PREFIX + spec


class OpponentEvaluator:
    """Plays the agent against each baseline; compiled once per baseline."""

    def __init__(self, env: Env, apply_fn, search: SearchConfig, specs, num_games: int,
                 opening_plies: int):
        self.env, self.num_games, self.opening_plies = env, num_games, opening_plies
        self.opponents = [make_player(spec, env) for spec in specs]

        def agent_act(params, states, key):
            return search_player(env, apply_fn, params, search).act(states, key)

        self._agent_act = jax.jit(agent_act)
        self._on_device = {}
        for opponent in self.opponents:
            if opponent.jittable:
                self._on_device[opponent.name] = jax.jit(
                    functools.partial(self._device_match, apply_fn, search, opponent.act)
                )

    def _device_match(self, apply_fn, search, opponent_act, params, key):
        agent = search_player(self.env, apply_fn, params, search)
        return match.play_match(self.env, agent.act, opponent_act, key, self.num_games,
                                opening_plies=self.opening_plies)

    def __call__(self, params, key: chex.PRNGKey) -> dict[str, float]:
        """Score (wins + draws / 2) against each baseline."""
        metrics = {}
        for opponent, opponent_key in zip(self.opponents,
                                          jax.random.split(key, len(self.opponents))):
            if opponent.name in self._on_device:
                results = self._on_device[opponent.name](params, opponent_key)
            else:
                results = match.play_match_host(
                    self.env, functools.partial(self._agent_act, params), opponent.act,
                    opponent_key, self.num_games, opening_plies=self.opening_plies,
                    traced=(True, False),
                )
            metrics[metric_key(opponent.name)] = match.score(results)["score"]
        return metrics
