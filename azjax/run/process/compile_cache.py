"""A persistent XLA compilation cache, so a second run of a script does not compile again.

The experiment scripts call `enable()` before they build anything. Compiled programs are
kept in `~/.cache/azjax/xla` (or `$AZJAX_COMPILE_CACHE`; set it to `off` to compile
afresh every time) keyed by JAX on the program, the JAX version and the devices, so a
changed program or machine compiles anew and never loads a stale one. A cache JAX was
already given (`JAX_COMPILATION_CACHE_DIR`, `jax.config`) is left as it is.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import jax

ENV_VAR = "AZJAX_COMPILE_CACHE"
OFF = ("off", "0", "none", "")


def default_directory() -> Path | None:
    """Where the cache lives: `$AZJAX_COMPILE_CACHE` (None if it says off), else
    `$XDG_CACHE_HOME/azjax/xla` or `~/.cache/azjax/xla`."""
    if ENV_VAR in os.environ:
        value = os.environ[ENV_VAR].strip()
        return None if value.lower() in OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "azjax" / "xla"


def enable(directory: str | Path | None = None, min_compile_seconds: float = 0.2) -> Path | None:
    """Keeps every program that took at least `min_compile_seconds` to compile in
    `directory` (default `default_directory()`); returns the directory, or None when the
    cache is switched off or the directory cannot be created (then JAX compiles as usual)."""
    configured = jax.config.jax_compilation_cache_dir
    if configured:
        return Path(configured)
    path = default_directory() if directory is None else Path(directory).expanduser()
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    # A cache that cannot be written (a full disk) only costs compiling again: no warnings.
    warnings.filterwarnings("ignore", message="Error (writing|reading) persistent compil")
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_seconds)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
