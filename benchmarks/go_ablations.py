"""Go ablations: score and points margin against GNU Go against training time, each
training lever on and off at the same budget (a Go counterpart of connect_four_accuracy.py).

Trains each chosen variant of `VARIANTS` (the recipe with some levers turned off or on;
by default `DEFAULT_VARIANTS`) for each seed, one training at a time, into
OUT/<variant>/seed=<s> (a run already there resumes; one whose metrics show it used its
budget is not trained again), then plays each trained variant against
`--final-opponents` in the arena (`--final-games` games, seats swapped for half of them,
2 random opening plies). Prints a markdown table, also written to
OUT/ablations.md (raw numbers: OUT/ablations.json): the score and mean margin of network +
search against gnugo:1 at each of the run's evaluations (`metrics.jsonl`, the k-th
evaluation averaged over seeds, each seed's last one in the `end` row), and the final
arena result per opponent with the seed as the unit (each seed's score with its 95%
Wilson interval over its games; the mean over seeds with its 95% t-interval over seeds;
W/D/L; mean margin), and each variant against the first, seeds as the unit (Welch). The recipe's script is experiments/<recipe>.py (where a tree has no
experiments/go7x7.py: go9x9.py on 7x7, komi 9, the levers turned on, `FALLBACK`, said so).

    python benchmarks/go_ablations.py [--recipe go7x7] [--minutes 20] [--seeds 0 ...]
        [--variants all no-ownership no-score none pcr] [--out runs/go_ablations]
        [--final-games 32] [--final-opponents gnugo:1 gnugo:10] [--report-only]
        [--define NAME='--flag value ...'] [any training script option, e.g. --eval-games 32]

`--quick` (seconds, to check the script end to end; the figures mean nothing): the variant
'all' at `benchmarks/_quick.py`'s sizes for 1 iteration, which evaluates against gnugo:1
(2 games), then 2 final games against gnugo:1, into a new temporary --out unless given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # for `_quick`, when imported as a module

import _quick  # noqa: E402

EVAL_OPPONENT = "gnugo:1"
"""The baseline of the training evaluations this table reads (`eval_opponents`)."""
FINAL_OPENINGS = 2
"""Random opening plies of the final arena games (paired across seats)."""

OFF = {"ownership": ["--network.no-ownership-head"],
       "score": ["--network.no-score-head"]}
"""The training flags that turn each of the recipe's levers off (tyro spelling)."""
PCR = ["--selfplay.full-search-prob", "0.25"]
"""Playout cap randomisation on (off in the recipe): a quarter of the moves searched in
full, the others with `selfplay.cheap_simulations` (8)."""
VARIANTS: dict[str, list[str]] = {
    "all": [],  # the recipe as it is
    "no-ownership": OFF["ownership"],
    "no-score": OFF["score"],
    "none": OFF["ownership"] + OFF["score"],
    "pcr": PCR,
    "pcr-no-ownership": PCR + OFF["ownership"],
    "pcr-no-score": PCR + OFF["score"],
}
"""Variant name -> training flags laid over the recipe (add a lever here, e.g. resignation)."""
DEFAULT_VARIANTS = ("all", "no-ownership", "no-score", "none", "pcr")
"""The variants trained without --variants (with those of --define)."""
FALLBACK = {"go7x7": ("go9x9", ["--game-options", "size=7", "komi=9",
                                "--network.ownership-head", "--network.score-head"])}
"""Recipe -> (script used while experiments/<recipe>.py is absent, its flags)."""
RESERVED = ("--run-dir", "--seed", "--max-minutes")


class Failure(Exception):
    """A failure reported as one `error:` line and exit status 1."""


