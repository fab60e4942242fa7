"""Deprecated: the conformance check moved to `envs.conformance` (`envs.check_env` and
`python -m envs.check GAME` are unchanged)."""

import warnings

from envs.conformance import (
    ONLY_A_REFERENCE,
    PROPERTIES,
    RULES,
    CheckReport,
    EnvCheckError,
    check_env,
    init_keys,
)

__all__ = ["ONLY_A_REFERENCE", "PROPERTIES", "RULES", "CheckReport", "EnvCheckError", "check_env",
           "init_keys"]

warnings.warn("envs.checker is deprecated: import from envs.conformance (or envs)",
              DeprecationWarning, stacklevel=2)
