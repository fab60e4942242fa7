"""Gumbel against PUCT at 2 to 32 simulations per move, on Connect Four: a reproduction of
Danihelka, Guez, Schrittwieser and Silver, "Policy improvement by planning with Gumbel"
(ICLR 2022), Figure 2.

The paper trained 9x9 Go agents with 2, 4, 16, 32 and 200 simulations per move (2 seeds,
evaluated with 800) and reports that AlphaZero/MuZero's PUCT search "fails to learn from
16 or less simulations" while Gumbel search "learns reliably even with 2". This script
asks the same of Connect Four, whose solved positions grade every move exactly:

    python benchmarks/gumbel_few_simulations.py [--out runs/gumbel_few_simulations]
        [--simulations 2,4,8,16,32] [--seeds 3] [--iterations 160] [--set NAME=VALUE ...]
        [--eval-simulations 200] [--eval-positions 1000] [--report-only] [--quick]

1. Training: one sweep (`azjax.sweep.run_sweep`) of the connect_four cpu recipe, made
   smaller by `SMALLER` (and changed by `--set`), over `search.num_simulations` x
   `search.policy` (PUCT with Dirichlet noise at the root, or Gumbel) x seeds, into
   OUT/train/. Every experiment runs the same `--iterations` with no wall clock: the
   same self-play positions (games in flight x steps per iteration) and the same
   gradient steps, so only its search differs. A larger `--iterations` later resumes
   every run from where it stopped.
2. Evaluation: each trained network (its last checkpoint) alone and with a fixed search
   of `--eval-simulations` of each kind (PUCT and Gumbel, root noise off), so the
   comparison is of what was learned, not of the search it trained with. Graded on the
   first `--eval-positions` solved `dev_set` positions of the package data: the share of
   strictly optimal moves and of moves that keep the position's result (win, draw or
   loss); and the network's value sign on the decided positions of the public benchmark
   sets. One row per run in OUT/evaluation.csv; a run whose last checkpoint is there
   already is not evaluated again.
3. Report: OUT/gumbel_few_simulations.md, a table per configuration (mean over seeds with
   a 95% percentile-bootstrap interval: a share's interval stays in [0, 1]) with the
   paper's claim beside each row; OUT/gumbel_few_simulations.png (each metric against
   simulations, one line per training search); OUT/gumbel_few_simulations_curves.png
   (the network alone along training, from the runs' own evaluations).

Rerunning the same command resumes: finished runs are left alone and evaluated runs are
read from evaluation.csv. `--quick` runs the whole path on tiny sizes (2 and 4
simulations, 2 seeds, 2 iterations, a narrow network, 4 evaluation simulations on 50
positions) in a few minutes; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # for `_quick`, when imported as a module

import _quick

PAPER = ('Danihelka, Guez, Schrittwieser and Silver, "Policy improvement by planning with '
         'Gumbel", ICLR 2022')
POLICIES = ("puct", "gumbel")
SEARCH_METRICS = ("optimal", "result_kept")
"""What each evaluation search is graded on, per position."""
NET_METRICS = ("net_optimal", "net_result_kept", "net_value_sign")
REPORT = "gumbel_few_simulations"
SMALLER = {"network.num_blocks": 1, "selfplay.num_games": 128, "gradient_steps": 16,
           "replay_capacity": 64 * 128 * 8}
"""Laid over the connect_four recipe by default: one residual block instead of three, half
the games in flight and half the gradient steps, so that the grid's 30 runs train for
thousands of games each in about an hour and a half of a 2-core CPU (`--set` changes
any of them)."""
QUICK = {"simulations": "2,4", "seeds": 2, "iterations": 2, "eval_simulations": 4,
         "eval_positions": 50}
"""The options' defaults under --quick (options given still count)."""


def paper_claim(policy: str, simulations: int) -> str:
    """What the paper reports for training with `policy` at `simulations` per move.

    Args:
      policy: 'puct' or 'gumbel'.
      simulations: simulations per move in training.

    Returns:
      The claim in a few words (Figure 2 and section 6 of the paper, 9x9 Go).
    """
    if policy == "gumbel":
        return "learns, even with 2"
    return "fails to learn (16 or fewer)" if simulations <= 16 else "learns (32 and more)"


# ----------------------------------------------------------------------------- training


