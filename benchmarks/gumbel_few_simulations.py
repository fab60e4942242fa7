"""Gumbel against a tuned PUCT at 2 to 200 simulations per move, on Connect Four: the
few-simulation claims of Danihelka, Guez, Schrittwieser and Silver, "Policy improvement
by planning with Gumbel" (ICLR 2022), Figure 2.

The paper trained 9x9 Go agents with 2, 4, 16, 32 and 200 simulations per move (2 seeds,
evaluated with 800) and reports that AlphaZero/MuZero's PUCT search "fails to learn from
16 or less simulations" while Gumbel search "learns reliably even with 2". This script
asks the same of Connect Four, whose solved positions grade every move exactly:

    python benchmarks/gumbel_few_simulations.py [--out runs/gumbel_few_simulations]
        [--simulations 2,16,32,200] [--seeds 3] [--seeds-at 2=5,32=5,200=2]
        [--iterations 60] [--tune-iterations 30] [--set NAME=VALUE ...]
        [--eval-simulations 200] [--eval-positions 1000] [--report-only] [--quick]

1. Tuning: PUCT at 32 simulations, each `TUNING` candidate (one change from the recipe:
   Dirichlet alpha and share, c_puct, sampled plies) and then the winning changes
   together, `--tune-iterations` each over 3 seeds, into OUT/tune/ and OUT/tune.csv; the
   best mean of the network alone's optimal moves is what every PUCT run trains with
   (`--tune-iterations 0`: the recipe's settings).
2. Training: one sweep (`azjax.sweep.run_sweep`) per training search (PUCT as tuned, or
   Gumbel) of the connect_four cpu recipe, made smaller by `SMALLER` (and changed by
   `--set`), over `search.num_simulations` x seeds (`--seeds`, or `--seeds-at` for a
   count), into OUT/train/policy=P/. Every experiment runs the same `--iterations` with
   no wall clock: the same self-play positions (games in flight x steps per iteration)
   and the same gradient steps, so only its search differs. A larger `--iterations`
   later resumes every run from where it stopped.
3. Evaluation: each trained network (its last checkpoint) alone and with a fixed search
   of `--eval-simulations` of each kind (PUCT with the recipe's c_puct, and Gumbel; root
   noise off), so the comparison is of what was learned, not of the search it trained
   with. Graded on the first `--eval-positions` solved `dev_set` positions of the
   package data: the share of strictly optimal moves and of moves that keep the
   position's result (win, draw or loss); and the network's value sign on the decided
   positions of the public benchmark sets. One row per run in OUT/evaluation.csv; a run
   whose last checkpoint is there already is not evaluated again.
4. Report: OUT/gumbel_few_simulations.md: a row per configuration (its budget; per
   metric the mean over seeds with a 95% t-interval over seeds, clipped to [0, 1]) with
   the paper's claim beside it, the network alone per seed, Gumbel against PUCT at each
   count by Welch's test over seeds, and the tuning; OUT/gumbel_few_simulations.png (each
   metric against simulations, one line per training search);
   OUT/gumbel_few_simulations_curves.png (the network alone along training, against
   positions trained on and against self-play simulations).

Rerunning the same command resumes: finished runs are left alone and evaluated runs are
read from evaluation.csv. `--quick` runs the whole path on tiny sizes (2 and 4
simulations, 2 seeds, 2 iterations, tuning runs of 1 iteration, a narrow network, 4
evaluation simulations on 50 positions) in a few minutes; its figures mean nothing.
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
PAPER_SIMULATIONS = (2, 4, 16, 32, 200)
"""The simulations per move the paper's Figure 2 trained its 9x9 Go agents with."""
SEARCH_METRICS = ("optimal", "result_kept")
"""What each evaluation search is graded on, per position."""
NET_METRICS = ("net_optimal", "net_result_kept", "net_value_sign")
REPORT = "gumbel_few_simulations"
SMALLER = {"network.num_blocks": 1, "selfplay.num_games": 128, "gradient_steps": 16,
           "replay_capacity": 64 * 128 * 8}
"""Laid over the connect_four recipe by default: one residual block instead of three, half
the games in flight and half the gradient steps, so that the tuning and the grid's 38
runs train for thousands of games each in about an hour and a half of a 2-core CPU
(`--set` changes any of them)."""
QUICK = {"simulations": "2,4", "seeds": 2, "seeds_at": "", "iterations": 2,
         "tune_iterations": 1, "eval_simulations": 4, "eval_positions": 50}
