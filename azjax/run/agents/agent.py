"""A trained agent: network (+ search) loaded from a run directory or an exported file."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import chex
import jax

from azjax.core.networks import abstract_params, make_network
from azjax.core.players import AgentParams, Player, compiled, network_player, search_player
from azjax.core.program import ProgramConfig
from azjax.core.search import (
    SearchConfig,
    deterministic,
    greedy_action,
    make_search_fn,
    masked_logits,
    play_search,
    principal_variation,
    root_q,
    root_value,
    visit_counts,
)
from azjax.core.tree_reuse import KeptTree, make_reusing_search_fn
from azjax.run.agents.agent_file import AgentFileError, read_agent, write_agent_file
from azjax.run.agents.provenance import Provenance
from azjax.run.agents.run_provenance import run_provenance
from azjax.run.agents.shipped_agents import listed as shipped_agents
from azjax.run.agents.shipped_agents import resolve
from azjax.run.directory.checkpoint import DamagedCheckpointWarning
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir
from envs import Env, State


class Analysis(NamedTuple):
    """The agent's greedy search from a batch of positions [B]; values are from the point
    of view of the player to move, in [-1, 1]."""

    action: chex.Array  # int32 [B] the search's choice: the move the agent plays
    visits: chex.Array  # [B, A] root visit counts
    value: chex.Array  # [B] the search's value of the position
    network_value: chex.Array  # [B] the network's value of the position
    q: chex.Array  # [B, A] the search's value of each move (0 where not visited)
    prior: chex.Array  # [B, A] the network's policy over the legal moves
    principal_variation: chex.Array  # int32 [B, L] the expected line, -1 past its end


class Agent:
    """A policy-value network and the search that uses it.

    `evaluate(obs)` runs the network alone; `act(states, key)` runs network + search.
    `program` is the program config it was trained with; `search_config` the search `act`
    uses (unless overridden: of a run, the training one with its play settings,
    `play_search`; of an agent file, the one it was exported with); `provenance` where
    it came from (`azjax.run.agents.provenance`).
    """

    def __init__(self, env: Env, program: ProgramConfig, params: chex.ArrayTree,
                 search: SearchConfig | None = None,
                 provenance: Provenance | Callable[[], Provenance] | None = None):
        self.env = env
        self.program = program
        self.params = params
        self.search_config = search or play_search(program.search)
        # A run's provenance reads its metrics and asks git: only when someone asks
        # (`provenance`), not on every load (a league loads many checkpoints).
        self._provenance = provenance or Provenance()
        self.network = make_network(env, program.network, gradients=False)
        self._templates: dict[tuple[str, bool], Player] = {}
        self._apply = jax.jit(self.network.apply)
        self._analysis = None
        self._kept: KeptTree | None = None

    @property
    def provenance(self) -> Provenance:
        """Where this agent came from.

        Returns:
          Of an agent file, the provenance it records (nothing recorded, every fact
          "not recorded", for a file written before azjax recorded it); of a run
          directory, what `export` would record (`azjax.run.agents.run_provenance`), not yet
          dated; of an agent built by hand, nothing recorded.
        """
        if not isinstance(self._provenance, Provenance):
            self._provenance = self._provenance()
        return self._provenance

    @classmethod
    def load(cls, path: str | Path | RunDir, step: int | None = None,
             search: SearchConfig | None = None, env: Env | None = None) -> "Agent":
        """The agent of a run directory's newest (or `step`) checkpoint, of a file
        written by `export`, or of a shipped agent named by its name (`"go7x7"`,
        `azjax.run.agents.shipped_agents`; a path that exists wins over a name).

        Only the network parameters are read, into shapes built from the network config
        alone. The game is the one the config names (`envs.make`), or `env` when given
        (a game that no import path reaches, e.g. one defined in a script's `__main__`).
        Raises RunDirError when the directory is missing (and no shipped agent has that
        name) or holds no run or checkpoint, and AgentFileError for a file that is not an
        exported agent.
        """
        path = resolve(path)
        games: dict[str, Env] = {}

        def params_shapes(program: ProgramConfig) -> chex.ArrayTree:
            games["env"] = env if env is not None else program.make_env()
            return abstract_params(games["env"], program.network)

        if path.is_file():
            if step is not None:
                raise AgentFileError(f"{str(path)!r} is an agent file: it has no steps")
            program, params, provenance = read_agent(path, params_shapes)
            # The file's search is the one the agent played with when exported: its play
            # settings were applied then, and applying them again would undo `with_search`.
            return cls(games["env"], program, params, search or program.search, provenance)
        run = RunDir.open(path)
        if not run.path.exists():
            raise RunDirError(f"run directory {str(run.path)!r} does not exist, and no "
                              f"shipped agent has that name ({shipped_agents()})")
        config = run.load_config()
        restored = run.checkpoints.restore_params(params_shapes(config.program), step)
        notice = restored.notice(run)
        if notice:
            warnings.warn(notice, DamagedCheckpointWarning, stacklevel=2)
        return cls(games["env"], config.program, restored.tree, search,
                   functools.partial(run_provenance, run, restored.step, config))

    def export(self, path: str | Path) -> Path:
        """Writes this agent to one file that `Agent.load(path)` reads back.

        Args:
          path: the file to write (conventionally `*.azjax`).

        Returns:
          The path. The file holds the program config with this agent's search
          (`search_config`, `with_search` changes included), the weights, and
          `provenance` dated today (UTC).
        """
        program = dataclasses.replace(self.program, search=self.search_config)
        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        provenance = dataclasses.replace(self.provenance, exported=today)
        return write_agent_file(path, program, self.params, provenance)

    def with_search(self, **changes) -> "Agent":
        """The same network, and provenance, with its search config changed (e.g.
        `num_simulations=200`); ValueError for a bad setting."""
        search = dataclasses.replace(self.search_config, **changes)
        return Agent(self.env, self.program, self.params, search, self._provenance)

    def player(self, kind: str = "alphazero", name: str | None = None,
               greedy: bool = True) -> Player:
        """This agent as a `Player`: 'alphazero' (network + its search config) or
        'network' (the policy head alone); greedy, or sampling with `greedy=False`."""
        if kind not in ("alphazero", "network"):
            raise ValueError(f"player kind must be 'alphazero' or 'network', got {kind!r}")
        if (kind, greedy) not in self._templates:
            apply_fn = self.network.apply
            self._templates[kind, greedy] = (
                network_player(apply_fn, None, kind, greedy) if kind == "network"
                else search_player(self.env, apply_fn, None, self.search_config, kind, greedy)
            )
        template = self._templates[kind, greedy]
        params = self.params
        if kind == "alphazero":
            params = AgentParams(self.params, template.params.search)
        return template.with_params(params, name or kind)

    def evaluate(self, obs: chex.Array) -> tuple[chex.Array, chex.Array]:
        """Network policy logits [B, A] and values [B] for observations [B, *obs_shape]."""
        chex.assert_shape(obs, (None, *self.env.observation_shape))
        return self._apply(self.params, obs)

    def act(self, states: State, key: chex.PRNGKey, greedy: bool = True) -> chex.Array:
        """Actions [B] for batched live states: the search's greedy choice (noise off) by
        default, or a sample from its policy with `greedy=False`. The key is consumed."""
        chex.assert_rank(states.legal_action_mask, 2)
        player = self.player("alphazero", greedy=greedy)
        if player.memory is None:
            return compiled(player.policy)(player.params, states, key)
        actions, self._kept = compiled(player.memory.policy)(
            player.params, states, key, self._kept_tree(states))
        return actions

    def _kept_tree(self, states: State) -> KeptTree:
        """The tree the last search of a batch of this size kept (with `reuse_tree`): a
        search finds its position in it, or starts afresh (`azjax.core.tree_reuse`)."""
        batch = states.legal_action_mask.shape[0]
        if self._kept is None or self._kept.nodes.shape[0] != batch:
            player = self.player("alphazero")
            self._kept = compiled(player.memory.init)(player.params, states)
        return self._kept

    def analyse(self, states: State, key: chex.PRNGKey) -> Analysis:
        """The greedy search (root noise off, as `act`) from live states [B]: its move,
        root visit counts, the search's value of the position and of each move, the
        network's value and policy, and the principal variation (up to 8 plies). With
        `reuse_tree` the search starts from the tree its last search kept, as `act`'s."""
        chex.assert_rank(states.legal_action_mask, 2)
        if self._analysis is None:
            config, apply_fn = self.search_config, self.network.apply
            length = min(8, config.num_simulations)
            if config.reuse_tree:
                reusing_fn = make_reusing_search_fn(self.env, apply_fn, config)

                def search_fn(params, search, key, states, kept):
                    found = reusing_fn(params, search, key, states, kept)
                    return found.output, found.kept
            else:
                fresh_fn = make_search_fn(self.env, apply_fn, config)

                def search_fn(params, search, key, states, kept):
                    return fresh_fn(params, search, key, states), kept

            def analysis(params, search, states, key, kept):
                search_key, tie_key, line_key = jax.random.split(key, 3)
                output, kept = search_fn(params, deterministic(search), search_key, states,
                                         kept)
                logits, network_value = apply_fn(params, states.observation)
                prior = jax.nn.softmax(masked_logits(logits, states.legal_action_mask))
                action = greedy_action(config, output, tie_key)
                return Analysis(action, visit_counts(output), root_value(output),
                                network_value, root_q(output), prior,
                                principal_variation(output, action, length, line_key)), kept

            self._analysis = jax.jit(analysis)
        kept = self._kept_tree(states) if self.search_config.reuse_tree else None
        found, kept = self._analysis(self.params, self.search_config.as_arrays(), states,
                                     key, kept)
        if self.search_config.reuse_tree:
            self._kept = kept
        return found
