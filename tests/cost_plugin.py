"""What each test costs: a pytest plugin, on when `AZJAX_TEST_COSTS` names an output file.

Per test (setup, call and teardown together) it records the wall time, the XLA
compilations this process asked for (JAX's backend-compile events, which a persistent
cache hit also reports) and their seconds, the hits on the persistent compilation cache,
the seconds spent tracing and lowering, and the child processes the test started. Each
xdist worker measures its own tests and sends the figures to the controller with the
test's reports; the controller writes one JSON object per test to the file, in the order
the tests finished, and a line of totals at the end of the run (with the date, the
checkout's commit and the machine, which the table in docs/trust.md is stamped with).
Child processes' own compilations are not seen: their cost is in the test's wall time.

`python tests/cost_table.py FILE` turns the file into the table in docs/trust.md and the
per-file seconds (`tests/file_costs.json`) that order the files longest first.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections import defaultdict

import pytest

ENV_VAR = "AZJAX_TEST_COSTS"
_COMPILE = "/jax/core/compile/backend_compile_duration"
_TRACE = ("/jax/core/compile/jaxpr_trace_duration",
          "/jax/core/compile/jaxpr_to_mlir_module_duration")
_HIT = "/jax/compilation_cache/cache_hits"
_FIELDS = ("seconds", "compiles", "compile_seconds", "cache_hits", "trace_seconds",
           "children")


class _Counters:
    """Running totals of this process's compilations and child processes."""

    def __init__(self) -> None:
        self.values = dict.fromkeys(_FIELDS[1:], 0.0)

    def on_duration(self, event: str, seconds: float, **_) -> None:
        if event == _COMPILE:
            self.values["compiles"] += 1
            self.values["compile_seconds"] += seconds
        elif event in _TRACE:
            self.values["trace_seconds"] += seconds

    def on_event(self, event: str, **_) -> None:
        if event == _HIT:
            self.values["cache_hits"] += 1

    def snapshot(self) -> dict[str, float]:
        return dict(self.values)


class CostPlugin:
    """Measures each test in the process that runs it, and writes the figures from the
    process that reports them (the xdist controller, or the only process)."""

    def __init__(self, path: str, writes: bool) -> None:
        self.path = path
        self.writes = writes
        self.counters = _Counters()
        self.totals: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(_FIELDS, 0.0))
        self.outcomes: dict[str, str] = {}
        self.started = time.perf_counter()
        self._listening = False
        self._patch_popen()

    def _patch_popen(self) -> None:
        self._original_popen_init = original = subprocess.Popen.__init__
        counters = self.counters

        def counting_init(process, *args, **kwargs):
            counters.values["children"] += 1
            original(process, *args, **kwargs)

        subprocess.Popen.__init__ = counting_init

    def pytest_unconfigure(self, config):
        subprocess.Popen.__init__ = self._original_popen_init
        if self._listening:
            from jax import monitoring

            monitoring.unregister_event_duration_listener(self.counters.on_duration)
            monitoring.unregister_event_listener(self.counters.on_event)

    def _listen(self) -> None:
        # jax is imported by the tests anyway; listening before the first test keeps the
        # import out of conftest's module scope (which must set JAX variables first).
        if not self._listening:
            from jax import monitoring

            monitoring.register_event_duration_secs_listener(self.counters.on_duration)
            monitoring.register_event_listener(self.counters.on_event)
            self._listening = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self._listen()
        item._azjax_cost_before = self.counters.snapshot()  # fixtures included

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        before = item._azjax_cost_before
        outcome = yield
        after = self.counters.snapshot()
        cost = {key: after[key] - before[key] for key in after}
        cost["seconds"] = call.duration
        cost["slow"] = item.get_closest_marker("slow") is not None
        item._azjax_cost_before = after
        outcome.get_result().azjax_cost = cost

    def pytest_runtest_logreport(self, report):
        cost = getattr(report, "azjax_cost", None)
        if not self.writes or cost is None:
            return
        total = self.totals[report.nodeid]
        for key in _FIELDS:
            total[key] += cost.get(key, 0.0)
        if report.outcome != "passed":  # the outcome of the test is its worst phase's
            self.outcomes[report.nodeid] = report.outcome
        if report.when == "teardown":
            self._write(report.nodeid, total, cost["slow"])

    def _write(self, nodeid: str, total: dict[str, float], slow: bool) -> None:
        record = {"test": nodeid, "file": nodeid.split("::")[0], "slow": slow,
                  "outcome": self.outcomes.get(nodeid, "passed")}
        record.update({key: round(value, 3) if isinstance(value, float) else value
                       for key, value in total.items()})
        for key in ("compiles", "cache_hits", "children"):
            record[key] = int(record[key])
        with open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")

    def pytest_sessionfinish(self, session):
        if not self.writes:
            return
        sums = dict.fromkeys(_FIELDS, 0.0)
        for total in self.totals.values():
            for key in _FIELDS:
                sums[key] += total[key]
        sums = {key: round(value, 1) for key, value in sums.items()}
        sums.update(total=True, tests=len(self.totals),
                    wall_seconds=round(time.perf_counter() - self.started, 1),
                    date=time.strftime("%Y-%m-%d"), commit=checkout_commit(),
                    machine=machine())
        with open(self.path, "a") as out:
            out.write(json.dumps(sums) + "\n")

    def pytest_terminal_summary(self, terminalreporter):
        if not self.writes or not self.totals:
            return
        sums = dict.fromkeys(_FIELDS, 0.0)
        for total in self.totals.values():
            for key in _FIELDS:
                sums[key] += total[key]
        terminalreporter.write_sep("=", "test costs (AZJAX_TEST_COSTS)")
        terminalreporter.write_line(
            f"{len(self.totals)} tests: {sums['seconds']:.0f} s of test time, "
            f"{sums['compiles']:.0f} compilations ({sums['compile_seconds']:.0f} s, "
            f"{sums['cache_hits']:.0f} from the persistent cache), "
            f"{sums['trace_seconds']:.0f} s tracing and lowering, "
            f"{sums['children']:.0f} child processes; per test in {self.path}")


