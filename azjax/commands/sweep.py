"""`azjax sweep GAME`: ablation sweeps over search and training settings, seeds vmapped
in one program.

    azjax sweep tictactoe \\
        --param num_simulations=8,16,32,64 --param policy=puct,gumbel \\
        --seeds 4 [--out DIR] [--shard I/N] [--merge] [any experiment option]

The base config is the game's experiment recipe (`azjax.run.recipes`, the defaults of
`experiments/<game>.py`) with the usual options on top (`--iterations`, `--max-minutes`,
`--eval-every`, `--gradient-steps`, ...). `--param NAME=V1,V2,...` (repeatable) sweeps a
setting, named by its name (num_simulations, policy, c_puct, dirichlet_alpha,
dirichlet_fraction, temperature_moves, gumbel_scale, gumbel_value_scale,
max_num_considered_actions, rollout_lambda, learning_rate, batch_size, replay_capacity,
...) or its path (learner.weight_decay); a game option by game_options.NAME
(--param game_options.size=5,6). Every experiment writes a run directory of its
own under `<out>/runs/`. Seeds, and settings that do not change the compiled program (c_puct,
Dirichlet, Gumbel scale, lambda, learning rate, run options), run as one vmapped program.
Rerunning the same command resumes: finished runs are left alone and the others continue
from their last checkpoint (`--checkpoint-every`). `--shard I/N` runs the I-th of N
disjoint parts; every run (or `--merge` alone) builds seeds.csv, results.csv and
sweep.png from all finished runs in the out dir.

A swept setting that no experiment reads is refused before anything trains: c_puct,
pb_c_base, dirichlet_alpha and dirichlet_fraction only matter to the puct search,
gumbel_scale, gumbel_value_scale and max_num_considered_actions only to the gumbel one
(set `--search.policy` to the one that reads them); the root noise
only to self-play (evaluation searches greedily); a setting another one switches on
(cheap_simulations with full_search_prob < 1, the gate_* settings under gating, ...)
only while it is on. So are configurations that differ only in settings they do not
read (`--param policy=puct,gumbel --param c_puct=1,2`: two Gumbel configurations that
would train the same runs; sweep c_puct on its own with `--search.policy puct`).

The budget of each experiment is its own `--iterations`: each iteration plays the
recipe's `--selfplay.num-games` games for `--selfplay.steps-per-iteration` moves (a
fixed number of positions) and takes `--gradient-steps` gradient steps, so equal
iterations are equal training in positions and gradient steps. `--max-minutes` is a
wall clock, and the experiments of a compile group train as one vmapped program on one
clock: what each gets in those minutes depends on how many experiments share its group
and on the devices it runs on, so it is no fair budget for comparing configurations.
Compare at equal `--iterations` (with the recipes that stop by minutes, Connect Four's,
Gomoku's and Go's, add `--max-minutes 0`).
The tables read every run at its experiment's `--iterations` (a run trained further
counts with its record at that iteration); a configuration whose runs still stand for
different iterations (stopped by `--max-minutes`) shows the range in its `budget` column.

results.csv and the printed table summarise each metric over seeds, each seed one draw:
a share (in [0, 1]) as the mean with a 95% t-interval clipped to [0, 1], shown as
[low, high]; a 0/1 flag as the share of seeds with it and its exact 95% interval (3 of
3 seeds: 29.2 to 100%); another mean (a loss) with a 95% t-interval (+-); a time to
perfect play as k/m, the k of m seeds that reached it, and the median of those k (a seed
that never got there is censored at its budget,
so there is no mean).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Literal

import tyro

from azjax.commands.command_line import Saved, parse_with_preset, read_command_line
from azjax.commands.errors import one_line_errors, run_script
from azjax.driver.status import budget_text, opening_line
from azjax.run.config import RUN_SEED_MAX, TrainConfig
from azjax.run.files import check_output_dir
from azjax.run.process import compile_cache
from azjax.run.process.devices import arrange
from azjax.run.process.stop_signals import EXIT_STOPPED, Stopped, signal_name
from azjax.sweep import merge, parse_params, parse_shard, run_sweep, saved_base
from azjax.sweep.sweep import SWEEP_FILE, prepare_sweep


@dataclasses.dataclass(frozen=True)
class Sweep:
    """Ablation sweep: a grid of settings x seeds; seeds and traced settings vmapped.

    Each experiment trains for its own `--iterations` (equal iterations: equal self-play
    positions and gradient steps); `--max-minutes` is a wall clock its compile group
    shares, no fair budget between configurations."""

    config: Annotated[TrainConfig, tyro.conf.arg(name="")]
    preset: Literal["auto", "cpu", "gpu"] = "auto"
    """The recipe's variant: 'cpu' (sized for a 2-core CPU), 'gpu' (one accelerator),
    'auto' (the one for the backend JAX runs on)."""
    param: tyro.conf.UseAppendAction[tuple[str, ...]] = ()
    """NAME=V1,V2,... a swept setting and its values (repeat for a grid)."""
    seeds: int = 3
    """Seeds per configuration: --seed, --seed + 1, ... (each trains for its own
    `--iterations`, the budget to compare configurations at)."""
    out: str = ""
    """Out directory (default runs/sweep_<game>); rerun with the same one to resume."""
    shard: str = "1/1"
    """I/N: run only the I-th of N disjoint parts of the grid."""
    merge: bool = False
    """Only build seeds.csv, results.csv and sweep.png from the runs in --out."""


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Runs (or with --merge only tabulates) the sweep; exit status 2 with one `error:`
    line for a bad option, an out directory that cannot be written or a failed write."""
    line = read_command_line(sys.argv[1:] if argv is None else list(argv))
    game = line.game
    args, why = parse_with_preset(
        Sweep, line, lambda config: Sweep(config=config,
                                          out=f"runs/sweep_{game.replace(':', '_')}"),
        lambda args: None if args.merge else arrange(args.config.run.devices),
        lambda args: saved_sweep(args.out), description=__doc__)
    try:
        if args.merge:
            result = merge(check_output_dir(args.out, "--out"))
        else:
            params = parse_params(args.param)
            shard = parse_shard(args.shard)
            seeds = sweep_seeds(args.config.seed, args.seeds)
            prepare_sweep(args.config, params, seeds)  # a bad grid before any output
            out = check_output_dir(args.out, "--out")  # before any training
            print(opening_line(game, args.config.run.preset, why,
                               f"each run for {budget_text(args.config.run)}"), flush=True)
            compile_cache.enable()
            result = run_sweep(args.config, params, seeds, out, shard=shard)
    except Stopped as stopped:  # every experiment saved: the same command goes on
        print(f"stopped by {signal_name(stopped.signum)}, with a checkpoint of every run in "
              "training; rerun the same command to continue the sweep", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:
        print("\ninterrupted; rerun the same command to continue the sweep", file=sys.stderr)
        return 130
    print(result.markdown)
    return 0


def saved_sweep(out: str) -> Saved | None:
    """The sweep already in an out directory.

    Args:
      out: the directory (`--out`).

    Returns:
      Its sweep.json's base config and preset; None for none, or one that cannot be read
      (the sweep says what is wrong with it).
    """
    try:
        base = saved_base(out) if out else None
    except (ValueError, OSError):
        return None
    if base is None:
        return None
    return Saved(str(Path(out) / SWEEP_FILE), "--out", base.run.preset, base)


def sweep_seeds(first: int, count: int) -> list[int]:
    """The seeds `first`, ..., `first + count - 1` (ValueError unless all are a run's
    seeds, `RUN_SEED_MAX` at most; `first` was checked with the config)."""
    if count < 1:
        raise ValueError(f"--seeds must be >= 1, got {count}")
    if first + count - 1 > RUN_SEED_MAX:
        raise ValueError(f"--seed + --seeds - 1 ({first} + {count} - 1) must be at most "
                         f"{RUN_SEED_MAX}, the largest seed of a run")
    return [first + i for i in range(count)]


if __name__ == "__main__":
    run_script(main)
