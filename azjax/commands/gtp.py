"""A trained Go agent as a GTP version 2 engine on stdin/stdout (the engine is
`azjax.go.gtp_engine`; its commands and design are described there).

    python -m azjax.gtp --agent go9.azjax [--simulations 200] [--seed 0] [--resign -0.95]
    python -m azjax.gtp --agent go7x7 --reuse-tree      (each search starts from the last's tree)
    python -m azjax.gtp --run-dir runs/go9 [--step S]   (--run-dir takes an agent file too)
    azjax gtp --agent go7x7                             (the 7x7 agent that ships with azjax)

It reads GTP commands on stdin and writes only GTP replies on stdout (diagnostics go to
stderr), so any GTP controller (GoGui, gogui-twogtp, Sabaki, `azjax.gtp_referee`) can
drive it.
"""

from __future__ import annotations

import argparse
import io
import sys

from azjax.commands.errors import one_line_errors, run_script
from azjax.core import memory
from azjax.go.gtp_engine import MAX_MOVES_PER_POINT, RESIGN_AFTER, Engine, serve
from azjax.run.agents.agent import Agent
from azjax.run.agents.agent_source import REUSE_TREE_HELP, check_source
from azjax.run.agents.shipped_agents import AGENT_HELP
from azjax.run.config import check_seed


def load_go_agent(path: str, step: int | None = None, simulations: int | None = None,
                  reuse_tree: bool = False) -> Agent:
    """The Go agent of a run directory, exported file or shipped agent's name (ValueError
    if it plays another game), with `simulations` per search if given, keeping its tree
    between moves with `reuse_tree`."""
    agent = Agent.load(path, step=step)
    if agent.env.name != "go":
        raise ValueError(f"{path!r} holds a {agent.env.name} agent, not a Go agent")
    changes = {} if simulations is None else {"num_simulations": simulations}
    if reuse_tree:
        changes["reuse_tree"] = True
    return agent.with_search(**changes) if changes else agent


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.gtp (--agent FILE|NAME | --run-dir DIR [--step S]) [--simulations N]
    [--reuse-tree] [--seed S] [--resign V] [--max-moves M]`: a GTP engine on stdin/stdout;
    returns the exit status (2, with one `error:` line, for a bad argument, run or
    file)."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.gtp",
        description="A trained Go agent as a GTP version 2 engine on stdin/stdout.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--agent", metavar="FILE|NAME", help=AGENT_HELP)
    source.add_argument("--run-dir", help="a training run directory (newest checkpoint) "
                        "or an agent file")
    parser.add_argument("--step", type=int, help="the run's checkpoint at this step")
    parser.add_argument("--simulations", type=int, help="search simulations per move")
    parser.add_argument("--reuse-tree", action="store_true", help=REUSE_TREE_HELP)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resign", type=float, metavar="V",
                        help=f"resign when the search value is below V, in (-1, 0), from "
                        f"move {RESIGN_AFTER} on (default: never)")
    parser.add_argument("--max-moves", type=int, metavar="M",
                        help="plies after which the engine's game ends (default: the "
                        f"larger of the agent's and {MAX_MOVES_PER_POINT} * size * size)")
    args = parser.parse_args(argv)
    check_seed(args.seed)
    if args.step is not None and args.agent is not None:
        raise ValueError("--step is for --run-dir: an agent file has no steps")
    if args.resign is not None and not -1.0 < args.resign < 0.0:
        raise ValueError(f"--resign must be a value in (-1, 0), got {args.resign!r}")
    if args.max_moves is not None and args.max_moves < 1:
        raise ValueError(f"--max-moves must be at least 1, got {args.max_moves}")
    check_source(args.run_dir, args.agent)
    agent = load_go_agent(args.run_dir or args.agent, args.step, args.simulations,
                          args.reuse_tree)
    engine = Engine(agent, args.seed, args.resign, args.max_moves, log=sys.stderr)
    search = agent.search_config
    memory.check_fits(f"a search of {search.num_simulations:,} simulations",
                      memory.search_tree_bytes(engine.env, 1, search.tree_nodes - 1))
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    try:
        return serve(engine, stdin, sys.stdout)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    run_script(main)
