"""Every script in benchmarks/ run end to end in its `--quick` mode (tiny sizes, seconds;
`benchmarks/_quick.py`), in a process of its own as a user runs it: it exits 0 and prints
its table. A benchmark runs for minutes to hours, so a crash after its measurements (or
in a mode nobody ran since a change) would otherwise go unseen. Its figures are not
checked: benchmarks measure speed, tests check behaviour.

The scripts are found by globbing benchmarks/*.py (helpers start with '_'), so a new
script fails here until it has a quick mode and a case in `CASES`. gpu_report.py's
quick mode runs in tests/test_gpu_report.py, which checks its sections' figures, and
gumbel_few_simulations.py's in tests/test_gumbel_experiment.py, which checks its files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import go_tiny
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
ELSEWHERE = {"gpu_report.py": "test_gpu_report.py",
             "gumbel_few_simulations.py": "test_gumbel_experiment.py"}
"""Scripts whose quick mode another test file runs."""

# Slow: runs every benchmark script end to end, each compiling its own programs.
pytestmark = pytest.mark.slow


class Case(NamedTuple):
    """What a script's quick mode is given besides `--quick` (from the test's `tmp_path`
    and fixtures) and the lines its output must hold (regular expressions, per line)."""

    args: Callable[[Path, pytest.FixtureRequest], list[str]]
    shows: tuple[str, ...]


def tiny_run(tmp_path: Path, request: pytest.FixtureRequest) -> list[str]:
    """The tiny tic-tac-toe run (tests/tiny.py), read only."""
    return ["--run-dir", str(request.getfixturevalue("tiny_run"))]


def go_run(tmp_path: Path, request: pytest.FixtureRequest) -> list[str]:
    """A copy of the tiny 5x5 Go run (tests/go_tiny.py): the script writes into it."""
    run = tmp_path / "go"
    shutil.copytree(go_tiny.trained(request.getfixturevalue("tmp_path_factory")).path, run)
    return ["--run-dir", str(run)]


def nothing(tmp_path: Path, request: pytest.FixtureRequest) -> list[str]:
    return []


ROW = r"\d+ / \d+ / \d+ \| [\d.]+% \("  # W / D / L | score (interval)
SCORE = r"[\d.]+% \([\d.]+%-[\d.]+%\)"  # score (interval)
CASES = {
    "alphago_lambda.py": Case(tiny_run, (rf"^\| 0 \| {ROW}", rf"^\| 1 \| {ROW}")),
    "baseline_table.py": Case(
        lambda tmp_path, request: [*tiny_run(tmp_path, request), "--out",
                                   str(tmp_path / "baselines")],
        (rf"^\| random \| 2 \| {ROW}", rf"^\| mcts:2 \| 2 \| {ROW}",
         rf"^\| alphabeta:1 \| 2 \| {ROW}", r"^wrote .*baselines\.md and \.json$")),
    "checkpoint_overhead.py": Case(nothing, (r"^tictactoe +[\d.]+ +[\d.]+s +[\d.]+s +[\d.]+ ",)),
    "connect_four_accuracy.py": Case(
        lambda tmp_path, request: ["--run-dir", str(tmp_path / "c4")],
        (r"^ +0\.\d \| +\d+ \| +[\d.]+% \( *[\d.]+%\) +\| +[\d.]+% \(",
         r"^baselines: a random legal move", r"^ +2 \| +[\d.]+% \( *[\d.]+%\) \|")),
    "conv_throughput.py": Case(nothing, (r"^ lax patches: +[\d,]+ positions/s",
                                         r"^bfloat16: hybrid / patch = .* -> fastest conv=")),
    "device_scaling.py": Case(nothing, (r"^ +1 \| +1 \| +[\d,]+ \( *[\d,]+\) \| +1\.00x",
                                        r"^ +2 \| +2 \| +[\d,]+ \( *[\d,]+\) \| +[\d.]+x")),
    "env_throughput.py": Case(
        lambda tmp_path, request: ["--json", str(tmp_path / "env.json")],
        (r"^tictactoe +2 +[\d,]+ ", r"^wrote ")),
    "fault_tolerance_overhead.py": Case(nothing, (r"agreement / iteration = [\d.]+$",)),
    "go_ablations.py": Case(
        lambda tmp_path, request: ["--out", str(tmp_path / "ablations")],
        (r"^\| all \| [\d.]+ \(end\) \| 1 \| 1 \| 2 \| [\d.]+% \|",
         r"^\| all \| gnugo:1 \| 1 \| 2 \| [\d.]+% \| [\d.]+% \(")),  # mean over seeds, then per seed
    "go_curve.py": Case(go_run, (rf"^\| [\d.]+ \| 8 \| [\d,]+ \| {SCORE} of 2 \|",)),
    "iteration_profile.py": Case(nothing, (r"^tictactoe: [\d.]+ s/iteration = self-play",)),
    "playout_cap_cost.py": Case(nothing, (r"^ +full: +[\d.]+ ms an iteration",
                                          r"^capped / full time: [\d.]+$")),
    "selfplay_throughput.py": Case(nothing, (r"^self-play \(azjax tictactoe\): +[\d,]+ ",
                                             r"^driver step \(E = 1, vmapped\): ")),
    "serve_latency.py": Case(nothing, (r"tictactoe: move request +[\d.]+ ms, .* ratio ",)),
    "stop_during_gnugo.py": Case(
        nothing, (r"^trial 1: exited [\d.]+ s after SIGTERM .*; exit status -?\d+;",)),
    "strength_levers.py": Case(
        lambda tmp_path, request: ["--out", str(tmp_path / "strength_levers")],
        (r"^\| recipe \| 2 \| \d+ \| [\d,]+ \| [\d.]+% \(",
         r"^\| katago_cap \| net_optimal \| [+-][\d.]+ \(",
         r"^\| reanalyse \| 1 \| \d+ \| [\d.]+ \| [\d.]+% \|$",
         r"^wrote .*strength_levers\.md$")),
    "sweep_speedup.py": Case(nothing, (r"^E=2 sequential [\d.]+ s \| vmapped .* speed-up ",)),
    "tree_reuse.py": Case(
        lambda tmp_path, request: ["--out", str(tmp_path / "tree_reuse")],
        (r"^\| puct \| 4 \| 4 \| [\d.]+% \| [\d.]+% \|$",
         r"^\| gumbel \| 4 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ \(",
         rf"^\| gumbel 4 \(fresh root, capacity 4\) vs 4 fresh, equal simulations \| 8 \| "
         rf"{ROW}",
         rf"^\| reuse \(gumbel 32\) vs gnugo:1 \| 2 \| {ROW}",
         r"^\| reuse \| 2 \| \d+ \| [\d,]+ \| [\d.]+% \| [\d.]+% \(",
         r"^wrote .*tree_reuse\.md$")),
    "tictactoe_reference.py": Case(lambda tmp_path, request: ["--check-encoding"],
                                   (r'^\{"seed": 0, "perfect": (true|false), "iterations": 1,',)),
    # Its --reference runs tictactoe_reference.py, whose quick mode has its own case.
    "tictactoe_time_to_perfect.py": Case(nothing, (r"^ours cold \| +0 \| ",
                                                   r"^ours warm \| +0 \| ")),
}
"""Each script's quick case: its arguments and what it prints."""


@pytest.mark.parametrize("script", SCRIPTS)
def test_quick_mode_runs_end_to_end(script: str, tmp_path: Path,
                                    request: pytest.FixtureRequest):
    if script in ELSEWHERE:
        other = (Path(__file__).parent / ELSEWHERE[script]).read_text()
        assert f'"{script}"' in other and '"--quick"' in other
        return
    assert script in CASES, (f"benchmarks/{script} has no quick case: give it --quick "
                             "(benchmarks/_quick.py) and a case in CASES")
    case = CASES[script]
    command = [sys.executable, str(BENCHMARKS / script), "--quick",
               *case.args(tmp_path, request)]
    work = tmp_path / "cwd"  # what a script writes where it runs lands here
    work.mkdir()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=work,
                          check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for pattern in case.shows:
        assert re.search(pattern, done.stdout, re.MULTILINE), (pattern, done.stdout[-3000:])