"""The options' defaults under --quick (options given still count)."""


def paper_claim(policy: str, simulations: int) -> str:
    """What the paper reports for training with `policy` at `simulations` per move.

    Args:
      policy: 'puct' or 'gumbel'.
      simulations: simulations per move in training.

    Returns:
      The claim in a few words (Figure 2 and section 6 of the paper, 9x9 Go), or that
      the paper trained no agent at that count.
    """
    if simulations not in PAPER_SIMULATIONS:
        return "not trained in the paper"
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
    return config.replace(iterations=iterations, max_minutes=0.0,
                          eval_every=max(1, iterations // 10),
                          eval_search_every=0, eval_every_minutes=0.0,
                          checkpoint_every=every, checkpoint_every_minutes=0.0,
                          stop_when_perfect=False)


TUNING = {"recipe": {}, "alpha=1.4": {"search.dirichlet_alpha": 1.4},
          "fraction=0.1": {"search.dirichlet_fraction": 0.1},
          "c_puct=0.75": {"search.c_puct": 0.75}, "c_puct=2.5": {"search.c_puct": 2.5},
          "c_puct=5": {"search.c_puct": 5.0},
          "temperature_moves=12": {"selfplay.temperature_moves": 12}}
"""PUCT's candidate settings, each one change from the recipe: AlphaZero's Dirichlet
alpha rule (about 10 over the typical number of legal moves: 10/7 for Connect Four), less
root noise, a lower exploration constant and two higher ones, twice the sampled plies. The
settings of every candidate that beats the recipe are then tried together."""
TUNE_SIMULATIONS = 32
EVAL_SEARCH = {"c_puct": 1.25}
"""Every agent's evaluation searches (root noise off, as every greedy player's): PUCT with
the recipe's exploration constant whatever its training tuned, so that one search grades
every network."""


def policy_config(base, policy: str, puct: dict[str, Any]):
    """`base` searching with `policy`, with `puct` laid over it for PUCT."""
    config = base.with_values({"search.policy": policy})
    return config.with_values(puct) if policy == "puct" else config


def tune_dir(out: Path, label: str, seed: int) -> Path:
    """The run directory of one tuning run."""
    return out / "tune" / label / "runs" / f"policy=puct" / f"seed={seed}"


def final_share(run_dir: Path) -> float:
    """The network alone's share of optimal dev_set moves at a run's last evaluation."""
    from azjax.run.directory.run_dir import RunDir

    records = [r for r in RunDir(run_dir).metrics.read() if "net_move_accuracy" in r]
    return float(records[-1]["net_move_accuracy"])


def tune(out: Path, base, seeds: Sequence[int], iterations: int, train: bool = True
         ) -> dict[str, Any]:
    """Tunes PUCT at `TUNE_SIMULATIONS` simulations: each `TUNING` candidate (then the
    winning changes together) trained for `iterations` over `seeds`, into OUT/tune/.

    Returns:
      The settings of the candidate whose network alone picks the most optimal moves at
      its last evaluation, mean over seeds (the recipe's on a tie); written, with every
      candidate's seeds, to OUT/tune.csv. With `train` False the runs must be there.
    """
    from azjax.sweep.grid import Param
    from azjax.sweep.sweep import run_sweep
    from azjax.sweep.table import write_csv

    config = policy_config(base.replace(run=base.run.replace(iterations=iterations)),
                           "puct", {}).with_values({"search.num_simulations": TUNE_SIMULATIONS})

    def trained(label: str, changes: dict[str, Any]) -> float:
        if train:
            run_sweep(config.with_values(changes), [Param("search.policy", ("puct",))],
                      seeds, out / "tune" / label, write=None)
        shares = [final_share(tune_dir(out, label, s)) for s in seeds]
        rows.append({"candidate": label, "settings": json_text(changes),
                     **{f"seed={s}": f"{v:.4f}" for s, v in zip(seeds, shares)},
                     "mean": f"{sum(shares) / len(shares):.4f}"})
        print(f"tuning PUCT: {label}: " + ", ".join(f"{v:.3f}" for v in shares), flush=True)
        return sum(shares) / len(shares)

    rows: list[dict[str, str]] = []
    scores = {label: trained(label, changes) for label, changes in TUNING.items()}
    candidates = dict(TUNING)
    if (together := combined_candidate(scores)) is not None:
        label, changes = together
        candidates[label] = changes
        scores[label] = trained(label, changes)
    write_csv(out / "tune.csv", rows)
    best = best_candidate(scores)
    print(f"tuned PUCT: {best} ({scores[best]:.3f})", flush=True)
    return candidates[best]


def combined_candidate(scores: dict[str, float]) -> tuple[str, dict[str, Any]] | None:
    """The candidate that sets together the best value of each setting whose change beat
    the recipe, where two or more settings did.

    Args:
      scores: `TUNING` label -> its mean score (the recipe's included).

    Returns:
      ('label+label', the settings), or None where fewer than two settings beat it.
    """
    better = sorted((label for label, score in scores.items()
                     if label in TUNING and score > scores["recipe"]),
                    key=lambda label: -scores[label])
    best_per_setting: dict[tuple[str, ...], str] = {}
    for label in better:  # several candidates try other values of one setting
        best_per_setting.setdefault(tuple(TUNING[label]), label)
    if len(best_per_setting) < 2:
        return None
    chosen = sorted(best_per_setting.values())
    return "+".join(chosen), {k: v for name in chosen for k, v in TUNING[name].items()}


def best_candidate(scores: dict[str, float]) -> str:
    """The label of the highest mean score; the recipe's where it ties the best."""
    return max(scores, key=lambda label: (scores[label], label == "recipe"))


def json_text(changes: dict[str, Any]) -> str:
    """'{"search.c_puct": 2.5}' (sorted keys), for a CSV cell."""
    import json

    return json.dumps(changes, sort_keys=True)


def train(out: Path, base, simulations: Sequence[int], seeds: dict[int, int],
          puct: dict[str, Any]) -> None:
    """Runs (or resumes) one sweep per training search into OUT/train/policy=P/, each
    count of `simulations` over its own number of `seeds`, PUCT with `puct` laid over
    the recipe. Counts train in ascending order, Gumbel then PUCT at each."""
    from azjax.sweep.grid import Param
    from azjax.sweep.sweep import run_sweep

    for n in simulations:
        for policy in ("gumbel", "puct"):
            config = policy_config(base, policy, puct)
            run_sweep(config, [Param("search.num_simulations", (n,))], range(seeds[n]),
                      out / "train" / f"policy={policy}")


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
        from azjax.run.agents.agent import Agent

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
                                 play_policy="", **EVAL_SEARCH)
            key, subkey = jax.random.split(key)
            actions = compiled(player.policy)(player.params, self.states, subkey)
            out.update(self.grade(np.asarray(actions), f"{policy}_"))
        return out


