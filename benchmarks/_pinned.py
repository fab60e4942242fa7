"""Processes run at once, each pinned to a core of its own, so that each gets the same
CPU time (equal-compute comparisons of training arms). A helper of the scripts, not one
of them (the leading underscore)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence


def run_pinned(commands: Sequence[Sequence[str]]) -> None:
    """Runs `commands` at once, the i-th pinned to the i-th core this process may use
    (cycling when there are more commands than cores), and waits for them all.

    Args:
      commands: argument lists, one process each.

    Raises:
      RuntimeError: naming the first that exited with a failure.
    """
    cores = sorted(os.sched_getaffinity(0))
    children = []
    for index, command in enumerate(commands):
        pin = {cores[index % len(cores)]}
        children.append(subprocess.Popen(list(command), preexec_fn=lambda pin=pin: (
            os.sched_setaffinity(0, pin))))
    failed = [child for child in children if child.wait() != 0]
    if failed:
        raise RuntimeError(f"a pinned process failed: {failed[0].args}")
