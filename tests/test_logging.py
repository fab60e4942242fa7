"""Logging: TensorBoard events next to metrics.jsonl, and status lines with rate and ETA."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest
from test_training import SMALL

from azjax import train
from azjax.run.directory.run_dir import RunDir
from azjax.run.process.progress import Progress, format_duration


def read_events(log_dir: Path) -> dict[str, dict[int, float]]:
    """Scalars of every TensorBoard event file in `log_dir` (TFRecord framing)."""
    from tensorboardX.proto.event_pb2 import Event

    scalars: dict[str, dict[int, float]] = {}
    for path in sorted(log_dir.iterdir()):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset: offset + 8])
            event = Event.FromString(data[offset + 12: offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars


def test_tensorboard_gets_the_same_scalars_as_metrics_jsonl(tmp_path):
    config = SMALL.replace(iterations=3, tensorboard=True,
                                 eval_opponents=("random",), eval_games=4)
    run_dir = tmp_path / "run"
    train(config, run_dir, progress=None)
    scalars = read_events(run_dir / "tensorboard")
    records = RunDir(run_dir).metrics.read()
    assert [r["iteration"] for r in records] == [1, 2, 3]
    # Every iteration logs its training scalars; evaluations (every 2nd, and the last)
    # log theirs.
    logged = {"loss": {1, 2, 3}, "value_loss": {1, 2, 3}, "games": {1, 2, 3},
              "net_optimal_share": {2, 3}}
    by_iteration = {r["iteration"]: r for r in records}
    for key, iterations in logged.items():
        assert set(scalars[key]) == iterations, key
        for i in iterations:
            assert scalars[key][i] == pytest.approx(by_iteration[i][key], rel=1e-6)
    assert set(scalars["vs_random"]) == {2, 3}
    for i in (2, 3):
        assert scalars["vs_random"][i] == pytest.approx(by_iteration[i]["vs random"])


def test_progress_line_rate_eta_and_throttle():
    now = [0.0]
    lines = []
    status = Progress(10, "games", "arena", initial=2, write=lines.append, every=5.0,
                      clock=lambda: now[0])
    now[0] = 4.0
    assert status.update(6) == "arena: 6/10 games | 1 games/s | 4s elapsed | ETA 4s"
    now[0] = 6.0
    assert status.update(8) is None  # 2 s after the last line
    now[0] = 7.0
    assert status.update(10).endswith("done")
    assert len(lines) == 2
    assert format_duration(59.6) == "1m00s" and format_duration(3725) == "1h02m"


def test_training_status_line_shows_the_time_left(tmp_path):
    lines = []
    train(SMALL.replace(iterations=3, eval_every=0), None, progress=lines.append)
    assert all("ETA" in line for line in lines[:-1])
    assert "ETA 0s" in lines[-1]


def test_tensorboard_without_tensorboardx_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails as if missing
    with pytest.raises(ValueError, match=r"pip install 'azjax\[tensorboard\]'"):
        train(SMALL.replace(iterations=1, tensorboard=True), tmp_path / "run",
              progress=None)
    assert not (tmp_path / "run").exists()


def test_a_time_budget_caps_the_eta():
    """A sweep of runs with --max-minutes ends within the budget, whatever the rate says
    (it showed 11m33s for a 1.5-minute sweep)."""
    now = [0.0]
    status = Progress(100, "it", clock=lambda: now[0])
    now[0] = 10.0
    assert "ETA 1m30s" in status.line(10)  # 90 left at 1 it/s
    assert "ETA 30s" in status.line(10, limit=30.0)
    assert "ETA 1m30s" in status.line(10, limit=600.0)  # the rate's ETA, when sooner
    assert "ETA 0s" in status.line(10, limit=-5.0)
