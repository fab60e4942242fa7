"""What buys strength per CPU-minute: the field's sample-efficiency levers, each screened
against the recipe at equal CPU time. The figures of docs/strength.md.

    python benchmarks/strength_levers.py [--out runs/strength_levers] [--minutes 20]
        [--seeds 4] [--first-seed 0] [--arms recipe,restarts,katago_cap,value_rows_cap,reanalyse,
        restarts_katago_cap]
        [--eval-simulations 64] [--eval-positions 1000] [--redo ARM,...] [--quick]

Each arm is the connect_four cpu recipe, made smaller as in gumbel_few_simulations.py
(`SMALLER`), with one lever laid over it (`ARMS`). An arm's `--seeds` seeds train
vmapped in one process pinned to one core for `--minutes` minutes; two arms train at once,
one a core, so every seed of every arm gets the same CPU time. Each seed's last network
is graded on the 1,000 solved Connect Four positions (`benchmarks/gumbel_few_simulations.py`'s
`Grader`: the network alone, and PUCT and Gumbel searches of `--eval-simulations`); the
network alone is also graded along the way (the run's own evaluations, every quarter of
the budget), against both training steps and minutes. Seeds are the unit: per-seed
values, a 95% t-interval over seeds, and Welch's test of each lever against the recipe.

An arm already trained under OUT is graded again, not trained again, unless named in
`--redo`. OUT/strength_levers.md holds every table. `--quick` trains each arm half a
minute at `benchmarks/_quick.py`'s sizes, 2 seeds, grading on 50 positions with 4
simulations; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]

ARMS: dict[str, dict[str, Any]] = {
    "recipe": {},
    # Go-Exploit's archive as p3achygo sizes it: 64 states, each played position joins
    # with probability 0.02, half the new games restart from it.
    "restarts": {"selfplay.restart_prob": 0.5, "selfplay.archive_size": 64,
                 "selfplay.archive_prob": 0.02},
    # KataGo's playout cap randomisation: a quarter of the moves searched in full (the
    # only training rows), the rest with 8 simulations, greedy and without noise.
    "katago_cap": {"selfplay.full_search_prob": 0.25, "selfplay.cheap_simulations": 8,
                   "selfplay.cheap_moves": "katago"},
    # azjax's first form of it: the cheap moves keep their noise and train the value.
    "value_rows_cap": {"selfplay.full_search_prob": 0.25, "selfplay.cheap_simulations": 8,
                       "selfplay.cheap_moves": "value_rows"},
    # MuZero Reanalyse: a quarter as many positions re-searched as self-play plays.
    "reanalyse": {"reanalyse_positions": 256},
}
# The two levers that led the first screen, together.
ARMS["restarts_katago_cap"] = {**ARMS["restarts"], **ARMS["katago_cap"]}
"""Each arm's settings over the smaller recipe (the reanalysis count is a quarter of its
128 games x 8 moves an iteration)."""
DEFAULT_ARMS = ("recipe", "restarts", "katago_cap", "value_rows_cap", "reanalyse",
                "restarts_katago_cap")
SOURCES = {
    "recipe": "the connect_four cpu recipe, made smaller (`SMALLER`)",
    "restarts": "Go-Exploit (Trudeau and Bowling 2023); sizes of p3achygo",
    "katago_cap": "KataGo's paper (Wu 2019), section 3.1",
    "value_rows_cap": "azjax's first playout cap randomisation",
    "reanalyse": "MuZero Reanalyse (Schrittwieser et al. 2021)",
    "restarts_katago_cap": "restarts and KataGo's playout cap together",
}
METRICS = ("net_optimal", "net_result_kept", "puct_optimal", "gumbel_optimal",
           "gumbel_result_kept")


def arm_config(args, arm: str):
    """The arm's `TrainConfig`: the smaller recipe with the arm's settings, run for
    `args.minutes` minutes, the network alone graded every quarter of it."""
    import gumbel_few_simulations as few

    settings = [f"{name}={value}" for name, value in ARMS[arm].items()
                if not (args.quick and name == "selfplay.cheap_simulations")]  # quick's 2
    config = few.base_config(10_000_000, settings, args.quick)
    quarter = max(args.minutes / 4, 0.25)
    return config.replace(max_minutes=args.minutes, checkpoint_every=0,
                          checkpoint_every_minutes=quarter, eval_every=0,
                          eval_every_minutes=quarter)


def arm_dir(out: Path, arm: str) -> Path:
    return out / "runs" / arm


def train_arm(args, arm: str) -> None:
    """One arm's seeds, vmapped in this process (run pinned to one core)."""
    from azjax.sweep.sweep import run_sweep

    seeds = range(args.first_seed, args.first_seed + args.seeds)
    run_sweep(arm_config(args, arm), [], seeds, arm_dir(args.out, arm))


