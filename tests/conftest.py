"""Session set-up: one persistent XLA compilation cache, settings that make XLA compile
the tests' small programs quickly, and the test files handed to the workers longest
first.

Many tests train, evaluate or start an experiment script in a subprocess, and compile
the same programs again and again; JAX's persistent cache compiles each once. It lives in
`$XDG_CACHE_HOME/azjax/test-xla` (`~/.cache/...`), kept between sessions: JAX keys each
entry on the program, the JAX and XLA versions, the devices and the XLA flags, so a
changed program never loads a stale entry; past 2 GB the oldest entries go.
`AZJAX_TEST_CACHE=off` compiles everything afresh, in a directory of this session's that
is removed at its end (a cold run, as on a fresh machine); `AZJAX_TEST_CACHE=DIR` keeps
the cache in DIR (CI shares one between its steps). Everything is set before JAX is
imported; subprocesses and notebook kernels inherit it (and the experiment scripts' own
cache, `azjax.run.process.compile_cache`, is pointed at it).

The tests' programs are small and run briefly, so compiling is most of their cost: XLA
skips LLVM's optimisation of the generated code and emits its CPU fusions the quicker
way (`FAST_COMPILE` in `tests/users_build.py`; docs/trust.md says what it saves).
Floats may differ from the optimised program's in their last bits; every process of a session (subprocesses included) compiles alike, so
the tests that compare runs compare like with like. The exceptions are the child
processes that stand for what a user runs and prove a result users rely on (the
README's headline reaching perfect play, the wheel's `azjax train tictactoe`): they get
the environment of `tests/users_build.py`, which takes those settings out, and compile
as users compile (the compilation cache still shared).

Tests run on one CPU device, experiment scripts in subprocesses included (their default
is one host device per core); the tests of several devices ask for them by `--devices`.

The files go to the xdist workers longest first, by the seconds that
`tests/file_costs.json` records for them (`tests/cost_table.py` writes it from a run with
`AZJAX_TEST_COSTS`, the cost plugin `tests/cost_plugin.py`); a file it does not know goes
first.

A session that leaves something new in the checkout (a `runs/` folder, say) fails at its
end (`tests/checkout_guard.py`): tests write only into temporary folders.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from users_build import fast_compile_flags

_CACHE_ENV = "AZJAX_TEST_CACHE"
_MAX_CACHE_BYTES = 2 * 10**9


def _cache_directory() -> tuple[str, bool]:
    """The compilation cache's directory, and whether it is this session's own (to be
    removed at its end)."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:  # set by the user, or by the controller
        return os.environ["JAX_COMPILATION_CACHE_DIR"], False
    chosen = os.environ.get(_CACHE_ENV, "").strip()
    if chosen.lower() in ("off", "0", "none"):
        own = tempfile.mkdtemp(prefix="azjax-test-xla-")
        # gone when this process ends, however the session ends (a usage error included)
        atexit.register(shutil.rmtree, own, ignore_errors=True)
        return own, True
    if chosen:
        return str(Path(chosen).expanduser()), False
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return str(Path(base) / "azjax" / "test-xla"), False


_CACHE_DIR, _OWN_CACHE = _cache_directory()
os.environ["JAX_COMPILATION_CACHE_DIR"] = _CACHE_DIR
# and for scripts started without the JAX_ variables (azjax.run.process.compile_cache): not ~/.cache
os.environ.setdefault("AZJAX_COMPILE_CACHE", _CACHE_DIR)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
os.environ["XLA_FLAGS"] = fast_compile_flags(os.environ.get("XLA_FLAGS", ""))
os.environ["JAX_NUM_CPU_DEVICES"] = "1"

_FILE_COSTS = Path(__file__).resolve().parent / "file_costs.json"


def pytest_configure(config):
    import checkout_guard
    import cost_plugin  # the plugin is on when AZJAX_TEST_COSTS is set

    cost_plugin.register(config)
    checkout_guard.register(config)
    if not _OWN_CACHE and not hasattr(config, "workerinput"):
        _prune(Path(_CACHE_DIR), _MAX_CACHE_BYTES)


def _prune(directory: Path, limit: int) -> None:
    """Removes the oldest files of a kept cache larger than `limit` bytes until it holds
    half of that (JAX's own size limit needs the filelock package)."""
    try:
        files = [(entry.stat().st_mtime, entry.stat().st_size, entry)
                 for entry in directory.iterdir() if entry.is_file()]
    except OSError:
        return
    size = sum(entry_size for _, entry_size, _ in files)
    if size <= limit:
        return
    for _, entry_size, entry in sorted(files, key=lambda item: item[0]):
        if size <= limit // 2:
            break
        entry.unlink(missing_ok=True)
        size -= entry_size


@pytest.hookimpl(trylast=True)  # after `-m` has deselected what does not run
def pytest_collection_modifyitems(config, items):
    """Orders the items file by file, the longest files first (the order in which
    `--dist loadfile` hands them out with `--no-loadscope-reorder`)."""
    import cost_plugin

    try:
        costs = json.loads(_FILE_COSTS.read_text())
    except (OSError, ValueError):
        return
    cost_plugin.order_longest_first(items, costs)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A run directory of the tiny program (`tests/tiny.py`), trained once per worker:
    2 iterations, a checkpoint after each. Read it; copy it (`tiny_run_copy`) to change it."""
    from tiny import CONFIG

    from azjax import train

    path = tmp_path_factory.mktemp("tiny") / "run"
    train(CONFIG, path, progress=None)
    return path


@pytest.fixture
def tiny_run_copy(tiny_run, tmp_path) -> Path:
    """A copy of `tiny_run` of the test's own, at `tmp_path / "run"`, to damage or resume."""
    return Path(shutil.copytree(tiny_run, tmp_path / "run"))


@pytest.fixture
def search_configs(monkeypatch):
    """The search configs of the players that agents build from now on (a list filled
    as `azjax.run.agents.agent.search_player` is called)."""
    import azjax.run.agents.agent

    configs = []
    original = azjax.run.agents.agent.search_player

    def spy(env, apply_fn, params, search, name="alphazero", greedy=True):
        configs.append(search)
        return original(env, apply_fn, params, search, name, greedy)

    monkeypatch.setattr(azjax.run.agents.agent, "search_player", spy)
    return configs
