"""A trained agent: network (+ search) loaded from a run directory."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chex
import jax

from azjax import checkpoint as ckpt
from azjax.config import TrainConfig
from azjax.loop import init_train_state, make_network
from azjax.players import Player, network_player, search_player
from azjax.search import SearchConfig
from envs import Env, State


class Agent:
    """A policy-value network and the search that uses it.

    `evaluate(obs)` runs the network alone; `act(states, key)` runs network + search.
    """

    def __init__(self, env: Env, config: TrainConfig, params: chex.ArrayTree,
                 search: SearchConfig | None = None):
        self.env = env
        self.config = config
        self.params = params
        self.search_config = search or config.search
        net = make_network(env, config)
        self._net_apply = net.apply
        self._apply = jax.jit(net.apply)

        def act(params, states, key, greedy):
            player = search_player(env, net.apply, params, self.search_config, greedy=greedy)
            return player.act(states, key)

        self._act = jax.jit(act, static_argnums=3)

    @classmethod
    def load(cls, run_dir: str | Path, step: int | None = None,
             search: SearchConfig | None = None) -> "Agent":
        """The agent of a run directory's newest (or `step`) checkpoint.

        Raises RunDirError when the directory is missing or holds no run/checkpoint.
        """
        run_dir = Path(run_dir)
        config = ckpt.load_config(run_dir)
        env = config.make_env()
        abstract = jax.eval_shape(lambda: init_train_state(env, config, jax.random.key(0)).params)
        manager = ckpt.checkpoint_manager(run_dir)
        try:
            if manager.latest_step() is None:
                raise ckpt.RunDirError(f"{str(run_dir)!r} holds no checkpoint yet")
            params = ckpt.restore_params(manager, abstract, step)
        finally:
            manager.close()
        return cls(env, config, params, search)

    def with_search(self, **changes) -> "Agent":
        """The same network with its search config changed (e.g. `num_simulations=200`);
        ValueError for a bad setting."""
        search = dataclasses.replace(self.search_config, **changes)
        search.validate()
        return Agent(self.env, self.config, self.params, search)

    def player(self, kind: str = "alphazero", name: str | None = None,
               greedy: bool = True) -> Player:
        """This agent as an arena `Player`: 'alphazero' (network + its search config) or
        'network' (the policy head alone)."""
        if kind == "network":
            return network_player(self._apply, self.params, name or "network", greedy)
        if kind == "alphazero":
            return search_player(
                self.env, self._net_apply, self.params, self.search_config,
                name or "alphazero", greedy,
            )
        raise ValueError(f"player kind must be 'alphazero' or 'network', got {kind!r}")

    def evaluate(self, obs: chex.Array) -> tuple[chex.Array, chex.Array]:
        """Network policy logits [B, A] and values [B] for observations [B, *obs_shape]."""
        chex.assert_shape(obs, (None, *self.env.observation_shape))
        return self._apply(self.params, obs)

    def act(self, states: State, key: chex.PRNGKey, greedy: bool = True) -> chex.Array:
        """Actions [B] for batched live states: the search's greedy choice (noise off) by
        default, or a sample from its policy with `greedy=False`."""
        chex.assert_rank(states.legal_action_mask, 2)
        return self._act(self.params, states, key, greedy)
