"""The build a user runs: the environment of a child process that stands for a command
a user types (the README's headline, the wheel's `azjax train tictactoe`).

`tests/conftest.py` makes every process of a session compile with XLA's LLVM
optimisation off (`FAST_COMPILE` in `XLA_FLAGS`), which is right for tests that only need
*a* program. A test that proves what users rely on (perfect play from the default
command) must run the program users run: its child gets the session's environment with
that setting and the session's one host device taken out, and keeps everything else (the compilation cache among it; JAX
keys each cache entry on the XLA flags, so the two builds never share an entry).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

FAST_COMPILE = "--xla_backend_optimization_level=0"
"""What the session adds to `XLA_FLAGS` (tests/conftest.py)."""

_LEVEL = FAST_COMPILE.split("=")[0]


def users_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A child's environment that compiles as a user's process does.

    Args:
      env: the environment to start from (default: this process's).

    Returns:
      A copy of it whose `XLA_FLAGS` sets no backend optimisation level (the variable
      left out when nothing else is in it) and that sets no count of host devices.
    """
    out = dict(os.environ if env is None else env)
    # A user's process splits a CPU into one host device per core (the session's one
    # device is the tests' choice).
    out.pop("JAX_NUM_CPU_DEVICES", None)
    flags = [flag for flag in out.get("XLA_FLAGS", "").split()
             if flag.split("=")[0] != _LEVEL]
    if flags:
        out["XLA_FLAGS"] = " ".join(flags)
    else:
        out.pop("XLA_FLAGS", None)
    return out