def train_pair(args, arms: list[str]) -> None:
    """Trains up to two arms at once, each in its own process pinned to its own core."""
    from _pinned import run_pinned

    commands = []
    for arm in arms:
        command = [sys.executable, __file__, "--train-arm", arm, "--out", str(args.out),
                   "--minutes", str(args.minutes), "--seeds", str(args.seeds),
                   "--first-seed", str(args.first_seed)]
        if args.quick:
            command.append("--quick")
        commands.append(command)
    run_pinned(commands)


def records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").open()]


def grade_arm(args, arm: str, grader) -> list[dict[str, Any]]:
    """Every seed of `arm`: its last network's grades, its budget as spent, and the
    network-alone curve its run recorded."""
    rows = []
    runs = sorted(config.parent for config in arm_dir(args.out, arm).rglob("config.json"))
    for index, run in enumerate(runs):
        grades = grader.evaluate(run, args.eval_simulations, index)
        logged = records(run)
        last = logged[-1]
        curve = [{"iteration": r["iteration"], "minutes": r["wall_time"] / 60,
                  "net_optimal": r["net_move_accuracy"]}
                 for r in logged if "net_move_accuracy" in r and "wall_time" in r]
        rows.append({"arm": arm, "run": str(run.relative_to(args.out)),
                     "iterations": last.get("iteration"), "games": last.get("games"),
                     "minutes": last.get("wall_time", 0.0) / 60, "curve": curve,
                     **grades})
        print(f"{arm} {run.name}: net optimal {grades['net_optimal']:.3f}, "
              f"gumbel optimal {grades['gumbel_optimal']:.3f}", flush=True)
    if not rows:
        raise RuntimeError(f"arm {arm} has no runs under {arm_dir(args.out, arm)}")
    return rows


# ------------------------------------------------------------------------------- report


def percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def arms_table(rows: list[dict[str, Any]], arms: list[str]) -> str:
    """Each arm: mean and 95% t-interval over seeds of every metric (`share_ci`)."""
    from azjax.evaluation.stats import share_ci

    lines = ["| arm | seeds | iterations | games | " + " | ".join(METRICS) + " |",
             "| --- " + "| ---: " * (3 + len(METRICS)) + "|"]
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        cells = []
        for metric in METRICS:
            mean, low, high = share_ci([r[metric] for r in mine])
            cells.append(f"{percent(mean)} ({percent(low)}-{percent(high)})")
        lines.append(f"| {arm} | {len(mine)} | "
                     f"{statistics.mean(r['iterations'] for r in mine):.0f} | "
                     f"{statistics.mean(r['games'] for r in mine):,.0f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def seeds_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| arm | run | iterations | games | " + " | ".join(METRICS) + " |",
             "| --- | --- " + "| ---: " * (2 + len(METRICS)) + "|"]
    for r in rows:
        lines.append(f"| {r['arm']} | {r['run']} | {r['iterations']} | {r['games']:,} | "
                     + " | ".join(percent(r[m]) for m in METRICS) + " |")
    return "\n".join(lines)


def differences(rows: list[dict[str, Any]], arms: list[str]) -> list[dict[str, Any]]:
    """Each lever minus the recipe, per metric: Welch's difference, interval and p."""
    from azjax.evaluation.stats import welch_difference

    base = [r for r in rows if r["arm"] == "recipe"]
    out = []
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if arm == "recipe" or len(base) < 2 or len(mine) < 2:
            continue
        for metric in METRICS:
            diff, low, high, p = welch_difference([r[metric] for r in base],
                                                  [r[metric] for r in mine])
            out.append({"arm": arm, "metric": metric, "diff": diff, "low": low,
                        "high": high, "p": p})
    return out


