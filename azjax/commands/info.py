"""`azjax info AGENT`: what an agent is and where it came from, without playing it.

AGENT is a shipped agent's name (`connect_four`), an agent file (`azjax export`) or a
run directory (its newest checkpoint, or `--step`). It prints the game, the network's
size, the search it plays with, and its provenance (`Agent.provenance`: the azjax
version and commit, the command and budget that trained it, the export date).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import jax

from azjax.commands.errors import one_line_errors, run_script
from azjax.core.networks import NetworkConfig
from azjax.core.search import SearchConfig
from azjax.run.agents.agent import Agent
from azjax.run.agents.agent_file import SUFFIX, AgentFileError
from azjax.run.agents.run_provenance import game_text
from azjax.run.agents.shipped_agents import SHIPPED, listed, resolve


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def network_text(config: NetworkConfig, params) -> str:
    """A network's shape and size in one line.

    Args:
      config: its settings.
      params: its parameters.

    Returns:
      e.g. 'conv torso, 5 residual blocks of 64 channels; 245,123 parameters'.
    """
    if config.torso == "mlp":
        shape = f"mlp torso, {_count(config.mlp_layers, 'layer')} of {config.channels} units"
    else:
        shape = (f"conv torso, {_count(config.num_blocks, 'residual block')} of "
                 f"{config.channels} channels")
    count = sum(math.prod(x.shape) for x in jax.tree.leaves(params))
    return f"{shape}; {count:,} parameters"


def search_text(config: SearchConfig) -> str:
    """The search an agent plays with, in one line.

    Args:
      config: its search settings (the play settings already applied).

    Returns:
      e.g. 'gumbel, 32 simulations'.
    """
    return f"{config.policy}, {config.num_simulations} simulations"


def describe(agent: Agent, source: str) -> list[str]:
    """What `azjax info` prints of an agent.

    Args:
      agent: the agent.
      source: what the command line named (a shipped name, a file, a run directory).

    Returns:
      The lines: where it was read from, game, network, search, then its provenance
      (`Provenance.lines`) indented under 'provenance:', or 'provenance: not recorded'.
    """
    where = resolve(source)
    shipped = " (a shipped agent)" if source in SHIPPED and where != Path(source) else ""
    provenance = agent.provenance
    return [f"agent: {where}{shipped}",
            f"game: {game_text(agent.program)}",
            f"network: {network_text(agent.program.network, agent.params)}",
            f"search: {search_text(agent.search_config)}",
            *(["provenance:", *(f"  {line}" for line in provenance.lines())]
              if provenance.recorded else provenance.lines())]


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """`azjax info AGENT [--step S]`.

    Args:
      argv: the command line after `info` (default: this process's).

    Returns:
      0 once printed; 2 with one `error:` line for a name, file or directory that is
      not an agent.
    """
    parser = argparse.ArgumentParser(
        prog="azjax info", description="What an agent is and where it came from.")
    parser.add_argument("agent", metavar="AGENT", help="a shipped agent "
                        f"({listed()}), an agent file (azjax export) or a run directory")
    parser.add_argument("--step", type=int, default=None,
                        help="a run directory's checkpoint (default: newest)")
    args = parser.parse_args(argv)
    if args.agent.endswith(SUFFIX) and not resolve(args.agent).exists():
        # Agent.load would call it a run directory that does not exist.
        raise AgentFileError(f"agent file {args.agent!r} does not exist")
    agent = Agent.load(args.agent, step=args.step)
    print("\n".join(describe(agent, args.agent)))
    return 0


if __name__ == "__main__":
    run_script(main)