def evaluations(records: list[dict], opponent: str = EVAL_OPPONENT) -> list[dict]:
    """The evaluation records that played `opponent`, as {minutes, iteration, score,
    margin} (margin None where the record has none)."""
    from azjax.run import metric_schema as ms

    out = []
    for r in records:
        if ms.versus_key(opponent) in r:
            margin = r.get(ms.margin_key(opponent))
            out.append({"minutes": r[ms.WALL_TIME.name] / 60,
                        "iteration": r[ms.ITERATION.name],
                        "score": r[ms.versus_key(opponent)],
                        "margin": None if margin is None or math.isnan(margin) else margin})
    return out


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def eval_rows(per_seed: list[list[dict]], games: list[int | None]) -> list[dict]:
    """Rows of the table over training from each seed's `evaluations` and evaluation games:
    row k averages the k-th evaluation of the seeds that have one before their last; the
    final row (`end`) averages every seed's last. `games` sums the games behind a row."""
    rows = []
    for k in range(max((len(e) - 1 for e in per_seed), default=0)):
        rows.append([(e[k], g) for e, g in zip(per_seed, games) if k < len(e) - 1])
    ends = [(e[-1], g) for e, g in zip(per_seed, games) if e]
    out = []
    for row, end in [(r, False) for r in rows] + ([(ends, True)] if ends else []):
        evals = [e for e, _ in row]
        out.append({"minutes": _mean([e["minutes"] for e in evals]),
                    "iteration": _mean([e["iteration"] for e in evals]),
                    "seeds": len(row),
                    "games": None if None in [g for _, g in row] else sum(g for _, g in row),
                    "score": _mean([e["score"] for e in evals]),
                    "margin": _mean([e["margin"] for e in evals]), "end": end})
    return out


def pool(results: list[dict]) -> dict | None:
    """Arena results (`MatchResult.as_dict`, one per seed) summarised with the seed as the
    unit: each seed's score (with its own 95% Wilson interval over its games), their mean
    with the 95% t-interval over seeds (clipped to [0, 1]; none from one seed), the W/D/L
    summed and the mean margin over all games (None: no results). The games of one seed
    share its network, so they are not pooled as independent draws.

    Returns:
      seeds, games, wins, draws, losses, per_seed (scores in seed order), per_seed_low and
      per_seed_high (their Wilson bounds), score (the mean over seeds), score_low,
      score_high (the t-interval; nan with one seed) and margin.
    """
    from azjax.evaluation.stats import share_ci, wilson_interval

    if not results:
        return None
    wins, draws, losses = (sum(r[k] for r in results) for k in ("wins", "draws", "losses"))
    games = wins + draws + losses
    scores = [(r["wins"] + r["draws"] / 2) / r["games"] if r["games"] else 0.0
              for r in results]
    bounds = [wilson_interval(s, r["games"]) for s, r in zip(scores, results)]
    score, low, high = share_ci(scores)
    margins = [(r["margin"], r["games"]) for r in results if r.get("margin") is not None]
    margin = (sum(m * g for m, g in margins) / sum(g for _, g in margins)
              if margins and sum(g for _, g in margins) else None)
    return {"seeds": len(results), "games": games, "wins": wins, "draws": draws,
            "losses": losses, "per_seed": scores, "per_seed_low": [b[0] for b in bounds],
            "per_seed_high": [b[1] for b in bounds], "score": score, "score_low": low,
            "score_high": high, "margin": margin}


def compare(table: dict, baseline: str) -> list[dict]:
    """Each variant's final score against `baseline`'s, per opponent, over seeds: the
    difference of the means over seeds with its Welch t-interval and p-value
    (`azjax.evaluation.stats.welch_difference`; a seed of one variant is not the same
    training as the seed of another, so nothing is paired).

    Returns:
      Rows of variant, opponent, seeds (theirs and the baseline's), difference, low, high
      and p (nan bounds and p under two seeds a side).
    """
    from azjax.evaluation.stats import welch_difference

    rows = []
    for name, variant in table.items():
        if name == baseline:
            continue
        for opponent, r in variant["final"].items():
            base = table.get(baseline, {}).get("final", {}).get(opponent)
            if base is None:
                continue
            diff, low, high, p = welch_difference(base["per_seed"], r["per_seed"])
            rows.append({"variant": name, "opponent": opponent,
                         "seeds": f"{r['seeds']} / {base['seeds']}", "difference": diff,
                         "low": low, "high": high, "p": p})
    return rows


def run_dir(out: Path, variant: str, seed: int) -> Path:
    """Where a variant's run of one seed trains."""
    return out / variant / f"seed={seed}"