def train_dir(out: Path, policy: str, simulations: int, seed: int) -> Path:
    """The run directory of one experiment of the training sweeps."""
    return (out / "train" / f"policy={policy}" / "runs" / f"num_simulations={simulations}"
            / f"seed={seed}")


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file ([] where there is none)."""
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def evaluate_runs(out: Path, simulations: Sequence[int], seeds: dict[int, int],
                  eval_simulations: int, eval_positions: int) -> list[dict[str, str]]:
    """Evaluates every trained run of the grid whose last checkpoint OUT/evaluation.csv
    does not yet hold at these evaluation settings (the file keeps the rows of these
    settings only).

    Returns:
      One row per run: policy, simulations, seed, the evaluation's settings, iterations,
      games and positions trained on, and every metric.
    """
    from azjax.run.directory.run_dir import RunDir
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
            for seed in range(seeds[n]):
                run_dir = train_dir(out, policy, n, seed)
                if not run_finished(run_dir):
                    raise ValueError(f"{run_dir} has not finished training; run without "
                                     "--report-only to train it")
                last = RunDir(run_dir).metrics.read()[-1]
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
    with its 95% Student-t interval clipped to [0, 1] (`azjax.evaluation.stats.share_ci`:
    each seed is one draw).

    Args:
      rows: per-run rows (`evaluate_runs`).
      metrics: the metric columns to summarise (shares in [0, 1]).

    Returns:
      Rows with policy, simulations, seeds, games (the mean trained on), the budget
      (`iterations` and `positions`: one value, or 'low-high' where the seeds' budgets
      differ), the paper's claim and, per metric, `<metric>_mean`, `<metric>_low`,
      `<metric>_high` and `<metric>_seeds` (the per-seed values in seed order); in the
      order PUCT then Gumbel, simulations ascending.
    """
    from azjax.evaluation.stats import share_ci

    groups: dict[tuple[str, int], list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault((row["policy"], int(row["simulations"])), []).append(row)
    table = []
    for (policy, n), members in sorted(groups.items(),
                                       key=lambda item: (POLICIES.index(item[0][0]),
                                                         item[0][1])):
        members = sorted(members, key=lambda m: int(m["seed"]))
        out: dict[str, Any] = {"policy": policy, "simulations": n, "seeds": len(members),
                               "games": sum(int(m["games"]) for m in members) / len(members),
                               "paper": paper_claim(policy, n)}
        for budget in ("iterations", "positions"):
            values = sorted({int(m[budget]) for m in members})
            out[budget] = (f"{values[0]:,}" if len(values) == 1
                           else f"{values[0]:,}-{values[-1]:,}")
        for metric in metrics:
            values = [float(m[metric]) for m in members]
            mean, low, high = share_ci(values)
            out.update({f"{metric}_mean": mean, f"{metric}_low": low,
                        f"{metric}_high": high, f"{metric}_seeds": values})
        table.append(out)
    return table


def share_text(mean: float, low: float, high: float) -> str:
    """'71.2% [68.0, 74.1]' (the interval left out where there is none)."""
    text = f"{100 * mean:.1f}%"
    if not math.isnan(low):
        text += f" [{100 * low:.1f}, {100 * high:.1f}]"
    return text


def label(policy: str) -> str:
    """'PUCT' or 'Gumbel'."""
    return "PUCT" if policy == "puct" else "Gumbel"


def markdown(table: Sequence[dict[str, Any]], headings: dict[str, str]) -> str:
    """The summary as a Markdown table: one row per configuration, its own budget."""
    head = ["training search", "simulations", "seeds", "iterations", "positions", "games",
            *headings.values(), "the paper (9x9 Go)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = [label(row["policy"]), str(row["simulations"]), str(row["seeds"]),
                 row["iterations"], row["positions"], f"{row['games']:,.0f}"]
        cells += [share_text(row[f"{m}_mean"], row[f"{m}_low"], row[f"{m}_high"])
                  for m in headings]
        cells.append(row["paper"])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def seeds_markdown(table: Sequence[dict[str, Any]], metric: str) -> str:
    """One metric per seed, the unit every interval counts: a row per configuration."""
    most = max(row["seeds"] for row in table)
    head = ["training search", "simulations", *(f"seed {s}" for s in range(most))]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        values = [f"{100 * v:.1f}%" for v in row[f"{metric}_seeds"]]
        values += [""] * (most - len(values))
        lines.append("| " + " | ".join([label(row["policy"]), str(row["simulations"]),
                                        *values]) + " |")
    return "\n".join(lines)


def comparisons(table: Sequence[dict[str, Any]], metrics: Sequence[str]
                ) -> list[dict[str, Any]]:
    """Gumbel against PUCT at each simulation count both trained, per metric: the
    difference of the means over seeds with its Welch t-interval and p-value
    (`azjax.evaluation.stats.welch_difference`; seeds are the unit, and no seed of one
    search is paired with a seed of the other).

    Returns:
      Rows with simulations, metric, difference (Gumbel - PUCT), low, high and p.
    """
    from azjax.evaluation.stats import welch_difference

    by = {(row["policy"], row["simulations"]): row for row in table}
    out = []
    for n in sorted({row["simulations"] for row in table}):
        if ("puct", n) not in by or ("gumbel", n) not in by:
            continue
        for metric in metrics:
            diff, low, high, p = welch_difference(by["puct", n][f"{metric}_seeds"],
                                                  by["gumbel", n][f"{metric}_seeds"])
            out.append({"simulations": n, "metric": metric, "difference": diff,
                        "low": low, "high": high, "p": p})
    return out


def comparisons_markdown(rows: Sequence[dict[str, Any]], headings: dict[str, str]) -> str:
    """`comparisons` as a Markdown table, in points of percentage."""
    from azjax.evaluation.stats import difference_cells

    lines = ["| simulations | measure | Gumbel - PUCT (points) | 95% Welch interval | p |",
             "|---|---|---|---|---|"]
    for r in rows:
        cells = difference_cells(r["difference"], r["low"], r["high"], r["p"])
        lines.append(f"| {r['simulations']} | {headings[r['metric']]} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def tuning_markdown(out: Path) -> str:
    """OUT/tune.csv as a Markdown table: each PUCT candidate's seeds and mean with its
    95% t-interval ('' where there was no tuning)."""
    from azjax.evaluation.stats import share_ci

    rows = read_rows(out / "tune.csv")
    if not rows:
        return ""
    seeds = [k for k in rows[0] if k.startswith("seed=")]
    lines = ["| candidate | settings | " + " | ".join(seeds) + " | mean [95% t-interval] |",
             "|" + "---|" * (len(seeds) + 3)]
    for r in rows:
        values = [float(r[k]) for k in seeds if r.get(k)]
        mean, low, high = share_ci(values)
        lines.append(f"| {r['candidate']} | `{r['settings']}` | "
                     + " | ".join(f"{100 * v:.1f}%" for v in values)
                     + f" | {share_text(mean, low, high)} |")
    return "\n".join(lines)


def plot(table: Sequence[dict[str, Any]], headings: dict[str, str], path: Path,
         title: str) -> None:
    """One panel per metric: its mean over seeds (and 95% t-interval) against the
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
            ax.plot(xs, means, marker=marker, label=f"trained with {label(policy)}")
            bands = [(x, 100 * r[f"{metric}_low"], 100 * r[f"{metric}_high"])
                     for x, r in zip(xs, mine) if not math.isnan(r[f"{metric}_low"])]
            if bands:
                bx, lows, highs = zip(*bands)
                ax.fill_between(bx, lows, highs, alpha=0.2)
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
    fig.suptitle(title + " (mean over seeds, band: 95% t-interval over seeds, clipped "
                 "to [0, 100])", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


Curve = list[tuple[float, float, float, float]]
"""(positions trained on, mean, low, high) per evaluation every seed made."""


def curves(out: Path, seeds: dict[int, int]) -> dict[tuple[str, int], Curve]:
    """The network's share of optimal moves (all 1,000 dev_set positions) along training,
    from the runs' own evaluations (metrics.jsonl), with its 95% t-interval over seeds.

    Args:
      out: the out directory.
      seeds: simulation count -> its seeds.

    Returns:
      (policy, simulations) -> its `Curve`.
    """
    from azjax.evaluation.stats import share_ci
    from azjax.run.directory.run_dir import RunDir

    metric = "net_move_accuracy"
    lines = {}
    for n, count in seeds.items():
        for policy in POLICIES:
            by_iteration: dict[int, list[tuple[int, float]]] = {}
            for seed in range(count):
                run_dir = RunDir(train_dir(out, policy, n, seed))
                for record in run_dir.metrics.read():
                    if metric in record:
                        by_iteration.setdefault(record["iteration"], []).append(
                            (record["positions"], record[metric]))
            points = []
            for _, values in sorted(by_iteration.items()):
                if len(values) == count:
                    mean, low, high = share_ci([v for _, v in values])
                    points.append((sum(p for p, _ in values) / count, mean, low, high))
            lines[policy, n] = points
    return lines


def plot_curves(lines: dict[tuple[str, int], Curve], path: Path) -> None:
    """The network's share of optimal moves along training, one line per training search
    and simulation count, against two measures of what it cost: the positions trained on
    (as many gradient steps per position for every run) and the simulations self-play
    spent on them (positions x simulations per move)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.2))
    by_steps, by_compute = fig.subplots(1, 2, sharey=True)
    counts = sorted({n for _, n in lines})
    colours = {n: f"C{i}" for i, n in enumerate(counts)}
    for (policy, n), points in sorted(lines.items()):
        if not points:
            continue
        xs, means, lows, highs = (list(v) for v in zip(*points))
        style = {"color": colours[n], "linestyle": "-" if policy == "gumbel" else "--",
                 "marker": "s" if policy == "gumbel" else "o", "markersize": 3,
                 "label": f"{label(policy)} {n}"}
        for ax, scale in ((by_steps, 1 / 1000), (by_compute, n / 1e6)):
            x = [v * scale for v in xs]
            ax.plot(x, [100 * m for m in means], **style)
            band = [(a, 100 * lo, 100 * hi) for a, lo, hi in zip(x, lows, highs)
                    if not math.isnan(lo)]
            if band:
                bx, blo, bhi = zip(*band)
                ax.fill_between(bx, blo, bhi, color=colours[n], alpha=0.08)
    by_steps.set_xlabel("thousand positions trained on (gradient steps grow with them)")
    by_compute.set_xlabel("million simulations spent in self-play")
    by_compute.set_xscale("log")
    by_steps.set_ylabel("network alone: optimal moves (%)")
    for ax in (by_steps, by_compute):
        ax.grid(alpha=0.3)
    by_compute.legend(fontsize=7, ncol=2)
    fig.suptitle("The network alone along training, against training steps and against "
                 "search compute (mean over seeds; band: 95% t-interval)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def report(out: Path, rows: Sequence[dict[str, str]], eval_simulations: int,
           seeds: dict[int, int], command: str) -> str:
    """Writes OUT/gumbel_few_simulations.md, its .png and its _curves.png from the
    per-run rows and the runs' records.

    Returns:
      The Markdown written.
    """
    headings = metric_columns(eval_simulations)
    table = summarise(rows, list(headings))
    tuned = tuning_markdown(out)
    shown = ("net_optimal", "gumbel_optimal", "net_value_sign")
    text = (f"# Gumbel against PUCT at few simulations, on Connect Four\n\n"
            f"A reproduction of {PAPER}, Figure 2. Every agent trained for the same "
            "iterations (each row states its budget) with the same gradient steps; "
            f"graded on the first {rows[0]['eval_positions']} solved dev_set positions "
            f"with its network alone and with {eval_simulations}-simulation searches of "
            "each kind (root noise off, the same settings for every agent); the value "
            "sign on the decided positions of the public benchmark sets. Each seed is one "
            "draw: mean over seeds and 95% Student-t interval, clipped to [0, 100].\n\n"
            f"    {command}\n\n{markdown(table, headings)}\n\n"
            "## Network alone, optimal moves, per seed\n\n"
            f"{seeds_markdown(table, 'net_optimal')}\n\n"
            "## Gumbel against PUCT at the same simulations (seeds as the unit)\n\n"
            f"{comparisons_markdown(comparisons(table, shown), headings)}\n")
    if tuned:
        text += ("\n## PUCT's tuning (at 32 simulations; the network alone's optimal moves "
                 "at each run's last evaluation)\n\n" + tuned + "\n")
    (out / f"{REPORT}.md").write_text(text)
    plot(table, headings, out / f"{REPORT}.png", f"Connect Four, {len(rows)} runs")
    plot_curves(curves(out, seeds), out / f"{REPORT}_curves.png")
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


