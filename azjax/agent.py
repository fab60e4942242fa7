"""A trained agent: network (+ search) loaded from a run directory or an exported file."""

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


def _abstract_params(config: TrainConfig) -> chex.ArrayTree:
    """Shapes and dtypes of the network parameters a config describes."""
    env = config.make_env()
    return jax.eval_shape(lambda: init_train_state(env, config, jax.random.key(0)).params)


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
    def load(cls, path: str | Path, step: int | None = None,
             search: SearchConfig | None = None) -> "Agent":
        """The agent of a run directory's newest (or `step`) checkpoint, or of a file
        written by `export`.

        Raises RunDirError when the directory is missing or holds no run/checkpoint, and
        AgentFileError for a file that is not an exported agent.
        """
        from azjax.export import AgentFileError, read_agent_file  # noqa: PLC0415 (python -m)

        path = Path(path)
        if path.is_file():
            if step is not None:
                raise AgentFileError(f"{str(path)!r} is an agent file: it has no steps")
            config, params = read_agent_file(path, _abstract_params)
            return cls(config.make_env(), config, params, search)
        config = ckpt.load_config(path)
        manager = ckpt.checkpoint_manager(path)
        try:
            if manager.latest_step() is None:
                raise ckpt.RunDirError(f"{str(path)!r} holds no checkpoint yet")
            params = ckpt.restore_params(manager, _abstract_params(config), step)
        finally:
            manager.close()
        return cls(config.make_env(), config, params, search)

    def export(self, path: str | Path) -> Path:
        """Writes this agent (config with its search settings, and weights) to one file
        that `Agent.load(path)` reads back; returns the path."""
        from azjax.export import write_agent_file  # noqa: PLC0415 (python -m azjax.export)

        config = dataclasses.replace(self.config, search=self.search_config)
        return write_agent_file(path, config, self.params)

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