def base_config(iterations: int, settings: Sequence[str], quick: bool):
    """The connect_four cpu recipe with `SMALLER` and `settings` laid over it, bounded by
    `iterations` alone: no wall clock, no evaluation with search while training (the
    evaluation here replaces it), the network alone scored five times along the way, a
    checkpoint every fifth of the budget.

    Args:
      iterations: the training budget of every experiment.
      settings: 'PATH=VALUE' or 'NAME=VALUE' changes (`--set`).
      quick: shrink the program to `benchmarks/_quick.py`'s sizes first.

    Returns:
      The sweep's base `TrainConfig` (ValueError for a bad setting).
    """
    from azjax.run.recipes import recipe
    from azjax.sweep.grid import parse_value, resolve_name

    config = recipe("connect_four", "cpu").with_values(SMALLER)
    if quick:
        config = _quick.shrink(config)
    changes = {}
    for text in settings:
        name, sep, value = text.partition("=")
        if not sep:
            raise ValueError(f"bad --set {text!r}: expected NAME=VALUE")
        path = resolve_name(name)
        changes[path] = parse_value(path, value)
    config = config.with_values(changes)
    every = max(1, iterations // 5)
    return config.replace(iterations=iterations, max_minutes=0.0, eval_every=every,
                          eval_search_every=0, eval_every_minutes=0.0,
                          checkpoint_every=every, checkpoint_every_minutes=0.0,
                          stop_when_perfect=False)


def train(out: Path, simulations: Sequence[int], seeds: Sequence[int], iterations: int,
          settings: Sequence[str], quick: bool) -> None:
    """Runs (or resumes) the training sweep into `out`/train."""
    from azjax.sweep.grid import Param
    from azjax.sweep.sweep import run_sweep

    params = [Param("search.num_simulations", tuple(simulations)),
              Param("search.policy", POLICIES)]
    run_sweep(base_config(iterations, settings, quick), params, seeds, out / "train")


# --------------------------------------------------------------------------- evaluation


class Grader:
    """The solved positions and the players every agent is graded as.

    The players are built once, from the first agent: every agent of the sweep has the
    same network, so each compiled player serves them all with other weights.
    """

    def __init__(self, positions: int):
        import envs
        from envs import connect_four as c4

        self.env = envs.make("connect_four")
        moves = c4.load_move_set()
        if not 1 <= positions <= len(moves.moves):
            raise ValueError(f"--eval-positions must be between 1 and {len(moves.moves)}, "
                             f"got {positions}")
        self.optimal = moves.optimal[:positions]
        self.keeps_result = moves.keeps_result[:positions]
        self.states = c4.boards_from_moves(moves.moves[:positions])
        values = c4.load_value_set()
        decided = values.score != 0
        self.value_states = c4.boards_from_moves(
            [m for m, d in zip(values.moves, decided) if d])
        self.value_sign = values.score[decided] > 0
        self.templates: dict[str, Any] = {}

    def grade(self, actions, prefix: str) -> dict[str, float]:
        """Shares of strictly optimal and of result-keeping moves, for actions [P]."""
        import numpy as np

        rows = np.arange(len(actions))
        return {f"{prefix}optimal": float(self.optimal[rows, actions].mean()),
                f"{prefix}result_kept": float(self.keeps_result[rows, actions].mean())}

    def player(self, agent, kind: str, **search: Any):
        """`agent` as a player of `kind` ('network', or 'alphazero' with the search
        changed by `search`), from the template made for the first agent."""
        from azjax.core.players import AgentParams

        name = search.get("policy", kind)
        if name not in self.templates:
            self.templates[name] = agent.with_search(**search).player(kind) if search \
                else agent.player(kind)
        template = self.templates[name]
        if kind == "network":
            return template.with_params(agent.params)
        return template.with_params(AgentParams(agent.params, template.params.search))

    def evaluate(self, run_dir: Path, simulations: int, seed: int) -> dict[str, float]:
        """Every metric of one trained agent (its last checkpoint)."""
        import jax
        import numpy as np

        from azjax.core.players import compiled
        from azjax.run.agent import Agent

        agent = Agent.load(run_dir)
        key = jax.random.key(seed)
        net = self.player(agent, "network")
        out = self.grade(np.asarray(compiled(net.policy)(net.params, self.states, key)),
                         "net_")
        value = np.asarray(compiled(net.value)(net.params, self.value_states))
        out["net_value_sign"] = float(((value > 0) == self.value_sign).mean())
        for policy in POLICIES:
            player = self.player(agent, "alphazero", policy=policy,
                                 num_simulations=simulations, play_simulations=0,
                                 play_policy="")
            key, subkey = jax.random.split(key)
            actions = compiled(player.policy)(player.params, self.states, subkey)
            out.update(self.grade(np.asarray(actions), f"{policy}_"))
        return out


def train_dir(out: Path, policy: str, simulations: int, seed: int) -> Path:
    """The run directory of one experiment of the training sweep."""
    return (out / "train" / "runs" / f"num_simulations={simulations}" / f"policy={policy}"
            / f"seed={seed}")


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file ([] where there is none)."""
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def evaluate_runs(out: Path, simulations: Sequence[int], seeds: Sequence[int],
                  eval_simulations: int, eval_positions: int) -> list[dict[str, str]]:
    """Evaluates every trained run of the grid whose last checkpoint OUT/evaluation.csv
    does not yet hold at these evaluation settings (the file keeps the rows of these
    settings only).

    Returns:
      One row per run: policy, simulations, seed, the evaluation's settings, iterations,
      games and positions trained on, and every metric.
    """
    from azjax.run.run_dir import RunDir
    from azjax.sweep.sweep import run_finished
    from azjax.sweep.table import write_csv

    path = out / "evaluation.csv"
    settings = {"eval_simulations": str(eval_simulations),
                "eval_positions": str(eval_positions)}
    done = {(r["policy"], r["simulations"], r["seed"]): r for r in read_rows(path)
            if all(r[k] == v for k, v in settings.items())}
    grader = None
    rows = []
    for n in simulations:
        for policy in POLICIES:
            for seed in seeds:
                run_dir = train_dir(out, policy, n, seed)
                if not run_finished(run_dir):
                    raise ValueError(f"{run_dir} has not finished training; run without "
                                     "--report-only to train it")
                last = RunDir.open(run_dir).read_metrics()[-1]
                old = done.pop((policy, str(n), str(seed)), None)
                if old is not None and old["iterations"] == str(last["iteration"]):
                    rows.append(old)  # this evaluation of this checkpoint is done
                    continue
                grader = grader or Grader(eval_positions)
                started = time.perf_counter()
                metrics = grader.evaluate(run_dir, eval_simulations, seed)
                row = {"policy": policy, "simulations": str(n), "seed": str(seed),
                       **settings, "iterations": str(last["iteration"]),
                       "games": str(last["games"]), "positions": str(last["positions"]),
                       **{k: f"{v:.4f}" for k, v in metrics.items()}}
                rows.append(row)
                write_csv(path, rows + list(done.values()))
                print(f"evaluated policy={policy} simulations={n} seed={seed} in "
                      f"{time.perf_counter() - started:.0f} s: "
                      + ", ".join(f"{k} {v:.3f}" for k, v in metrics.items()), flush=True)
    return rows


# ------------------------------------------------------------------------------- report


def metric_columns(eval_simulations: int) -> dict[str, str]:
    """Metric column -> its heading in the report: strict optimal moves (the network
    alone, then each search), the value sign, then the results kept in the same order."""
    labels = {"puct": f"PUCT-{eval_simulations}", "gumbel": f"Gumbel-{eval_simulations}"}
    names = {"net_optimal": "network alone: optimal"}
    names.update({f"{p}_optimal": f"{labels[p]}: optimal" for p in POLICIES})
    names["net_value_sign"] = "network value sign"
    names["net_result_kept"] = "network alone: result kept"
    names.update({f"{p}_result_kept": f"{labels[p]}: result kept" for p in POLICIES})
    return names


def summarise(rows: Sequence[dict[str, str]], metrics: Sequence[str]
              ) -> list[dict[str, Any]]:
    """One row per (policy, simulations): the seeds, and per metric the mean over seeds
    with its 95% percentile-bootstrap interval.

    Args:
      rows: per-run rows (`evaluate_runs`).
      metrics: the metric columns to summarise (shares in [0, 1]).

    Returns:
      Rows with policy, simulations, seeds, games (the mean trained on), the paper's
      claim and, per metric, `<metric>_mean`, `<metric>_low`, `<metric>_high`; in the
      order PUCT then Gumbel, simulations ascending.
    """
    from azjax.evaluation.stats import bootstrap_ci

    groups: dict[tuple[str, int], list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault((row["policy"], int(row["simulations"])), []).append(row)
    table = []
    for (policy, n), members in sorted(groups.items(),
                                       key=lambda item: (POLICIES.index(item[0][0]),
                                                         item[0][1])):
        out: dict[str, Any] = {"policy": policy, "simulations": n, "seeds": len(members),
                               "games": sum(int(m["games"]) for m in members) / len(members),
                               "paper": paper_claim(policy, n)}
        for metric in metrics:
            mean, low, high = bootstrap_ci([float(m[metric]) for m in members])
            out.update({f"{metric}_mean": mean, f"{metric}_low": low,
                        f"{metric}_high": high})
        table.append(out)
    return table


def share_text(mean: float, low: float, high: float) -> str:
    """'71.2% [68.0, 74.1]' (the interval left out where there is none)."""
    text = f"{100 * mean:.1f}%"
    if not math.isnan(low):
        text += f" [{100 * low:.1f}, {100 * high:.1f}]"
    return text


def markdown(table: Sequence[dict[str, Any]], headings: dict[str, str]) -> str:
    """The summary as a Markdown table: one row per configuration."""
    head = ["training search", "simulations", "seeds", "games", *headings.values(),
            "the paper (9x9 Go)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = ["PUCT" if row["policy"] == "puct" else "Gumbel", str(row["simulations"]),
                 str(row["seeds"]), f"{row['games']:,.0f}"]
        cells += [share_text(row[f"{m}_mean"], row[f"{m}_low"], row[f"{m}_high"])
                  for m in headings]
        cells.append(row["paper"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(table: Sequence[dict[str, Any]], headings: dict[str, str], path: Path,
         title: str) -> None:
    """One panel per metric: its mean over seeds (and 95% bootstrap interval) against the
    training simulations, one line per training search."""
    from matplotlib.figure import Figure

    metrics = list(headings)
    cols = 4
    rows = math.ceil(len(metrics) / cols)
    fig = Figure(figsize=(4.4 * cols, 3.3 * rows))
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics):
        for policy, marker in zip(POLICIES, "os"):
            mine = [r for r in table if r["policy"] == policy]
            xs = [r["simulations"] for r in mine]
            means = [100 * r[f"{metric}_mean"] for r in mine]
            lows = [100 * r[f"{metric}_low"] for r in mine]
            highs = [100 * r[f"{metric}_high"] for r in mine]
            ax.plot(xs, means, marker=marker,
                    label="trained with " + ("PUCT" if policy == "puct" else "Gumbel"))
            if not any(math.isnan(v) for v in lows):
                ax.fill_between(xs, lows, highs, alpha=0.2)
        ax.set_xscale("log", base=2)
        ticks = sorted({r["simulations"] for r in table})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("simulations per move in training")
        ax.set_ylabel("%")
        ax.set_title(headings[metric], fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    fig.suptitle(title + " (mean over seeds, band: 95% percentile-bootstrap interval)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def curves(out: Path, simulations: Sequence[int], seeds: Sequence[int]
           ) -> dict[tuple[str, int], list[tuple[float, float, float, float]]]:
    """The network's share of optimal moves (all 1,000 dev_set positions) along training,
    from the runs' own evaluations (metrics.jsonl).

    Returns:
      (policy, simulations) -> [(positions, mean, lowest, highest) over seeds] per
      evaluation that every seed made.
    """
    from azjax.run.run_dir import RunDir

    metric = "net_move_accuracy"
    lines = {}
    for n in simulations:
        for policy in POLICIES:
            by_iteration: dict[int, list[tuple[int, float]]] = {}
            for seed in seeds:
                run_dir = RunDir.open(train_dir(out, policy, n, seed))
                for record in run_dir.read_metrics():
                    if metric in record:
                        by_iteration.setdefault(record["iteration"], []).append(
                            (record["positions"], record[metric]))
            points = []
            for _, values in sorted(by_iteration.items()):
                if len(values) == len(seeds):
                    shares = [v for _, v in values]
                    points.append((sum(p for p, _ in values) / len(values),
                                   sum(shares) / len(shares), min(shares), max(shares)))
            lines[policy, n] = points
    return lines


def plot_curves(lines: dict[tuple[str, int], list[tuple[float, float, float, float]]],
                path: Path) -> None:
    """One panel per training simulation count: the network's share of optimal moves
    against positions trained on, PUCT and Gumbel, mean over seeds and their range."""
    from matplotlib.figure import Figure

    counts = sorted({n for _, n in lines})
    fig = Figure(figsize=(3.4 * len(counts), 3.2))
    axes = fig.subplots(1, len(counts), squeeze=False, sharey=True)[0]
    for ax, n in zip(axes, counts):
        for policy, marker in zip(POLICIES, "os"):
            points = lines.get((policy, n), [])
            if not points:
                continue
            xs, means, lows, highs = zip(*points)
            xs = [x / 1000 for x in xs]
            ax.plot(xs, [100 * m for m in means], marker=marker, markersize=3,
                    label="PUCT" if policy == "puct" else "Gumbel")
            ax.fill_between(xs, [100 * v for v in lows], [100 * v for v in highs],
                            alpha=0.2)
        ax.set_title(f"{n} simulations in training", fontsize=10)
        ax.set_xlabel("thousand positions trained on")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("network alone: optimal moves (%)")
    fig.suptitle("The network alone along training (mean over seeds; band: lowest to "
                 "highest seed)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def report(out: Path, rows: Sequence[dict[str, str]], eval_simulations: int,
           seeds: Sequence[int], command: str) -> str:
    """Writes OUT/gumbel_few_simulations.md, its .png and its _curves.png from the
    per-run rows and the runs' records.

    Returns:
      The Markdown written.
    """
    headings = metric_columns(eval_simulations)
    table = summarise(rows, list(headings))
    text = (f"# Gumbel against PUCT at few simulations, on Connect Four\n\n"
            f"A reproduction of {PAPER}, Figure 2. Each agent trained on "
            f"{int(rows[0]['positions']):,} self-play positions with the same gradient "
            f"steps; graded on the first {rows[0]['eval_positions']} solved dev_set "
            f"positions with its network alone and with {eval_simulations}-simulation "
            "searches of each kind (root noise off); the value sign on the decided "
            "positions of the public benchmark sets. Mean over seeds and 95% "
            f"percentile-bootstrap interval.\n\n    {command}\n\n"
            f"{markdown(table, headings)}\n")
    (out / f"{REPORT}.md").write_text(text)
    plot(table, headings, out / f"{REPORT}.png", f"Connect Four, {len(rows)} runs")
    counts = sorted({int(r["simulations"]) for r in rows})
    plot_curves(curves(out, counts, seeds), out / f"{REPORT}_curves.png")
    return text


# --------------------------------------------------------------------------------- main


def parse_simulations(text: str) -> tuple[int, ...]:
    """'2,4,8' -> (2, 4, 8) (ValueError for anything but distinct counts >= 1)."""
    try:
        values = tuple(int(t) for t in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1 or len(set(values)) != len(values):
        raise ValueError(f"--simulations must be distinct counts >= 1 such as 2,4,8, got "
                         f"{text!r}")
    return tuple(sorted(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="", help="out directory (default "
                        "runs/gumbel_few_simulations; with --quick a new temporary one)")
    parser.add_argument("--simulations", default="2,4,8,16,32",
                        help="training simulations per move, e.g. 2,4,8,16,32")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per configuration")
    parser.add_argument("--iterations", type=int, default=160,
                        help="training iterations per experiment (the recipe's games and "
                        "gradient steps each)")
    parser.add_argument("--eval-simulations", type=int, default=200,
                        help="simulations of each evaluation search")
    parser.add_argument("--eval-positions", type=int, default=1000,
                        help="solved dev_set positions graded (the first N of 1,000)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a training setting laid over the recipe and SMALLER, by name "
                        "or path (network.num_blocks=3); repeatable")
    parser.add_argument("--report-only", action="store_true",
                        help="evaluate and report the runs in --out; train nothing")
    args = _quick.parse(parser, argv, **QUICK)
    given = sys.argv[1:] if argv is None else argv
    try:
        simulations = parse_simulations(args.simulations)
        for name in ("seeds", "iterations", "eval_simulations"):
            if getattr(args, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got "
                                 f"{getattr(args, name)}")
        out = Path(args.out or (tempfile.mkdtemp(prefix="gumbel_quick_") if args.quick
                                else "runs/gumbel_few_simulations"))
        if args.report_only and not (out / "train").is_dir():
            raise ValueError(f"{out} holds no training (no {out / 'train'}); run without "
                             "--report-only first")
        from azjax.run import compile_cache
        from azjax.run.devices import arrange

        arrange()
        compile_cache.enable()
        started = time.perf_counter()
        if not args.report_only:
            train(out, simulations, range(args.seeds), args.iterations, args.set,
                  args.quick)
        trained = time.perf_counter()
        rows = evaluate_runs(out, simulations, range(args.seeds), args.eval_simulations,
                             args.eval_positions)
        command = "python benchmarks/gumbel_few_simulations.py " + " ".join(given)
        print(report(out, rows, args.eval_simulations, range(args.seeds), command.strip()))
        print(f"training {trained - started:.0f} s, evaluation "
              f"{time.perf_counter() - trained:.0f} s; wrote {out / (REPORT + '.md')} and "
              f"{out / (REPORT + '.png')}")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
