"""Shared command-line entry point of the experiment scripts."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated

import tyro

from azjax.checkpoint import RunDirError
from azjax.config import TrainConfig
from azjax.driver import summarize, train


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Train an AlphaZero agent; rerun with the same --run-dir to resume."""

    config: Annotated[TrainConfig, tyro.conf.arg(name="")]
    run_dir: str = "runs/default"
    """Where config.json, checkpoints, metrics.jsonl and plots go; a run already there is
    resumed (its program settings and seed must match; run options such as --iterations
    may change)."""


def main(defaults: TrainConfig, run_dir: str, argv: list[str] | None = None) -> int:
    """Parses options over `defaults`, trains, prints a summary; returns the exit code."""
    experiment = tyro.cli(
        Experiment,
        default=Experiment(config=defaults, run_dir=run_dir),
        args=argv,
        description=Experiment.__doc__,
    )
    try:
        result = train(experiment.config, experiment.run_dir)
    except (ValueError, RunDirError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted; rerun the same command to resume from the last checkpoint",
              file=sys.stderr)
        return 130
    print(summarize(result))
    print(f"run directory: {experiment.run_dir}")
    return 0
