"""Session set-up: one persistent XLA compilation cache for the whole test session.

Many tests train, evaluate or start an experiment script in a subprocess, and compile
the same programs again and again; JAX's persistent cache (in a fresh temporary
directory per session, so nothing carries over between sessions) compiles each once.
Set before JAX is imported; subprocesses and notebook kernels inherit it (and the
experiment scripts' own cache, `azjax.run.compile_cache`, is pointed at it).

Tests run on one CPU device, experiment scripts in subprocesses included (their default
is one host device per core); the tests of several devices ask for them by `--devices`.
"""

import os
import tempfile

os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="azjax-xla-"))
# and for scripts started without the JAX_ variables (azjax.run.compile_cache): not ~/.cache
os.environ.setdefault("AZJAX_COMPILE_CACHE", os.environ["JAX_COMPILATION_CACHE_DIR"])
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
os.environ["JAX_NUM_CPU_DEVICES"] = "1"
