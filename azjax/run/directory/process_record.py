"""What a training process records about itself when it starts or resumes a run: one
record of the run directory's provenance.jsonl (`RunDir.append_provenance`), so that
`azjax export` can say which code and command trained the run
(`azjax.run.agents.run_provenance`), not which code exports it.

A record (`start_record`) is a JSON object:

    azjax_version  the installed azjax's version ('0.1.0'; '0+unknown' uninstalled)
    commit         the git commit of the azjax code running (None: not a git checkout,
                   an installed wheel, or git could not tell)
    dirty          whether tracked files differ from that commit (None with no commit)
    command        the command line: the script as it named itself (`azjax train`,
                   `experiments/train.py`), then its arguments joined by shlex
    script         that script alone (`sys.argv[0]`)
    iteration      the iteration the process starts from (0 for a fresh run)
    started        when, in UTC (ISO 8601, to the second)
    processor      the host's processor model (None where it does not say)
    backend        JAX's backend ('cpu', 'gpu', 'tpu')
    device_kind    the kind of JAX's first device ('cpu', 'NVIDIA H100 80GB HBM3')
    devices        JAX's devices, over every process of the run
    processes      the processes training the run (process 0 writes the record)
    jax_version    the JAX version

Nothing here may stop training: git is asked with a short timeout, once per process,
and any failure of it is a None.
"""

from __future__ import annotations

import datetime
import functools
import platform
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import jax

CHECKOUT = Path(__file__).resolve().parents[3]
"""Where the git checkout holding this code would be (azjax/run/directory/ is three levels
down)."""
GIT_TIMEOUT_S = 2
"""Seconds git may take to answer, per call (it answers in milliseconds on a checkout;
a hung network file system must not hold training up)."""
_CPUINFO = Path("/proc/cpuinfo")


def installed_version() -> str:
    """The installed azjax's version (`azjax.__version__`).

    Returns:
      The distribution's version (pyproject.toml's), or '0+unknown' for code imported
      from a checkout that was never installed.
    """
    try:
        return metadata.version("azjax")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(CHECKOUT), *args], capture_output=True,
                          text=True, timeout=GIT_TIMEOUT_S, check=True).stdout.strip()


@functools.cache  # one pair of git calls per process, however many runs it trains
def git_commit() -> tuple[str | None, bool | None]:
    """The git commit of the azjax code running now, and whether it has changes.

    Returns:
      (HEAD's full hash, whether tracked files differ from it); (None, None) where this
      code is not a git checkout's (an installed package: a checkout around a virtual
      environment is not this code's) or git fails, is missing or times out.
    """
    if not (CHECKOUT / ".git").exists():  # a file in a worktree, a folder otherwise
        return None, None
    try:
        head = _git("rev-parse", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no")
    except Exception:  # noqa: BLE001 - provenance is never worth stopping a run for
        return None, None
    return (head, bool(changed)) if head else (None, None)


@functools.cache
def processor() -> str | None:
    """The host's processor model.

    Returns:
      /proc/cpuinfo's first 'model name' (Linux), else `platform.processor()`; None
      where neither says.
    """
    try:
        for line in _CPUINFO.read_text(errors="replace").splitlines():
            name, colon, value = line.partition(":")
            if colon and name.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def command_line(argv: list[str] | None = None) -> tuple[str, str]:
    """A process's command line as a person would type it again.

    Args:
      argv: the command line (default: `sys.argv`).

    Returns:
      (the command, the script): the script as it named itself, unquoted (`azjax`
      dispatches `azjax train` as the one word 'azjax train'), followed by its arguments
      joined by shlex.
    """
    argv = list(sys.argv if argv is None else argv) or [""]
    script, args = argv[0], shlex.join(argv[1:])
    return (f"{script} {args}" if args else script), script


def start_record(iteration: int) -> dict[str, Any]:
    """The provenance.jsonl record of this process starting a run.

    Args:
      iteration: the iteration it starts from (0 for a fresh run).

    Returns:
      The record (the module's docstring lists its fields).
    """
    commit, dirty = git_commit()
    command, script = command_line()
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return {
        "azjax_version": installed_version(), "commit": commit, "dirty": dirty,
        "command": command, "script": script, "iteration": int(iteration),
        "started": started.isoformat(), "processor": processor(),
        "backend": jax.default_backend(), "device_kind": jax.devices()[0].device_kind,
        "devices": jax.device_count(), "processes": jax.process_count(),
        "jax_version": jax.__version__,
    }