def differences_table(diffs: list[dict[str, Any]]) -> str:
    lines = ["| lever | metric | lever - recipe (95% Welch interval) | p |",
             "| --- | --- | ---: | ---: |"]
    for d in diffs:
        lines.append(f"| {d['arm']} | {d['metric']} | {100 * d['diff']:+.1f} "
                     f"({100 * d['low']:+.1f} to {100 * d['high']:+.1f}) points | "
                     f"{d['p']:.2f} |")
    return "\n".join(lines)


def curves_table(rows: list[dict[str, Any]], arms: list[str]) -> str:
    """The network alone along the way: each arm's mean over seeds at each quarter of the
    budget, with the iterations (training steps / gradient steps per iteration) and
    minutes it had reached."""
    lines = ["| arm | evaluation | iterations | minutes | net_optimal (mean of seeds) |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for arm in arms:
        curves = [r["curve"] for r in rows if r["arm"] == arm and r["curve"]]
        if not curves:
            continue
        for k in range(min(len(c) for c in curves)):
            points = [c[k] for c in curves]
            lines.append(
                f"| {arm} | {k + 1} | "
                f"{statistics.mean(p['iteration'] for p in points):.0f} | "
                f"{statistics.mean(p['minutes'] for p in points):.1f} | "
                f"{percent(statistics.mean(p['net_optimal'] for p in points))} |")
    return "\n".join(lines)


def report(args, rows: list[dict[str, Any]], arms: list[str]) -> str:
    settings = "\n".join(f"- `{arm}` ({SOURCES[arm]}): "
                         + (", ".join(f"`{k}={v}`" for k, v in ARMS[arm].items()) or
                            "no change") for arm in arms)
    return "\n".join([
        "# Strength per CPU-minute: the screen\n",
        f"By `python benchmarks/strength_levers.py {' '.join(args.argv)}`: each arm "
        f"{args.minutes:g} minutes on one core, {args.seeds} seeds vmapped, two arms at "
        f"once. Graded on {args.eval_positions} solved Connect Four positions; searches "
        f"of {args.eval_simulations} simulations; mean and 95% t-interval over seeds.\n",
        settings, "", "## The arms\n", arms_table(rows, arms), "",
        "## Each lever against the recipe\n", differences_table(differences(rows, arms)), "",
        "## The network alone along the way\n", curves_table(rows, arms), "",
        "## Each seed\n", seeds_table(rows), ""])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/strength_levers"))
    parser.add_argument("--arms", default=",".join(DEFAULT_ARMS))
    parser.add_argument("--redo", default="", help="arms to train again")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds first_seed.. (fresh seeds to confirm a screen)")
    parser.add_argument("--eval-simulations", type=int, default=64)
    parser.add_argument("--eval-positions", type=int, default=1000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--train-arm", choices=tuple(ARMS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = argv
    if args.quick:
        args.minutes, args.seeds = 0.5, 2
        args.eval_simulations, args.eval_positions = 4, 50
    if args.train_arm is not None:
        train_arm(args, args.train_arm)
        return 0
    arms = [a for a in args.arms.split(",") if a]
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arms {sorted(unknown)}; choose from {', '.join(ARMS)}")
    if args.seeds < 2:
        parser.error("--seeds must be at least 2 (seeds are the unit of comparison)")
    redo = set(args.redo.split(",")) - {""}
    args.out.mkdir(parents=True, exist_ok=True)
    todo = [a for a in arms if a in redo or not any(arm_dir(args.out, a).rglob(
        "config.json"))]
    for arm in todo:  # a run left there would be resumed, not trained afresh
        shutil.rmtree(arm_dir(args.out, arm), ignore_errors=True)
    for start in range(0, len(todo), 2):
        train_pair(args, todo[start:start + 2])
    import gumbel_few_simulations as few

    grader = few.Grader(args.eval_positions)
    rows = [row for arm in arms for row in grade_arm(args, arm, grader)]
    (args.out / "strength_levers.json").write_text(json.dumps(rows, indent=1))
    text = report(args, rows, arms)
    (args.out / "strength_levers.md").write_text(text)
    print(text)
    print(f"wrote {args.out / 'strength_levers.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