def parse_seeds(default: int, text: str, simulations: Sequence[int]) -> dict[int, int]:
    """Seeds per simulation count: `default`, or what '2=5,32=5' gives a count (counts
    not trained are ignored; ValueError for a bad entry)."""
    seeds = dict.fromkeys(simulations, default)
    for item in filter(None, text.split(",")):
        n, sep, count = item.partition("=")
        try:
            n_value, count_value = int(n), int(count)
        except ValueError:
            n_value = count_value = 0
        if not sep or n_value < 1 or count_value < 1:
            raise ValueError(f"--seeds-at takes N=SEEDS entries such as 2=5,32=5, got "
                             f"{item!r}")
        if n_value in seeds:
            seeds[n_value] = count_value
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="", help="out directory (default "
                        "runs/gumbel_few_simulations; with --quick a new temporary one)")
    parser.add_argument("--simulations", default="2,16,32,200",
                        help="training simulations per move, e.g. 2,4,8,16,32")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per configuration")
    parser.add_argument("--seeds-at", default="2=5,32=5,200=2", metavar="N=SEEDS,...",
                        help="seeds at particular simulation counts, overriding --seeds")
    parser.add_argument("--iterations", type=int, default=60,
                        help="training iterations per experiment (the recipe's games and "
                        "gradient steps each)")
    parser.add_argument("--tune-iterations", type=int, default=30,
                        help="training iterations of each PUCT tuning run (0: no tuning, "
                        "PUCT keeps the recipe's settings)")
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
        from azjax.run.process import compile_cache
        from azjax.run.process.devices import arrange

        arrange()
        compile_cache.enable()
        started = time.perf_counter()
        seeds = parse_seeds(args.seeds, args.seeds_at, simulations)
        base = base_config(args.iterations, args.set, args.quick)
        puct = {}
        if args.tune_iterations:
            puct = tune(out, base, range(min(3, args.seeds)), args.tune_iterations,
                        train=not args.report_only)
        if not args.report_only:
            train(out, base, simulations, seeds, puct)
        trained = time.perf_counter()
        rows = evaluate_runs(out, simulations, seeds, args.eval_simulations,
                             args.eval_positions)
        command = "python benchmarks/gumbel_few_simulations.py " + " ".join(given)
        print(report(out, rows, args.eval_simulations, seeds, command.strip()))
        print(f"training {trained - started:.0f} s, evaluation "
              f"{time.perf_counter() - trained:.0f} s; wrote {out / (REPORT + '.md')} and "
              f"{out / (REPORT + '.png')}")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
