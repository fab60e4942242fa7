"""The agent file: a program config (game, network, search) and the network weights.
Its search is the one the agent plays with, as exported (`Agent.load` applies no play
settings to it again).

The file is msgpack (flax.serialization): a header naming the format and its version,
the config as JSON, the parameters as nested dicts of arrays, and the agent's
provenance as JSON (`azjax.run.agents.provenance`: the code, command and budget that trained
it). `Agent.export` writes it, `Agent.load(FILE)` reads it back (`python -m azjax.export`
from the shell); nothing else of the run (optimizer, replay) is kept. The provenance is
an optional key of version 2, not a new version, so that an azjax from before it still
reads new files (it ignores the key), and files from before it read as "not recorded".
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable, NamedTuple

import chex
import jax
import numpy as np
from flax import serialization

from azjax.core.program import ProgramConfig
from azjax.run.agents.provenance import Provenance
from azjax.run.config import TrainConfig
from azjax.run.files import write_atomic

FORMAT = "azjax-agent"
VERSION = 2
READS = (2,)
"""The versions this azjax reads: version 1 files (whole training configs) were written
before azjax 0.1.0."""
SUFFIX = ".azjax"


class AgentFileError(ValueError):
    """A file that is missing or is not an exported azjax agent."""


class StoredAgent(NamedTuple):
    """What an agent file holds (`read_agent`)."""

    config: ProgramConfig
    params: chex.ArrayTree
    provenance: Provenance  # `Provenance()`, nothing recorded, for a file without one


def write_agent_file(path: str | Path, config: ProgramConfig, params: chex.ArrayTree,
                     provenance: Provenance | None = None) -> Path:
    """Writes an agent file, creating its directory: whole or not at all, and no
    temporary file is left on a failure (`azjax.run.files.write_atomic`).

    Args:
      path: the file to write.
      config: the program config (game, network, search).
      params: the network parameters.
      provenance: where the agent came from (None: a file without one, as azjax wrote
        before it recorded provenance).

    Returns:
      `path` as a Path (OSError for a path that cannot be written).
    """
    path = Path(path)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": json.dumps(dataclasses.asdict(config)),
        "params": serialization.to_state_dict(jax.device_get(params)),
    }
    if provenance is not None:
        payload["provenance"] = provenance.to_json()
    data = serialization.msgpack_serialize(payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, data)


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


def read_agent(path: str | Path, abstract_params_of: Callable[[ProgramConfig], Any]
               ) -> StoredAgent:
    """Everything an agent file holds.

    Args:
      path: the file.
      abstract_params_of: the parameter shapes of a config's network; the stored
        weights must match them.

    Returns:
      Its program config, parameters and provenance.

    Raises:
      AgentFileError: one line, for a missing file, one that is not an agent file, of a
        version this azjax does not read, or with an invalid config, provenance or
        weights.
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
    version = payload.get("version")
    if version not in READS:
        raise AgentFileError(
            f"{str(path)!r} is agent file version {version}; "
            f"this azjax reads versions {', '.join(map(str, READS))}"
        )
    try:
        data = json.loads(payload["config"])
        config = TrainConfig.from_dict({"program": data}).program
        abstract = abstract_params_of(config)  # builds the game: ValueError if unknown
    except (ValueError, TypeError) as err:
        raise AgentFileError(f"{str(path)!r} holds an invalid config: {err}") from None
    try:
        params = serialization.from_state_dict(abstract, payload["params"])
    except (ValueError, KeyError, TypeError):
        raise AgentFileError(
            f"{path}: its weights do not fit the network its config describes"
        ) from None
    _check_params(abstract, params, path)
    params = jax.tree.map(lambda a, x: np.asarray(x, dtype=a.dtype), abstract, params)
    provenance = Provenance()  # a file from before provenance: nothing recorded
    if "provenance" in payload:
        try:
            provenance = Provenance.from_json(payload["provenance"])
        except ValueError as err:
            raise AgentFileError(f"{str(path)!r}: {err}") from None
    return StoredAgent(config, params, provenance)
