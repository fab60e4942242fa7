"""benchmarks/gpu_report.py --quick, run as a user runs it: every section runs in its own
processes and reports figures that make sense (the JSON beside the Markdown). Its speeds
are not asserted (benchmarks measure speed; tests check behaviour).

About 2.5 minutes of a 2-core CPU: three sections at a time, each compiling its programs;
slow, so CI runs it in its second step (`pytest -m slow`).
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
SCRIPT = ROOT / "benchmarks" / "gpu_report.py"


def load_report_module():
    spec = importlib.util.spec_from_file_location("gpu_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_report_runs_every_section(tmp_path):
    # The reference rows and pgx's speeds are checked on every machine: pgx is a test
    # dependency (pyproject's `test` extra), not an optional one.
    assert importlib.util.find_spec("pgx") is not None, "pgx is missing: pip install -e '.[test]'"
    # The report's children run on the backend this process runs on (their environment is
    # this one's): a CPU reports no device memory, an accelerator its peak.
    platform = jax.devices()[0].platform
    on_cpu = platform == "cpu"
    out, figures = tmp_path / "r.md", tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--out", str(out), "--json", str(figures)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text()
    for number, (_, title, *_) in enumerate(load_report_module().SECTIONS, 1):
        assert f"## {number}. {title}" in text
    report = json.loads(figures.read_text())
    assert report["header"]["platform"] == platform
    sections = report["sections"]
    assert {name: s["status"] for name, s in sections.items()} == dict.fromkeys(
        ["ttt", "connect_four", "env_throughput", "sweep", "dtype", "memory", "refusal"], "ok"
    ), {name: s.get("problem") for name, s in sections.items()}
    # 1. tic-tac-toe: our whole process and its iterations; the reference's train + compile
    rows = sections["ttt"]["rows"]
    ours = [r for r in rows if r["who"] == "ours cold"]
    assert len(ours) == 1 and ours[0]["exit_code"] == 0
    assert ours[0]["process_s"] > 0 and ours[0]["iterations"] == 2  # --iterations 2: not perfect
    assert "not perfect within 2 iterations" in text
    (reference,) = [r for r in rows if r["who"] == "reference"]
    assert reference["exit_code"] == 0 and reference["iterations"] >= 1
    assert reference["train_s"] > 0 and reference["compile_s"] > 0
    assert sections["ttt"]["median_ratio"] > 0

    # 2. the Connect Four curve: evaluations with search, shares in [0, 1]
    c4 = sections["connect_four"]
    assert c4["exit_status"] == 0 and c4["iterations"] >= 1
    assert len(c4["evaluations"]) >= 1
    for e in c4["evaluations"]:
        assert e["minutes"] > 0 and e["games"] > 0 and e["positions"] > 0
        for key in ("net_move_accuracy", "search_move_accuracy", "search_result_kept"):
            assert 0 <= e[key] <= 1 and 0 <= e[key + "_hard"] <= 1
    assert (c4["device_peak_bytes"] is None) if on_cpu else (c4["device_peak_bytes"] > 0)

    # 3. env throughput: three games at both batches, against pgx
    env_rows = sections["env_throughput"]["rows"]
    assert {(r["game"], r["batch"]) for r in env_rows} == {
        (game, batch) for game in ("tictactoe", "connect_four", "go(size=9)")
        for batch in (64, 256)}
    for r in env_rows:
        assert r["ours_steps_per_s"] > 0
        assert r["pgx_steps_per_s"] > 0 and r["ratio"] > 0

    # 4. sweep speed-up
    sweep = sections["sweep"]
    assert sweep["experiments"] == 2
    assert sweep["sequential_s"] > 0 and sweep["vmapped_s"] > 0 and sweep["speedup"] > 0

    # 5. bfloat16 against float32: both timed, losses finite
    dtype = sections["dtype"]
    for name in ("float32", "bfloat16"):
        assert dtype[name]["positions_per_s"] > 0 and dtype[name]["losses_finite"]
        assert dtype[name]["losses"] and all(math.isfinite(v)
                                             for v in dtype[name]["losses"].values())
    assert dtype["ratio"] > 0

    # 6. memory: the estimate for each recipe; a CPU reports no peak, an accelerator its own
    memory = sections["memory"]["rows"]
    assert [r["recipe"] for r in memory] == ["tictactoe", "coin_split"]
    for r in memory:
        assert r["problem"] is None and r["estimate_bytes"] > 0
        assert (r["peak_bytes"] is None) if on_cpu else (r["peak_bytes"] > 0)
    assert ("n/a (CPU)" in text) == on_cpu

    # 7. the run too large for this machine: exit 2, one `error:` line, nothing written
    refusal = sections["refusal"]
    assert refusal["estimate_bytes"] > refusal["available_bytes"]
    assert refusal["exit_status"] == 2 and refusal["one_error_line"]
    assert refusal["line"].startswith("error:") and "memory" in refusal["line"]
    assert not refusal["run_dir_created"]
    assert refusal["line"] in text
