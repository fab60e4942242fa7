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

import pytest

os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="azjax-xla-"))
# and for scripts started without the JAX_ variables (azjax.run.compile_cache): not ~/.cache
os.environ.setdefault("AZJAX_COMPILE_CACHE", os.environ["JAX_COMPILATION_CACHE_DIR"])
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
os.environ["JAX_NUM_CPU_DEVICES"] = "1"


@pytest.fixture
def search_configs(monkeypatch):
    """The search configs of the players that agents build from now on (a list filled
    as `azjax.run.agent.search_player` is called)."""
    import azjax.run.agent

    configs = []
    original = azjax.run.agent.search_player

    def spy(env, apply_fn, params, search, name="alphazero", greedy=True):
        configs.append(search)
        return original(env, apply_fn, params, search, name, greedy)

    monkeypatch.setattr(azjax.run.agent, "search_player", spy)
    return configs
