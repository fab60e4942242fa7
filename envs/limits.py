"""Checks of a game's options and of the memory it needs, shared by the games'
constructors (and `azjax.core.memory`): `check_option` turns a bad option into one line
naming it, `check_fits` refuses what the memory here cannot hold."""

from __future__ import annotations

import math
import operator
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

INT32_MAX = 2**31 - 1


def check_option(name: str, value: Any, kind: type, low: float | None = None,
                 high: float | None = None, *, above: float | None = None) -> Any:
    """`value` as `kind` (int or float) if it is one, finite, and `low <= value <= high`,
    `value > above` (bounds left None are not checked).

    Args:
      name: the option's name, for the message.
      value: what the caller gave.
      kind: `int` or `float`.
      low: inclusive lower bound, or None.
      high: inclusive upper bound, or None.
      above: exclusive lower bound, or None.

    Returns:
      `value` as a Python `int` or `float`.

    Raises:
      ValueError: one line naming the option, for a bool or a str, a float where an int
        is wanted (2.5, and 7.0 too), NaN, an infinity ("komi must be a finite number,
        got nan") or a value out of range ("size must be in [3, 19], got 25").
    """
    number = _as_int(value) if kind is int else _as_float(value)
    bounds = _bounds(low, high, above)
    if number is None:
        noun = "an integer" if kind is int else "a finite number"
        raise ValueError(f"{name} must be {' '.join([noun, *bounds])}, got {value!r}")
    if ((low is not None and number < low) or (above is not None and number <= above)
            or (high is not None and number > high)):
        raise ValueError(f"{name} must be {' '.join(bounds)}, got {value!r}")
    return number


def _as_int(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _as_float(value: Any) -> float | None:
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _show(bound: float) -> str:
    if bound == INT32_MAX:
        return "2**31 - 1"
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _bounds(low: float | None, high: float | None, above: float | None) -> list[str]:
    if low is not None and high is not None:
        return [f"in [{_show(low)}, {_show(high)}]"]
    parts = [f"{sign} {_show(bound)}" for sign, bound in ((">=", low), (">", above), ("<=", high))
             if bound is not None]
    return [" and ".join(parts)] if parts else []


def available_bytes() -> int:
    """Memory the default JAX device can hold: an accelerator's `bytes_limit`, else the
    machine's RAM (or the container's limit, where lower).

    Returns:
      The number of bytes.
    """
    device = jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if stats.get("bytes_limit"):
            return int(stats["bytes_limit"])
    return _host_bytes()


def _host_bytes() -> int:
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = int(Path(path).read_text().strip())
        except (OSError, ValueError):  # no such file, or "max" (no limit)
            continue
        if 0 < limit < physical:
            return limit
    return physical


def format_bytes(n: float) -> str:
    """A byte count for humans, in powers of 1000: "512 B", "3.1 MB", "22.4 GB".

    Args:
      n: the number of bytes.

    Returns:
      The count with its unit.
    """
    units = ("B", "kB", "MB", "GB", "TB", "PB")
    n, unit = float(n), 0
    while n >= 1000 and unit < len(units) - 1:
        n, unit = n / 1000, unit + 1
    return f"{n:.0f} B" if unit == 0 else f"{n:.1f} {units[unit]}"


def check_fits(what: str, needed: int, detail: str = "") -> None:
    """Raises ValueError (one line) when `needed` bytes exceed `available_bytes()`:
    "<what> would need 22.4 GB (<detail>), more than the 16.0 GB of memory here".

    Args:
      what: what needs the memory, the message's subject.
      needed: bytes it needs.
      detail: what the figure is made of, put in brackets ('' for nothing).

    Raises:
      ValueError: `needed` exceeds `available_bytes()`.
    """
    available = available_bytes()
    if needed > available:
        detail = f" ({detail})" if detail else ""
        raise ValueError(f"{what} would need {format_bytes(needed)}{detail}, more than the "
                         f"{format_bytes(available)} of memory here")
