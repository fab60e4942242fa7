"""The persistent compilation cache of the scripts (`azjax.run.process.compile_cache`): where it lives,
that it leaves a cache JAX was given alone, and that a second process loads what the first
compiled instead of compiling it again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from azjax.run.process import compile_cache

ROOT = Path(__file__).resolve().parents[1]

# Compiles one small program with the cache on and prints how many compilations the
# cache answered and how many it missed.
CHILD = """
import json, sys
import jax, jax.numpy as jnp
from jax import monitoring
from azjax.run.process import compile_cache
events = []
monitoring.register_event_listener(lambda name, **kw: events.append(name))
where = compile_cache.enable(min_compile_seconds=0)
f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum() * 3.0)
f(jnp.ones((8, 8))).block_until_ready()
print(json.dumps({"dir": str(where),
                  "hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses")}))
"""


def run_child(env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_default_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(compile_cache.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_directory() == tmp_path / "azjax" / "xla"
    monkeypatch.setenv(compile_cache.ENV_VAR, str(tmp_path / "mine"))
    assert compile_cache.default_directory() == tmp_path / "mine"
    for off in ("off", "OFF", "0", ""):
        monkeypatch.setenv(compile_cache.ENV_VAR, off)
        assert compile_cache.default_directory() is None


def test_a_cache_jax_was_given_is_kept(tmp_path):
    configured = jax.config.jax_compilation_cache_dir
    assert configured  # the test session's own (tests/conftest.py)
    assert compile_cache.enable(tmp_path / "other") == Path(configured)
    assert jax.config.jax_compilation_cache_dir == configured
    assert not (tmp_path / "other").exists()


@pytest.fixture
def child_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")
           and not k.startswith("JAX_PERSISTENT_CACHE")}
    env[compile_cache.ENV_VAR] = str(tmp_path / "cache")
    return env


def test_a_second_process_loads_what_the_first_compiled(child_env, tmp_path):
    first = run_child(child_env)
    assert first["dir"] == str(tmp_path / "cache")
    assert first["hits"] == 0 and first["misses"] >= 1
    assert any((tmp_path / "cache").iterdir())
    second = run_child(child_env)
    assert second["hits"] >= 1 and second["misses"] == 0


def test_switched_off_it_writes_nothing(child_env, tmp_path):
    child_env[compile_cache.ENV_VAR] = "off"
    out = run_child(child_env)
    assert out["dir"] == "None" and out["hits"] == 0
    assert not (tmp_path / "cache").exists()
