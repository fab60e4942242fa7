"""What surviving faults costs a run of two processes: the stop agreement that every
iteration makes (one all-gather of an integer, so that a signal to any process stops all
at one iteration) against the iteration itself, measured in the same processes.

    python benchmarks/fault_tolerance_overhead.py [--recipe tictactoe] [--iterations 40]

Starts two processes of one CPU device each (jax.distributed on 127.0.0.1, as
tests/test_faults.py does). Each one times `--calls` agreements, then trains the recipe
for `--iterations` iterations without a run directory. Process 0 prints the median
agreement, the median iteration (from the iterations' wall times, compilation
excluded) and their ratio. The heartbeat threads run throughout, so their cost is in
the iteration's time.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _worker(args: argparse.Namespace) -> None:
    from azjax.run.devices import arrange

    arrange(2, f"127.0.0.1:{args.port}", 2, args.process_id)
    from azjax.driver import train
    from azjax.run.devices import agreed_max
    from azjax.run.recipes import recipe

    for _ in range(20):  # compiles the all-gather
        agreed_max(0)
    agree = []
    for _ in range(args.calls):
        start = time.perf_counter()
        agreed_max(0)
        agree.append(time.perf_counter() - start)
    config = recipe(args.recipe).replace(iterations=args.iterations, eval_every=0,
                                         devices=2, stop_when_perfect=False, log_every=1)
    walls = [r["wall_time"] for r in train(config, None, progress=None).records]
    steps = [b - a for a, b in zip(walls[1:], walls[2:])]  # the first holds compilation
    if args.process_id == 0:
        a, s = statistics.median(agree), statistics.median(steps)
        print(f"{args.recipe}, two processes of one CPU device each: stop agreement "
              f"{a * 1e3:.2f} ms (median of {args.calls}), iteration {s * 1e3:.1f} ms "
              f"(median of {len(steps)}); agreement / iteration = {a / s:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="tictactoe")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--process-id", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.process_id >= 0:
        _worker(args)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    common = [sys.executable, __file__, "--recipe", args.recipe, "--iterations",
              str(args.iterations), "--calls", str(args.calls), "--port", str(port)]
    workers = [subprocess.Popen([*common, "--process-id", str(i)], cwd=ROOT) for i in (0, 1)]
    codes = [w.wait() for w in workers]
    if any(codes):
        sys.exit(f"a worker failed: exit statuses {codes}")


if __name__ == "__main__":
    main()
