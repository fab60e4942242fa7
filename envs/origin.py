"""Where an error raised by a game came from: the innermost frame of its traceback that
is the user's code, not JAX, numpy, chex, flax, Python's import machinery or the envs
protocol's own plumbing (`envs.core`, `envs.registry`, the checker)."""

from __future__ import annotations

import os
import traceback

import chex
import flax
import jax
import numpy as np

_LIBRARY_DIRS = tuple(
    os.path.dirname(module.__file__) + os.sep for module in (jax, np, chex, flax)
)
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PLUMBING = tuple(_HERE + name for name in (
    "core.py", "state.py", "registry.py", "origin.py",
    "conformance" + os.sep))


def user_frame(err: BaseException) -> str:
    """' (at file:line: code)' for the innermost frame of `err`'s traceback in the
    user's code, or '' where there is none.

    Args:
      err: a raised exception, with its traceback.

    Returns:
      The location text, with a leading space, or ''.
    """
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not f.filename.startswith(_LIBRARY_DIRS) and "<frozen" not in f.filename
              and not f.filename.startswith(_PLUMBING)]
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {f.filename}:{f.lineno}: {(f.line or '').strip()})"


def first_line(err: BaseException) -> str:
    """The first line of `err`'s message, or its type's name for an empty one.

    Args:
      err: any exception.

    Returns:
      One line of text.
    """
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