def arena_file(out: Path, variant: str, seed: int, opponent: str) -> Path:
    """Where the final arena of a variant's run against `opponent` is saved."""
    name = re.sub(r"[^\w.-]", "-", opponent)
    return out / variant / f"seed={seed}.final-{name}.json"


def read_records(path: Path) -> list[dict]:
    """The records of a run's metrics.jsonl (none if absent; bad lines skipped), as the
    driver reads them (`RunDir.metrics`)."""
    from azjax.run.directory.run_dir import RunDir

    return RunDir(path).metrics.read()


def run_settings(path: Path) -> dict:
    """The `run` section of a run's config.json ({} if it has none yet)."""
    try:
        return json.loads((path / "config.json").read_text()).get("run", {})
    except (OSError, ValueError):
        return {}


def complete(records: list[dict], minutes: float, iterations: int | None = None) -> bool:
    """Whether a run's records show its training budget used: `minutes` of wall time
    reached, or its `iterations` done (as the driver's `finished` decides)."""
    if not records:
        return False
    last = records[-1]
    return (last["wall_time"] >= 60 * minutes
            or (iterations is not None and last["iteration"] >= iterations))


def needs_training(path: Path, minutes: float) -> bool:
    """Whether the run in `path` must be trained (started or resumed) to `minutes`."""
    return not complete(read_records(path), minutes, run_settings(path).get("iterations"))


def arena_done(path: Path, iteration: int, games: int | None = None) -> dict | None:
    """The saved final arena result in `path` when it played the run's `iteration` (with
    `games` games, if given); else None: it must be played again."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = (saved.get("trained_iteration") == iteration
          and (games is None or saved.get("games") == games))
    return saved if ok else None


def summarize(out: Path, variants: dict[str, list[str]], seeds: list[int],
              opponents: list[str]) -> dict:
    """Every variant's rows over training and pooled final results, read from `out`."""
    table = {}
    for name, flags in variants.items():
        runs, per_seed, games, finals = {}, [], [], {o: [] for o in opponents}
        for seed in seeds:
            path = run_dir(out, name, seed)
            records = read_records(path)
            if not records:
                continue
            evals = evaluations(records)
            per_seed.append(evals)
            games.append(run_settings(path).get("eval_games"))
            run = {"run_dir": str(path), "iteration": records[-1]["iteration"],
                   "minutes": records[-1]["wall_time"] / 60, "evaluations": evals,
                   "final": {}}
            for opponent in opponents:
                saved = arena_done(arena_file(out, name, seed, opponent),
                                   records[-1]["iteration"])
                if saved is not None:
                    run["final"][opponent] = saved
                    finals[opponent].append(saved)
            runs[str(seed)] = run
        table[name] = {"flags": flags, "runs": runs, "evaluations": eval_rows(per_seed, games),
                       "final": {o: pool(r) for o, r in finals.items() if r}}
    return table


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1f}"


