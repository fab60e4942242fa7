"""A Go run's training curve against GNU Go: score and mean points margin against
training time, at every checkpoint the run kept, for each GNU Go level.

Plays each kept checkpoint of the run (`--keep-every` keeps them; the go7x7 recipe keeps
every 100th iteration) against each opponent in the arena (`python -m azjax.arena`,
colours alternating, 2 random opening plies, paired across colours), `--games` games
each and `--final-games` for the newest checkpoint, and prints a markdown table: minutes
of training (from metrics.jsonl), iteration, self-play games, then per opponent the
score with its 95% Wilson interval, W/D/L and the mean margin. Arena results are kept in
RUN/curve/ and not played again; the table goes to RUN/curve.md, the numbers to
RUN/curve.json. A checkpoint's play is training's evaluation search (its simulations,
noise off), as during training.

    python benchmarks/go_curve.py --run-dir runs/go7x7 [--opponents gnugo:1 gnugo:10]
        [--games 40] [--final-games 100] [--steps S ...] [--report-only]

`--quick` (seconds, to check the script end to end on any Go run; the figures mean
nothing): 2 games of each checkpoint against gnugo:1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _quick  # noqa: E402
from go_ablations import Failure, _pct, _run, _signed, read_records  # noqa: E402

from azjax.evaluation.stats import wilson_interval  # noqa: E402

OPENINGS = 2
"""Random opening plies of every arena game (paired across colours)."""


def checkpoint_steps(run_dir: Path) -> list[int]:
    """The iterations of the run's kept checkpoints, oldest first."""
    from azjax.run.directory.run_dir import RunDir

    return sorted(RunDir(run_dir).checkpoints.steps())


def result_path(run_dir: Path, opponent: str, step: int) -> Path:
    """Where the arena result of checkpoint `step` against `opponent` is kept."""
    return run_dir / "curve" / f"{opponent.replace(':', '-').replace(',', '_')}-{step}.json"


def play(run_dir: Path, opponent: str, step: int, games: int, seed: int) -> dict:
    """The arena result of checkpoint `step` against `opponent` (played once, then read)."""
    path = result_path(run_dir, opponent, step)
    if path.exists():
        result = json.loads(path.read_text())
        if result.get("games", 0) >= games:
            return result
    path.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "azjax.arena", f"alphazero:{run_dir},step={step}", opponent,
          "--games", str(games), "--openings", str(OPENINGS), "--seed", str(seed),
          "--json", str(path)], f"the arena of iteration {step} against {opponent}")
    return json.loads(path.read_text())


def at_step(records: list[dict], step: int) -> dict:
    """The metrics record of iteration `step` (or the last one before it)."""
    before = [r for r in records if "iteration" in r and r["iteration"] <= step]
    return before[-1] if before else {}


def curve_rows(run_dir: Path, opponents: list[str], records: list[dict],
               results: dict[tuple[str, int], dict]) -> list[dict]:
    """One row per checkpoint: minutes, iteration, games, and per opponent the score,
    its interval, W/D/L and the margin (None where not played)."""
    steps = sorted({step for _, step in results})
    rows = []
    for step in steps:
        record = at_step(records, step)
        row = {"iteration": step, "minutes": record.get("wall_time", 0.0) / 60,
               "games": record.get("games"), "opponents": {}}
        for opponent in opponents:
            result = results.get((opponent, step))
            if result is None:
                continue
            low, high = wilson_interval(result["score"], result["games"])
            row["opponents"][opponent] = {
                "games": result["games"], "score": result["score"], "low": low,
                "high": high, "wins": result["wins"], "draws": result["draws"],
                "losses": result["losses"], "margin": result.get("margin")}
        rows.append(row)
    return rows


def markdown(rows: list[dict], opponents: list[str]) -> str:
    """The curve as a markdown table."""
    head = "| minutes | iteration | self-play games |" + "".join(
        f" vs {o}: score (95% CI) | W/D/L | margin |" for o in opponents)
    lines = [head, "| ---: " * (3 + 3 * len(opponents)) + "|"]
    for row in rows:
        cells = [f"{row['minutes']:.1f}", str(row["iteration"]),
                 f"{row['games']:,}" if row["games"] is not None else "-"]
        for opponent in opponents:
            r = row["opponents"].get(opponent)
            if r is None:
                cells += ["-", "-", "-"]
                continue
            cells += [f"{_pct(r['score'])} ({_pct(r['low'])}-{_pct(r['high'])}) of {r['games']}",
                      f"{r['wins']}/{r['draws']}/{r['losses']}", _signed(r["margin"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Plays (or reads) the curve and prints it; exit 2 with one line on a bad input."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", default="runs/go7x7")
    parser.add_argument("--opponents", nargs="+", default=["gnugo:1", "gnugo:10"])
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--final-games", type=int, default=100)
    parser.add_argument("--steps", type=int, nargs="+", default=None,
                        help="only these kept checkpoints (default: every one)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report-only", action="store_true",
                        help="only read the results already played")
    args = _quick.parse(parser, argv, opponents=["gnugo:1"], games=2, final_games=2)
    run_dir = Path(args.run_dir)
    if not (run_dir / "metrics.jsonl").exists():
        print(f"error: {run_dir} holds no training run (no metrics.jsonl)", file=sys.stderr)
        return 2
    if args.games < 1 or args.final_games < 1:
        print("error: --games and --final-games must be at least 1", file=sys.stderr)
        return 2
    steps = checkpoint_steps(run_dir)
    if not steps:
        print(f"error: {run_dir} has no checkpoint", file=sys.stderr)
        return 2
    if args.steps:
        missing = sorted(set(args.steps) - set(steps))
        if missing:
            print(f"error: {run_dir} kept no checkpoint of iteration "
                  f"{', '.join(map(str, missing))} (kept: {', '.join(map(str, steps))})",
                  file=sys.stderr)
            return 2
        steps = sorted(set(args.steps))
    results: dict[tuple[str, int], dict] = {}
    try:
        for step in steps:
            games = args.final_games if step == steps[-1] else args.games
            for opponent in args.opponents:
                path = result_path(run_dir, opponent, step)
                if args.report_only:
                    if path.exists():
                        results[opponent, step] = json.loads(path.read_text())
                    continue
                results[opponent, step] = play(run_dir, opponent, step, games, args.seed)
    except Failure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    rows = curve_rows(run_dir, args.opponents, read_records(run_dir),
                      results)
    table = markdown(rows, args.opponents)
    print(table)
    (run_dir / "curve.md").write_text(table + "\n")
    (run_dir / "curve.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
