"""How long a run takes to exit after SIGTERM that comes while it plays GNU Go: what a
scheduler's grace time (Slurm's `GraceTime`, Kubernetes' 30 s) must cover.

    python benchmarks/stop_during_gnugo.py [--trials 3] [--wait 3] [--repo DIR] [--out DIR]

Each trial starts `python experiments/go9x9.py` with its 7x7 warm-up off and an evaluation
against gnugo:1 after every iteration (`--warm-up '' --eval-every 1 --eval-every-minutes 0
--max-minutes 0`), waits until the run's first GNU Go process appears (the first
evaluation's games have begun) and `--wait` seconds more, sends SIGTERM to the training
process and times until it exits. It prints, per trial, those seconds, the exit status,
the newest checkpoint and whether the stop's record holds a score against GNU Go (an
evaluation played to its end). `--repo` runs another checkout's script and package (a
`git worktree` of an older commit, say) with this Python; `--out DIR` keeps each trial's
run directory and output in DIR/N, to resume the run from its checkpoint, say.
`--quick`: one trial of the recipe at `benchmarks/_quick.py`'s sizes, stopped as its first
GNU Go process appears, in seconds (to check the script end to end; the figures mean
nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _quick

ROOT = Path(__file__).resolve().parents[1]
START_LIMIT_S = 1800.0
"""Seconds to wait for the first GNU Go process (compilation, one iteration) before the
trial is given up."""


def gnugo_children(pid: int) -> list[int]:
    """The GNU Go processes whose parent is `pid` (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
        if name == "gnugo" and int(rest.split()[1]) == pid:
            found.append(int(entry.name))
    return found


def trial(repo: Path, folder: Path, wait: float, flags: list[str]) -> str:
    """One run (with training options `flags` too) stopped by SIGTERM during its first
    GNU Go evaluation; its figures as a line."""
    run_dir = folder / "run"
    command = [sys.executable, str(repo / "experiments" / "go9x9.py"), "--run-dir", str(run_dir),
               "--warm-up", "", "--eval-every", "1", "--eval-every-minutes", "0",
               "--max-minutes", "0", "--iterations", "1000", *flags]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    with open(folder / "out", "w") as out, open(folder / "err", "w") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=repo, env=env)
    deadline = time.monotonic() + START_LIMIT_S
    while not gnugo_children(process.pid):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            return f"no GNU Go process appeared: {(folder / 'err').read_text()[-500:]}"
        time.sleep(0.05)
    time.sleep(wait)
    playing = len(gnugo_children(process.pid))
    start = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    code = process.wait()
    seconds = time.perf_counter() - start
    steps = sorted(int(p.name) for p in (run_dir / "checkpoints").glob("*") if p.name.isdigit())
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    from azjax.run.metric_schema import versus_key  # after the run: it imports JAX

    scored = (any(k.startswith(versus_key("gnugo")) for k in records[-1]) if records
              else False)
    last = (folder / "err").read_text().strip().splitlines()[-1:]
    return (f"exited {seconds:.1f} s after SIGTERM ({playing} GNU Go processes then); exit "
            f"status {code}; newest checkpoint {steps[-1] if steps else None}; last record: "
            f"iteration {records[-1]['iteration'] if records else None}, "
            f"{'with' if scored else 'without'} a score vs GNU Go; {last[0] if last else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--wait", type=float, default=3.0,
                        help="seconds after the first GNU Go process before SIGTERM")
    parser.add_argument("--repo", type=Path, default=ROOT,
                        help="the checkout whose experiments/go9x9.py and azjax run")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep each trial's run directory and output in OUT/N "
                        "(default: a temporary directory)")
    args = _quick.parse(parser, trials=1, wait=0.0)
    flags = _quick.flags() if args.quick else []
    with tempfile.TemporaryDirectory() as temporary:
        root = args.out or Path(temporary)
        for i in range(args.trials):
            folder = root / str(i)
            folder.mkdir(parents=True)
            print(f"trial {i + 1}: {trial(args.repo.resolve(), folder, args.wait, flags)}",
                  flush=True)


if __name__ == "__main__":
    main()
