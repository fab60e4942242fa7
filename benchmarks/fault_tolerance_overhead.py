"""What surviving faults costs a run of two processes: the stop agreement that every
iteration makes (one all-gather of an integer, so that a signal to any process stops all
at one iteration) against the iteration itself, measured in the same processes.

    python benchmarks/fault_tolerance_overhead.py [--recipe tictactoe] [--iterations 40]
    python benchmarks/fault_tolerance_overhead.py --faults [--repeats 2]

Starts two processes of one CPU device each (jax.distributed on 127.0.0.1, as
tests/test_faults.py does). Each one times `--calls` agreements, then trains the recipe
for `--iterations` iterations without a run directory. Process 0 prints the median
agreement, the median iteration (from the iterations' wall times, compilation
excluded) and their ratio. The heartbeat threads run throughout, so their cost is in
the iteration's time.

`--faults` times, instead, how soon a run of two processes (the experiment script, the
recipe's defaults, `--heartbeat-timeout 30`) stops after a fault: `kill -9` of process 1
or of process 0 when process 0 prints iteration 30, or SIGTERM to both at iteration 40.
It prints the seconds from the fault to the last exit, the exit statuses and, for
SIGTERM, the newest checkpoint.

`--quick` shrinks either to seconds (to check the script end to end; the figures mean
nothing): the recipe at `benchmarks/_quick.py`'s sizes, 3 iterations and 5 agreements;
with `--faults`, one run of each fault, at iteration 3 (SIGTERM: 4).
"""

from __future__ import annotations

import argparse
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _quick

ROOT = Path(__file__).resolve().parents[1]


def _worker(args: argparse.Namespace) -> None:
    from azjax.run.process.devices import arrange

    arrange(2, f"127.0.0.1:{args.port}", 2, args.process_id)
    from azjax.driver import train
    from azjax.run.process.devices import agreed_max
    from azjax.run.recipes import recipe

    for _ in range(20):  # compiles the all-gather
        agreed_max(0)
    agree = []
    for _ in range(args.calls):
        start = time.perf_counter()
        agreed_max(0)
        agree.append(time.perf_counter() - start)
    config = recipe(args.recipe, "cpu")
    if args.quick:
        config = _quick.shrink(config)
    config = config.replace(iterations=args.iterations, eval_every=0, devices=2,
                            stop_when_perfect=False, log_every=1)
    walls = [r["wall_time"] for r in train(config, None, progress=None).records]
    steps = [b - a for a, b in zip(walls[1:], walls[2:])]  # the first holds compilation
    if args.process_id == 0:
        a, s = statistics.median(agree), statistics.median(steps)
        print(f"{args.recipe}, two processes of one CPU device each: stop agreement "
              f"{a * 1e3:.2f} ms (median of {args.calls}), iteration {s * 1e3:.1f} ms "
              f"(median of {len(steps)}); agreement / iteration = {a / s:.4f}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fault(kind: str, recipe: str, root: Path, quick: bool) -> str:
    """One run of two processes, one fault (`quick`: at `_quick`'s sizes, 10 times
    sooner); its timing as a line."""
    run_dir, port = root / kind, _free_port()
    logs = [root / f"{kind}.{i}.out" for i in (0, 1)]
    workers = []
    for i in (0, 1):
        with open(logs[i], "w") as out:
            workers.append(subprocess.Popen(
                [sys.executable, str(ROOT / "experiments" / f"{recipe}.py"), "--run-dir",
                 str(run_dir), "--devices", "2", "--num-processes", "2", "--process-id", str(i),
                 "--coordinator-address", f"127.0.0.1:{port}", "--no-stop-when-perfect",
                 "--iterations", "100000", *(_quick.flags() if quick else [])],
                stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT))
    at = (40 if kind == "sigterm" else 30) // (10 if quick else 1)
    while f"it {at:5d} |" not in logs[0].read_text():
        if any(w.poll() is not None for w in workers):
            sys.exit(f"{kind}: a process ended before iteration {at}")
        time.sleep(0.05)
    start = time.perf_counter()
    if kind == "sigterm":
        for w in workers:
            w.send_signal(signal.SIGTERM)
    else:
        workers[int(kind[-1])].kill()
    codes = [w.wait() for w in workers]
    seconds = time.perf_counter() - start
    steps = sorted(int(p.name) for p in (run_dir / "checkpoints").iterdir() if p.name.isdigit())
    return (f"{kind}: stopped {seconds:.2f} s after the fault; exit statuses {codes}"
            + (f"; newest checkpoint {steps[-1]}" if kind == "sigterm" else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="tictactoe")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--faults", action="store_true",
                        help="time the stop after each fault instead")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each fault")
    parser.add_argument("--process-id", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = _quick.parse(parser, iterations=3, calls=5, repeats=1)
    if args.process_id >= 0:
        _worker(args)
        return
    if args.faults:
        with tempfile.TemporaryDirectory() as root:
            for repeat in range(args.repeats):
                for kind in ("kill1", "kill0", "sigterm"):
                    folder = Path(root) / str(repeat)
                    folder.mkdir(exist_ok=True)
                    print(_fault(kind, args.recipe, folder, args.quick), flush=True)
        return
    port = _free_port()
    common = [sys.executable, __file__, "--recipe", args.recipe, "--iterations",
              str(args.iterations), "--calls", str(args.calls), "--port", str(port),
              *(["--quick"] if args.quick else [])]
    workers = [subprocess.Popen([*common, "--process-id", str(i)], cwd=ROOT) for i in (0, 1)]
    codes = [w.wait() for w in workers]
    if any(codes):
        sys.exit(f"a worker failed: exit statuses {codes}")


if __name__ == "__main__":
    main()
