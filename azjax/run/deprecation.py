"""Public names that moved or were renamed: each old name still resolves, with a
DeprecationWarning that says what to use instead, so scripts and notebooks written
against it keep working while they are updated."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any


def moved_names(module: str, moved: dict[str, tuple[Any, str]]) -> Callable[[str], Any]:
    """A module's `__getattr__` (PEP 562) for the names it no longer defines.

    Args:
      module: the module's name (`__name__`).
      moved: by old name, the value it still gives and what to use instead (said in the
        warning, e.g. 'RUN_SEED_MAX').

    Returns:
      The `__getattr__`: the old name's value with a DeprecationWarning, an
      AttributeError for any other name.
    """
    def getattr_(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value, instead = moved[name]
        warnings.warn(f"{module}.{name} is deprecated: use {instead}", DeprecationWarning,
                      stacklevel=2)
        return value

    return getattr_
