"""The sizes every benchmark's `--quick` runs at: its whole code path in seconds, so that
a test (tests/test_benchmarks_quick.py) can run each script end to end. Its figures mean
nothing. A helper of the scripts, not one of them (the leading underscore).

`shrink(config)` gives a recipe's `TrainConfig` at these sizes; `flags()` gives the same
as options of an experiment script (experiments/<recipe>.py).
"""

from __future__ import annotations

import argparse
from typing import Any

PROGRAM: dict[str, Any] = {
    "network.channels": 8,
    "network.num_blocks": 0,
    "network.mlp_layers": 1,
    "network.value_hidden": 8,
    "search.num_simulations": 4,
    "search.max_num_considered_actions": 4,
    "selfplay.num_games": 16,
    "selfplay.cheap_simulations": 2,
    "learner.batch_size": 32,
    "gradient_steps": 2,
}
"""Any recipe's program, shrunk: the narrowest network, 4 simulations, 16 games, 2
gradient steps of 32 positions."""
SIZES: dict[str, Any] = {**PROGRAM, "eval_simulations": 2, "eval_games": 2}
"""The program's sizes and its run's evaluations: 2 simulations, 2 games a baseline."""


def shrink(config):
    """A recipe's config at the `SIZES`.

    Args:
      config: an `azjax.run.config.TrainConfig`.

    Returns:
      The same config with every setting of `SIZES` replaced.
    """
    for path, value in SIZES.items():
        config = config.with_value(path, value)
    return config


def settings(**more: Any) -> list[str]:
    """The `SIZES` as `--set`-style settings.

    Args:
      **more: further settings by dotted path (`iterations=1`), laid over `SIZES`.

    Returns:
      `NAME=VALUE` strings, e.g. 'network.channels=8'.
    """
    return [f"{path}={value}" for path, value in {**SIZES, **more}.items()]


def flags(**more: Any) -> list[str]:
    """The `SIZES` as options of an experiment script (experiments/<recipe>.py).

    Args:
      **more: further settings by dotted path (`eval_every=1`), laid over `SIZES`.

    Returns:
      Option names and values, e.g. ['--network.channels', '8', ...].
    """
    out = []
    for path, value in {**SIZES, **more}.items():
        out += [f"--{path.replace('_', '-')}", str(value)]
    return out


def parse(parser: argparse.ArgumentParser, argv: list[str] | None = None, known: bool = False,
          **sizes: Any) -> Any:
    """Adds `--quick` to a script's parser and parses its command line.

    Args:
      parser: the script's parser, without `--quick`.
      argv: the arguments (None: `sys.argv`).
      known: parse with `parse_known_args` (the script passes the rest on).
      **sizes: option destinations and the values they default to under `--quick`;
        options given on the command line still count.

    Returns:
      What `parse_args` (or, with `known`, `parse_known_args`) returns.
    """
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes, seconds: checks the script end to end (its figures "
                             "mean nothing)")
    parse_argv = parser.parse_known_args if known else parser.parse_args
    parsed = parse_argv(argv)
    if (parsed[0] if known else parsed).quick:
        parser.set_defaults(**sizes)
        parsed = parse_argv(argv)
    return parsed
