"""The test session's own rules: the children that stand for what a user runs compile
as users compile (`tests/users_build.py`); a session that leaves something in the
checkout fails (`tests/checkout_guard.py`); and pyproject.toml's pytest settings make a
misspelt marker, a passing xfail test and an exception in a test's thread failures."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

import pytest
import test_notebooks
import test_readme_headline
from checkout_guard import entries, strays
from users_build import FAST_COMPILE, fast_compile_flags, users_environment

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


class Started(Exception):
    """Raised in place of starting the child whose environment a test records."""


def _recording(seen: list[dict]):
    def run(args, **kwargs):
        if "env" not in kwargs and "-c" in [str(a) for a in args]:  # `_azjax_installed`
            return subprocess.CompletedProcess(args, 0)
        seen.append(kwargs.get("env"))
        raise Started

    return run


def test_the_users_commands_compile_without_the_sessions_fast_setting(monkeypatch,
                                                                       tmp_path):
    """This session compiles unoptimised (conftest); the README's headline command and the
    wheel's `azjax train tictactoe` are started without that, and with the rest of the
    session's environment (the compilation cache and other XLA flags among it)."""
    fast = " ".join(FAST_COMPILE)
    assert fast_compile_flags("--xla_a=1") == f"--xla_a=1 {fast}"
    assert fast_compile_flags(f"{FAST_COMPILE[0]} --xla_a=1") == f"{FAST_COMPILE[0]} --xla_a=1 " \
        + " ".join(FAST_COMPILE[1:])  # what the user sets is kept
    env = users_environment({"XLA_FLAGS": f"--xla_a=1 {fast} --xla_b=2", "K": "v",
                             "JAX_NUM_CPU_DEVICES": "1"})
    assert env == {"XLA_FLAGS": "--xla_a=1 --xla_b=2", "K": "v"}  # and a device per core
    assert "XLA_FLAGS" not in users_environment({"XLA_FLAGS": fast})

    monkeypatch.setenv("XLA_FLAGS", f"--xla_cpu_a=1 {fast}")
    seen: list[dict] = []
    for module in (test_readme_headline, test_notebooks):
        monkeypatch.setattr(module.subprocess, "run", _recording(seen))
    with pytest.raises(Started):
        test_readme_headline.test_default_tictactoe_command_reaches_perfect_play(tmp_path)
    with pytest.raises(Started):
        test_notebooks.test_the_installed_command_trains_tictactoe_to_perfect_play(
            (tmp_path / "venv" / "bin" / "python", tmp_path / "azjax.whl"), tmp_path)
    assert len(seen) == 2
    for env in seen:
        assert env["XLA_FLAGS"] == "--xla_cpu_a=1"
        assert env["JAX_COMPILATION_CACHE_DIR"] == os.environ["JAX_COMPILATION_CACHE_DIR"]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_the_guard_finds_what_a_session_left_in_the_checkout(tmp_path):
    """Ignored paths anywhere and new ones at the top are the session's; caches, the
    outputs it was given and someone's new file deeper in are not."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / ".gitignore").write_text("runs/\nbuild/\n__pycache__/\n*.jsonl\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")  # tracked from here on
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "old").write_text("")
    before = entries(tmp_path)
    assert {entry for entry in before if not entry.startswith("-- ")} == {"!! build/"}
    for path in ("runs/tictactoe/metrics.jsonl", "pkg/runs/x", "out.txt", "pkg/new.py",
                 "pkg/__pycache__/mod.pyc", "costs.jsonl", "build/new", "shots/a.png",
                 "kept/costs.jsonl"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "empty").mkdir()  # which git does not list
    after = entries(tmp_path)
    allowed = ("costs.jsonl", "shots", "kept/costs.jsonl")  # a file, a folder, a file in one
    assert strays(before, after, allowed) == ["empty", "out.txt", "pkg/runs", "runs"]
    assert strays(before, after) == ["costs.jsonl", "empty", "kept", "out.txt", "pkg/runs",
                                     "runs", "shots"]
    assert strays(before, before) == []
    assert entries(tmp_path / "pkg" / "runs") is not None  # git finds its checkout above
    assert entries(Path("/")) is None  # no checkout: nothing to check


# What pyproject.toml's settings must turn into failures, one test each.
BROKEN = """
import threading

import pytest

def test_a_thread_raises():
    def fail():
        raise RuntimeError("lost in a thread")
    thread = threading.Thread(target=fail)
    thread.start()
    thread.join()

@pytest.mark.xfail(reason="expected to fail")
def test_passes_though_expected_to_fail():
    pass

def test_fine():
    pass
"""


def test_the_projects_settings_fail_what_would_pass_unseen(pytester):
    """pyproject.toml's pytest settings (its strictness options and warning filters, in
    an inner session of their own) fail a test whose thread raised and an xfail test
    that passed; a misspelt marker stops the collection."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]
    strict = [option for option in settings["addopts"].split() if option.startswith("--strict")]
    assert strict == ["--strict-markers"]
    lines = ["[pytest]", f"addopts = {' '.join(strict)}",
             f"xfail_strict = {str(settings['xfail_strict']).lower()}",
             "markers =", *(f"    {marker}" for marker in settings["markers"]),
             "filterwarnings =", *(f"    {rule}" for rule in settings["filterwarnings"])]
    pytester.makeini("\n".join(lines))
    pytester.makepyfile(test_broken=BROKEN)
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*lost in a thread*", "*XPASS(strict)*"])

    pytester.makepyfile(test_misspelt="import pytest\n\n@pytest.mark.slwo\n"
                                      "def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider",
                                          "test_misspelt.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*'slwo' not found in `markers`*"])
