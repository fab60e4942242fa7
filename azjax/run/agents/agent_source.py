"""The agent a command line names (`--run-dir DIR`, `--agent FILE|NAME`): a run
directory, an agent file or a shipped agent's name, checked and loaded for
`azjax play`, `serve`, `gtp` and `league`."""

from __future__ import annotations

from pathlib import Path

import envs
from azjax.core import memory
from azjax.run.agents.agent import Agent
from azjax.run.agents.shipped_agents import listed, resolve


REUSE_TREE_HELP = ("start each search from the subtree the agent's last search kept "
                   "under the position (search.reuse_tree; docs/tree_reuse.md)")


def load_agent(game: str | None, path: str, simulations: int | None = None,
               options: dict | None = None, reuse_tree: bool = False) -> Agent:
    """The agent of a run directory or exported file, checked to play `game` (None: any
    game) and, where game `options` are given, on the board they make (its number of
    moves and observation shape; without options, the agent's own board),
    with its search budget set to `simulations` if given and its search keeping its tree
    between moves with `reuse_tree` (ValueError or OSError otherwise; a search that would
    not fit in memory is refused before anything is allocated)."""
    agent = Agent.load(path)
    wanted = agent.env if game is None else envs.make(game, **(options or {}))
    if agent.env.name != wanted.name:
        raise ValueError(f"{path!r} holds a {agent.env.name} agent, not {wanted.name}")
    if options and (agent.env.num_actions, agent.env.observation_shape) != (
            wanted.num_actions, wanted.observation_shape):
        raise ValueError(f"{path!r} holds a {agent.env.name} agent of another board "
                         f"({agent.env.num_actions} moves, not {wanted.num_actions}; trained "
                         f"with game options {agent.program.game_options})")
    changes = {} if simulations is None else {"num_simulations": simulations}
    if reuse_tree:
        changes["reuse_tree"] = True
    if changes:
        agent = agent.with_search(**changes)
        search = agent.search_config
        memory.check_fits(f"a search of {search.num_simulations:,} simulations",
                          memory.search_tree_bytes(agent.env, 1, search.tree_nodes - 1))
    return agent


def check_source(run_dir: str | None, agent_file: str | None) -> None:
    """ValueError for an agent file that is not one, nor a shipped agent's name
    (`run_dir` may name an agent file too: `Agent.load` reads either)."""
    if agent_file is not None and Path(agent_file).is_dir():
        raise ValueError(f"{agent_file!r} is a directory; use --run-dir for a run")
    if agent_file is not None and not resolve(agent_file).is_file():
        raise ValueError(f"agent file {agent_file!r} does not exist, and no shipped agent "
                         f"has that name ({listed()})")