def markdown(table: dict, title: str) -> str:
    """The markdown report of `summarize`'s table."""
    from azjax.evaluation.stats import difference_cells

    lines = [f"## {title}", "",
             f"Network + search against {EVAL_OPPONENT} at each evaluation of training "
             "(mean over seeds; games: all seeds' games):", "",
             "| variant | minutes | iteration | seeds | games | score | margin |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, variant in table.items():
        if not variant["evaluations"]:
            what = "no evaluation yet" if variant["runs"] else "no run"
            lines.append(f"| {name} | {what} | | | | | |")
        for row in variant["evaluations"]:
            end = " (end)" if row["end"] else ""
            games = "?" if row["games"] is None else str(row["games"])
            lines.append(f"| {name} | {row['minutes']:.1f}{end} | {row['iteration']:.0f} | "
                         f"{row['seeds']} | {games} | {_pct(row['score'])} | "
                         f"{_signed(row['margin'])} |")
    finals = [(n, o, r) for n, v in table.items() for o, r in v["final"].items()]
    if finals:
        lines += ["", f"Final arena (seats swapped for half the games, {FINAL_OPENINGS} "
                  "random opening plies). Each seed is one draw: the score is the mean "
                  "over seeds with its 95% t-interval over seeds (clipped to [0, 100%]; "
                  "none from one seed); per seed, its score with a 95% Wilson interval "
                  "over its own games:", "",
                  "| variant | opponent | seeds | games | score, mean over seeds (95% CI) "
                  "| per seed (95% Wilson CI) | W/D/L | margin |",
                  "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |"]
        for name, opponent, r in finals:
            per_seed = "; ".join(f"{_pct(s)} ({_pct(lo)}-{_pct(hi)})" for s, lo, hi in
                                 zip(r["per_seed"], r["per_seed_low"], r["per_seed_high"]))
            interval = ("" if math.isnan(r["score_low"])
                        else f" ({_pct(r['score_low'])}-{_pct(r['score_high'])})")
            lines.append(f"| {name} | {opponent} | {r['seeds']} | {r['games']} | "
                         f"{_pct(r['score'])}{interval} | {per_seed} | "
                         f"{r['wins']}/{r['draws']}/{r['losses']} | {_signed(r['margin'])} |")
    baseline = next(iter(table), None)
    rows = compare(table, baseline) if baseline else []
    if rows:
        lines += ["", f"Each variant against `{baseline}`, seeds as the unit (difference of "
                  "the means over seeds, Welch's 95% t-interval and p; with 2 seeds a side "
                  "it has about 2 degrees of freedom):", "",
                  "| variant | opponent | seeds (it / baseline) | difference | 95% CI | p |",
                  "| --- | --- | ---: | ---: | --- | ---: |"]
        for r in rows:
            cells = difference_cells(r["difference"], r["low"], r["high"], r["p"])
            lines.append(f"| {r['variant']} | {r['opponent']} | {r['seeds']} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def script_and_flags(recipe: str) -> tuple[Path, list[str]]:
    """The training script of `recipe` and the flags it needs (the fallback's, with a
    notice, while experiments/<recipe>.py does not exist)."""
    script = ROOT / "experiments" / f"{recipe}.py"
    if script.is_file():
        return script, []
    if recipe not in FALLBACK:
        raise Failure(f"no recipe script {script.relative_to(ROOT)}")
    other, flags = FALLBACK[recipe]
    print(f"note: experiments/{recipe}.py does not exist yet: training experiments/{other}.py "
          f"{' '.join(flags)} instead", file=sys.stderr)
    return ROOT / "experiments" / f"{other}.py", list(flags)


def unknown_flags(help_text: str, flags: list[str]) -> list[str]:
    """The `--options` among `flags` that the training script's --help does not list."""
    known = set(re.findall(r"--[\w.-]*\w", help_text))
    return [f for f in flags if f.startswith("--") and f.split("=")[0] not in known]


def _run(command: list[str], what: str) -> None:
    """Runs `command` (its output unbuffered, in order with ours); Failure if it fails."""
    if subprocess.run(command, env={**os.environ, "PYTHONUNBUFFERED": "1"}).returncode != 0:
        raise Failure(f"{what} failed: {shlex.join(command)}")


def train_all(args, variants: dict[str, list[str]], extra: list[str]) -> None:
    """Trains (or resumes) each variant and seed in turn, then plays its final arena."""
    script, base = script_and_flags(args.recipe)
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise Failure(f"{script.relative_to(ROOT)} --help failed: "
                      f"{(result.stderr.strip().splitlines() or ['?'])[-1]}")
    for name, flags in variants.items():
        missing = unknown_flags(result.stdout, base + flags)
        if missing:
            raise Failure(f"variant {name!r}: {script.relative_to(ROOT)} has no option "
                          f"{', '.join(missing)}")
    for name, flags in variants.items():
        for seed in args.seeds:
            path = run_dir(args.out, name, seed)
            if needs_training(path, args.minutes):
                print(f"== training {name}, seed {seed} ({args.minutes:g} min) -> {path}",
                      flush=True)
                _run([sys.executable, str(script), *base, *flags, *extra, "--run-dir",
                      str(path), "--seed", str(seed), "--max-minutes", f"{args.minutes:g}"],
                     f"training variant {name!r}, seed {seed}")
            else:
                print(f"== {name}, seed {seed}: {path} already used its budget", flush=True)
            records = read_records(path)
            if not records:
                raise Failure(f"training variant {name!r}, seed {seed} wrote no metrics to "
                              f"{path}")
            for opponent in args.final_opponents if args.final_games > 0 else []:
                file = arena_file(args.out, name, seed, opponent)
                if arena_done(file, records[-1]["iteration"], args.final_games):
                    continue
                print(f"== final arena: {name}, seed {seed} vs {opponent}", flush=True)
                _run([sys.executable, "-m", "azjax.arena", f"alphazero:{path}", opponent,
                      "--games", str(args.final_games), "--openings", str(FINAL_OPENINGS),
                      "--seed", str(seed), "--json", str(file)],
                     f"final arena of variant {name!r}, seed {seed} against {opponent}")
                saved = json.loads(file.read_text())
                saved["trained_iteration"] = records[-1]["iteration"]
                file.write_text(json.dumps(saved, indent=2) + "\n")


def parse(argv: list[str]) -> tuple[argparse.Namespace, dict[str, list[str]], list[str]]:
    """The options, the chosen variants (name -> flags) and the flags passed through."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--recipe", default="go7x7")
    parser.add_argument("--minutes", type=float, default=20.0, help="training per variant")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=None,
                        help=f"default: {', '.join(DEFAULT_VARIANTS)} and those of --define; "
                             f"known: {', '.join(VARIANTS)}")
    parser.add_argument("--define", action="append", default=[], metavar="NAME=FLAGS",
                        help="add (or replace) a variant: its training flags, quoted")
    parser.add_argument("--out", type=Path, default=Path("runs/go_ablations"))
    parser.add_argument("--report-only", action="store_true", help="do not train or play")
    parser.add_argument("--final-games", type=int, default=32, help="0: no final arena")
    parser.add_argument("--final-opponents", nargs="+", default=["gnugo:1", "gnugo:10"])
    args, extra = _quick.parse(parser, argv, known=True, variants=["all"], final_games=2,
                               final_opponents=["gnugo:1"], out=None)
    if args.quick:
        extra = _quick.flags(iterations=1, eval_every=1) + extra
        args.out = args.out or Path(tempfile.mkdtemp(prefix="go_ablations_quick_"))
    table = dict(VARIANTS)
    for item in args.define:
        name, eq, flags = item.partition("=")
        if not eq or not name:
            parser.error(f"--define expects NAME=FLAGS, got {item!r}")
        table[name] = shlex.split(flags)
    names = args.variants or [*DEFAULT_VARIANTS, *(n for n in table
                                                    if n not in VARIANTS)]
    unknown = [n for n in names if n not in table]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(table)}")
    taken = [f for f in extra if f.split("=")[0] in RESERVED]
    if taken:
        parser.error(f"{', '.join(taken)}: set by the benchmark (--out, --seeds, --minutes)")
    if args.minutes <= 0 or args.final_games < 0:
        parser.error("--minutes must be positive and --final-games at least 0")
    return args, {n: table[n] for n in names}, extra


def main(argv: list[str] | None = None) -> int:
    """Trains and plays what is missing (unless --report-only), then reports."""
    args, variants, extra = parse(sys.argv[1:] if argv is None else argv)
    try:
        if not args.report_only:
            train_all(args, variants, extra)
        opponents = args.final_opponents if args.final_games > 0 or args.report_only else []
        table = summarize(args.out, variants, args.seeds, opponents)
        if not any(v["runs"] for v in table.values()):
            raise Failure(f"no run of {', '.join(variants)} in {args.out}")
        seeds = " ".join(map(str, args.seeds))
        text = markdown(table, f"Go ablations: {args.recipe}, {args.minutes:g} minutes per "
                               f"variant, seeds {seeds}")
        print("\n" + text, end="")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "ablations.md").write_text(text)
        raw = {"recipe": args.recipe, "minutes": args.minutes, "seeds": args.seeds,
               "eval_opponent": EVAL_OPPONENT, "variants": table}
        (args.out / "ablations.json").write_text(json.dumps(raw, indent=2) + "\n")
    except Failure as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"error: {err.strerror or err}: {err.filename or ''}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
