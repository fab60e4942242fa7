"""The build a user runs: the environment of a child process that stands for a command
a user types (the README's headline, the wheel's `azjax train tictactoe`).

`tests/conftest.py` makes every process of a session compile quickly, unoptimised
(`FAST_COMPILE` in `XLA_FLAGS`), which is right for tests that only need
*a* program. A test that proves what users rely on (perfect play from the default
command) must run the program users run: its child gets the session's environment with
that setting and the session's one host device taken out, and keeps everything else (the compilation cache among it; JAX
keys each cache entry on the XLA flags, so the two builds never share an entry).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

FAST_COMPILE = ("--xla_backend_optimization_level=0",
                "--xla_llvm_disable_expensive_passes=true",
                "--xla_cpu_use_fusion_emitters=false")
"""What the session adds to `XLA_FLAGS` (tests/conftest.py): LLVM's optimisation and its
expensive passes off, and XLA's CPU fusions emitted the older, quicker-to-compile way.
Each about halves what a test's small program takes to compile; the programs run a
little slower, which their brief runs do not feel."""

_NAMES = {flag.split("=")[0] for flag in FAST_COMPILE}


def fast_compile_flags(flags: str) -> str:
    """`XLA_FLAGS` with the session's settings added where it does not set them already.

    Args:
      flags: an `XLA_FLAGS` value.

    Returns:
      The value with each flag of `FAST_COMPILE` whose name it lacks.
    """
    named = {flag.split("=")[0] for flag in flags.split()}
    return " ".join([*flags.split(), *(f for f in FAST_COMPILE
                                       if f.split("=")[0] not in named)])


def users_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A child's environment that compiles as a user's process does.

    Args:
      env: the environment to start from (default: this process's).

    Returns:
      A copy of it whose `XLA_FLAGS` holds none of `FAST_COMPILE`'s settings (the variable
      left out when nothing else is in it) and that sets no count of host devices.
    """
    out = dict(os.environ if env is None else env)
    # A user's process splits a CPU into one host device per core (the session's one
    # device is the tests' choice).
    out.pop("JAX_NUM_CPU_DEVICES", None)
    flags = [flag for flag in out.get("XLA_FLAGS", "").split()
             if flag.split("=")[0] not in _NAMES]
    if flags:
        out["XLA_FLAGS"] = " ".join(flags)
    else:
        out.pop("XLA_FLAGS", None)
    return out
