"""The tests' own cost meter (`tests/cost_plugin.py`, `tests/cost_table.py`): per test the
compilations, cache hits and child processes it caused; the table of docs/trust.md; the
files handed out longest first."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import cost_plugin
import cost_table
import jax  # noqa: F401 - the inner runs' JAX: pytester forgets the modules they import
import pytest

pytest_plugins = ["pytester"]

# Two programs of this session's own (a fresh constant: no cache holds them yet) and a
# child process in the first test; nothing in the second.
MEASURED = """
import subprocess, sys

import jax
import jax.numpy as jnp

def test_compiles_two_programs_and_starts_a_child():
    x = jnp.ones(5)  # made before the count: the programs below are the test's
    jax.jit(lambda v: v * {a} + 1.0)(x).block_until_ready()
    jax.jit(lambda v: v - {a})(x).block_until_ready()
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_does_nothing():
    assert True
"""


ROOT = Path(__file__).resolve().parents[1]


def run_measured(pytester, path) -> dict[str, dict]:
    result = pytester.runpytest_inprocess(
        "-p", "no:xdist", "-p", "no:randomly",
        plugins=[cost_plugin.CostPlugin(str(path), writes=True)])
    result.assert_outcomes(passed=2)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return {r.get("test", "total").split("::")[-1]: r for r in records}


def test_each_test_gets_its_own_compilations_hits_and_children(pytester, tmp_path):
    constant = 1.0 + uuid.uuid4().int % 10**6 / 10**7
    pytester.makepyfile(test_measured=MEASURED.format(a=constant))
    first = run_measured(pytester, tmp_path / "first.jsonl")
    busy, idle = first["test_compiles_two_programs_and_starts_a_child"], first["test_does_nothing"]
    # The two new programs miss the cache; what JAX compiles around them (its own
    # small programs) may or may not come from it, as the cache is cold or warm.
    assert busy["compiles"] - busy["cache_hits"] >= 2 and busy["compile_seconds"] > 0
    assert busy["children"] == 1 and busy["outcome"] == "passed" and not busy["slow"]
    assert idle["compiles"] == idle["cache_hits"] == idle["children"] == 0
    assert first["total"]["tests"] == 2 and first["total"]["compiles"] == busy["compiles"]
    assert first["total"]["commit"] == cost_plugin.checkout_commit() != "unknown"
    assert first["total"]["machine"] == cost_plugin.machine()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", first["total"]["date"])
    # Run again in this process: new functions, the same programs, now from the
    # persistent cache the first run wrote.
    again = run_measured(pytester, tmp_path / "again.jsonl")
    hit = again["test_compiles_two_programs_and_starts_a_child"]
    assert hit["cache_hits"] >= 2 and hit["cache_hits"] == hit["compiles"]
    assert hit["children"] == 1


def _record(test: str, seconds: float, slow: bool = False, **counts) -> dict:
    return {"test": test, "file": test.split("::")[0], "slow": slow, "outcome": "passed",
            "seconds": seconds, "compiles": counts.get("compiles", 0),
            "compile_seconds": counts.get("compile_seconds", 0.0),
            "cache_hits": counts.get("cache_hits", 0), "children": counts.get("children", 0)}


def test_the_table_sums_each_file_and_lists_the_long_tests():
    tests = [_record("tests/test_a.py::one", 12.0, compiles=3, compile_seconds=9.0),
             _record("tests/test_a.py::two", 1.0, slow=True, children=2),
             _record("tests/test_b.py::three", 30.0, cache_hits=4)]
    files = cost_table.per_file(tests)
    assert files["tests/test_a.py"]["seconds"] == 12.0
    assert files["tests/test_a.py"]["slow_seconds"] == 1.0
    assert files["tests/test_a.py"]["children"] == 2
    total = {"total": True, "name": "default", "tests": 3, "seconds": 43.0,
             "wall_seconds": 25.0, "compiles": 3, "compile_seconds": 9.0, "cache_hits": 4,
             "children": 2}
    table = cost_table.markdown(tests, [total], over=10.0).splitlines()
    file_rows = [line for line in table if line.startswith("| `test_")]
    assert file_rows[0].startswith("| `test_b.py` | 1 (0) | 30 (0) |")
    assert file_rows[1].startswith("| `test_a.py` | 1 (1) | 12 (1) | 3 | 9 | 0 | 2 |")
    long_rows = [line for line in table if line.startswith("| `test_") and "::" in line]
    assert [row.split("`")[1] for row in long_rows] == ["test_b.py::three", "test_a.py::one"]
    assert "| default | 3 | 43 | 25 | 3 | 9 | 4 | 2 |" in table


def test_the_command_stamps_the_page_s_tables_and_writes_the_file_costs(tmp_path, capsys):
    """`python tests/cost_table.py DEFAULT SLOW --write`: the tables between the page's
    markers, under the date and commit each file's totals line records (given ones for a
    file that records none), the rest of the page as it was, and the seconds per file."""
    runs = {"default": [_record("tests/test_a.py::one", 12.0, compiles=3),
                        {"total": True, "tests": 1, "seconds": 12.0, "wall_seconds": 8.0,
                         "compiles": 3, "compile_seconds": 0.0, "cache_hits": 0,
                         "children": 0, "date": "2026-11-28", "commit": "c764b1c"}],
            "slow": [_record("tests/test_a.py::two", 40.0, slow=True),
                     {"total": True, "tests": 1, "seconds": 40.0, "wall_seconds": 41.0,
                      "compiles": 0, "compile_seconds": 0.0, "cache_hits": 0,
                      "children": 0}]}
    paths = []
    for name, records in runs.items():
        paths.append(tmp_path / f"{name}.jsonl")
        paths[-1].write_text("".join(json.dumps(r) + "\n" for r in records))
    page, file_costs = tmp_path / "trust.md", tmp_path / "file_costs.json"
    page.write_text(f"before\n{cost_table.BEGIN}\nold table\n{cost_table.END}\nafter\n")
    cost_table.main([*map(str, paths), "--write", "--commit", "abc1234", "--date",
                     "2026-12-01", "--page", str(page), "--file-costs", str(file_costs)])
    assert "slow.jsonl records no date: stamped 2026-12-01" in capsys.readouterr().err
    before, table, after = re.split(r"<!-- test-costs: (?:begin|end) -->", page.read_text())
    assert (before, after) == ("before\n", "\nafter\n")
    lines = table.splitlines()
    assert lines[1] == ("Measured: default on 2026-11-28 at commit `c764b1c`; slow on "
                        "2026-12-01 at commit `abc1234`.")
    assert "| default | 1 | 12 | 8 | 3 | 0 | 0 | 0 |" in lines
    assert "| `test_a.py` | 1 (1) | 12 (40) | 3 | 0 | 0 | 0 |" in lines
    assert json.loads(file_costs.read_text()) == {
        "tests/test_a.py": {"default": 12.0, "slow": 40.0}}
    same = [{"name": n, "date": "2026-11-28", "commit": "c764b1c"} for n in runs]
    assert cost_table.stamp(same) == "Measured on 2026-11-28 at commit `c764b1c`."
    named = [{**run, "machine": "AMD EPYC, 2 CPUs, 23.5 GiB of memory"} for run in same]
    assert cost_table.stamp(named) == ("Measured on 2026-11-28 at commit `c764b1c` (machine: "
                                       "AMD EPYC, 2 CPUs, 23.5 GiB of memory).")


def test_the_page_s_table_says_when_and_at_which_commit_it_was_measured():
    page = cost_table.PAGE.read_text()
    table = page.split(cost_table.BEGIN)[1].split(cost_table.END)[0]
    assert re.match(r"\nMeasured(:| on) .*\d{4}-\d\d-\d\d at commit `[0-9a-f]{7,}(-dirty)?`", table)
    assert "python tests/cost_table.py" in page.split(cost_table.BEGIN)[0]


class _Item:
    def __init__(self, nodeid: str, slow: bool = False):
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name):
        return object() if name == "slow" and self.slow else None


def test_files_go_out_longest_first_by_the_seconds_of_what_runs():
    items = [_Item("tests/test_a.py::x"), _Item("tests/test_a.py::y"),
             _Item("tests/test_b.py::z"), _Item("tests/test_c.py::w", slow=True),
             _Item("tests/test_new.py::v"), _Item("tests/test_d.py::u")]
    costs = {"tests/test_a.py": {"default": 5.0, "slow": 0.0},
             "tests/test_b.py": {"default": 50.0, "slow": 0.0},
             "tests/test_c.py": {"default": 1.0, "slow": 100.0},
             "tests/test_d.py": {"default": 5.0, "slow": 0.0}}
    cost_plugin.order_longest_first(items, costs)
    assert [item.nodeid for item in items] == [
        "tests/test_new.py::v",  # unknown: first
        "tests/test_c.py::w",    # its slow test runs: 100 s
        "tests/test_b.py::z",
        "tests/test_a.py::x", "tests/test_a.py::y",  # ties keep the collected order
        "tests/test_d.py::u"]


@pytest.mark.parametrize("name", ["default", "slow"])
def test_the_recorded_file_costs_name_existing_files(name):
    from conftest import _FILE_COSTS

    costs = json.loads(_FILE_COSTS.read_text())
    root = _FILE_COSTS.parents[1]
    assert costs and all((root / path).is_file() for path in costs)
    assert all(entry[name] >= 0 for entry in costs.values())


def test_the_cache_is_kept_where_asked_and_a_cold_one_is_the_sessions_own(
        monkeypatch, tmp_path):
    import conftest

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")  # the child makes its own, too
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("AZJAX_TEST_CACHE", raising=False)
    assert conftest._cache_directory() == (str(tmp_path / "xdg" / "azjax" / "test-xla"), False)
    monkeypatch.setenv("AZJAX_TEST_CACHE", str(tmp_path / "mine"))
    assert conftest._cache_directory() == (str(tmp_path / "mine"), False)
    # A cold session's cache is a directory of its own, gone when its process ends (a
    # process of its own: the directory goes at exit, however the session ended).
    code = ("import os, sys; sys.path.insert(0, 'tests'); import conftest; "
            "print(conftest._CACHE_DIR, conftest._OWN_CACHE, os.path.isdir(conftest._CACHE_DIR))")
    env = {**os.environ, "AZJAX_TEST_CACHE": "off"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    cold, own, existed = done.stdout.split()
    assert (own, existed) == ("True", "True") and not Path(cold).exists(), done.stderr
    # A session started with the variable set (a worker, or a user's own) keeps it.
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "given"))
    assert conftest._cache_directory() == (str(tmp_path / "given"), False)


def test_a_kept_cache_over_its_limit_loses_its_oldest_entries_down_to_half(tmp_path):
    from conftest import _prune

    for age in range(10):  # entry 0 is the oldest
        entry = tmp_path / f"entry{age}"
        entry.write_bytes(b"x" * 100)
        os.utime(entry, (1000 + age, 1000 + age))
    _prune(tmp_path, 1000)  # 1,000 bytes: at the limit, nothing goes
    assert len(list(tmp_path.iterdir())) == 10
    _prune(tmp_path, 900)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"entry{age}" for age in range(6, 10)]
