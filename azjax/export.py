"""Agents in one file: the training config (game, network, search) and the network weights.

    python -m azjax.export RUN_DIR OUT.azjax [--step S]

The file is msgpack (flax.serialization): a header naming the format and its version,
the config as JSON, and the parameters as nested dicts of arrays. `Agent.load(FILE)`
reads it back; nothing else of the run (optimizer, replay) is kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import chex
import jax
import numpy as np
from flax import serialization

from azjax.config import TrainConfig

FORMAT = "azjax-agent"
VERSION = 1
SUFFIX = ".azjax"


class AgentFileError(ValueError):
    """A file that is missing or is not an exported azjax agent."""


def write_agent_file(path: str | Path, config: TrainConfig, params: chex.ArrayTree) -> Path:
    """Writes `config` and `params` to `path` (written whole or not at all); returns it."""
    path = Path(path)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": json.dumps(config.to_dict()),
        "params": serialization.to_state_dict(jax.device_get(params)),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(serialization.msgpack_serialize(payload))
    partial.replace(path)
    return path


def _check_params(abstract: Any, params: Any, path: Path) -> None:
    want = jax.tree_util.tree_flatten_with_path(abstract)[0]
    got = jax.tree_util.tree_flatten_with_path(params)[0]
    if [p for p, _ in want] != [p for p, _ in got]:
        raise AgentFileError(f"{path}: its weights do not fit the network its config describes")
    for (where, a), (_, b) in zip(want, got):
        if tuple(a.shape) != tuple(np.shape(b)):
            raise AgentFileError(
                f"{path}: weight {jax.tree_util.keystr(where)} has shape {np.shape(b)}, "
                f"the network needs {tuple(a.shape)}"
            )


def read_agent_file(path: str | Path, abstract_params_of) -> tuple[TrainConfig, chex.ArrayTree]:
    """The config and parameters stored in an agent file.

    `abstract_params_of(config)` gives the parameter shapes the config's network has;
    the stored weights must match them. Raises AgentFileError with a clear message.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentFileError(f"agent file {str(path)!r} does not exist")
    try:
        payload = serialization.msgpack_restore(path.read_bytes())
    except Exception:  # msgpack raises several unrelated types for foreign bytes
        payload = None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise AgentFileError(f"{str(path)!r} is not an azjax agent file")
    if payload.get("version") != VERSION:
        raise AgentFileError(
            f"{str(path)!r} is agent file version {payload.get('version')}; "
            f"this azjax reads version {VERSION}"
        )
    try:
        config = TrainConfig.from_dict(json.loads(payload["config"]))
        config.validate()
        config.make_env()
    except (ValueError, TypeError) as err:
        raise AgentFileError(f"{str(path)!r} holds an invalid config: {err}") from None
    abstract = abstract_params_of(config)
    try:
        params = serialization.from_state_dict(abstract, payload["params"])
    except (ValueError, KeyError, TypeError):
        raise AgentFileError(
            f"{path}: its weights do not fit the network its config describes"
        ) from None
    _check_params(abstract, params, path)
    params = jax.tree.map(lambda a, x: np.asarray(x, dtype=a.dtype), abstract, params)
    return config, params


def main(argv: list[str] | None = None) -> int:
    """CLI: exports a run's newest (or --step) checkpoint to one file."""
    from azjax.agent import Agent
    from azjax.checkpoint import RunDirError

    parser = argparse.ArgumentParser(
        prog="python -m azjax.export", description="Export a trained agent to one file."
    )
    parser.add_argument("run_dir", help="training run directory")
    parser.add_argument("out", help=f"file to write (conventionally *{SUFFIX})")
    parser.add_argument("--step", type=int, default=None, help="checkpoint (default: newest)")
    args = parser.parse_args(argv)
    try:
        agent = Agent.load(args.run_dir, step=args.step)
        path = agent.export(args.out)
    except (RunDirError, AgentFileError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1024:.0f} KiB): {agent.env.name} agent of {args.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
