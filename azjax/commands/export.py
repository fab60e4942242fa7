"""Export a trained agent to one file: `python -m azjax.export RUN_DIR OUT.azjax [--step S]`.

The file holds the run's program config (game, network, search), the network weights
and the agent's provenance (`azjax.run.agents.agent_file`; the code, command and budget that
trained it, `azjax.run.agents.run_provenance`); `Agent.load(OUT)` reads it back, and `azjax info
OUT` prints it.
"""

from __future__ import annotations

import argparse

from azjax.commands.errors import one_line_errors, run_script
from azjax.run.agents.agent import Agent
from azjax.run.agents.agent_file import SUFFIX
from azjax.run.files import check_output_path


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """CLI: exports a run's newest (or --step) checkpoint to one file; exit status 2 with
    one `error:` line for a bad run, an output that cannot be written or a full disk."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.export", description="Export a trained agent to one file."
    )
    parser.add_argument("run_dir", help="training run directory")
    parser.add_argument("out", help=f"file to write (conventionally *{SUFFIX})")
    parser.add_argument("--step", type=int, default=None, help="checkpoint (default: newest)")
    args = parser.parse_args(argv)
    out = check_output_path(args.out, "output file")
    agent = Agent.load(args.run_dir, step=args.step)
    path = agent.export(out)
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1024:.0f} KiB): {agent.env.name} agent of {args.run_dir}")
    facts = agent.provenance
    print(f"provenance: iteration {facts.iterations}, azjax {facts.azjax_version}, commit "
          f"{facts.commit} (azjax info {path} shows it all)")
    return 0


if __name__ == "__main__":
    run_script(main)