def checkout_commit() -> str:
    """The checkout's commit, as the cost table names it.

    Returns:
        Its short hash, with `-dirty` when files differ from it (`git describe --always
        --dirty`), or `unknown` outside a git checkout.
    """
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"],
                              cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def machine() -> str:
    """The machine the tests run on, as the cost table names it.

    Returns:
        Its processor's model (Linux's /proc/cpuinfo, else `platform.processor()`), the
        CPUs this process may use and the memory, e.g. "AMD EPYC, 2 CPUs, 23.5 GiB of
        memory" (the parts that cannot be read left out).
    """
    model = ""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info
                          if line.startswith("model name")), "")
    except OSError:
        pass
    parts = [model or platform.processor() or platform.machine() or "unknown processor"]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if cpus:
        parts.append(f"{cpus} CPUs")
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        parts.append(f"{memory / 2**30:.1f} GiB of memory")
    except (AttributeError, ValueError, OSError):
        pass
    return ", ".join(parts)


def order_longest_first(items: list, costs: dict[str, dict[str, float]]) -> None:
    """Sorts pytest `items` file by file, the longest files first, keeping the order of
    the tests within a file and of files of equal cost.

    Args:
        items: collected test items (with `nodeid` and `get_closest_marker`), sorted in
            place.
        costs: {file: {"default": seconds, "slow": seconds}} (`tests/file_costs.json`);
            a file runs its slow seconds when any of its items is marked slow, and a file
            it does not know counts as the longest.
    """
    def file_of(item) -> str:
        return item.nodeid.split("::")[0]

    slow: dict[str, bool] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(file_of(item), index)
        slow[file_of(item)] = (slow.get(file_of(item), False)
                               or item.get_closest_marker("slow") is not None)

    def cost(path: str) -> float:
        if path not in costs:
            return float("inf")
        return costs[path]["slow" if slow[path] else "default"]

    items.sort(key=lambda item: (-cost(file_of(item)), first[file_of(item)]))


def register(config) -> None:
    """Registers the plugin when `AZJAX_TEST_COSTS` is set (from conftest's
    `pytest_configure`); an existing file is replaced by the controller."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return
    is_worker = hasattr(config, "workerinput")
    if not is_worker and os.path.exists(path):
        os.remove(path)
    config.pluginmanager.register(CostPlugin(path, writes=not is_worker), "azjax-test-costs")
