"""Ablation sweeps: a grid of training settings x seeds as few compiled programs as
possible, every experiment a normal run directory, and a table and plots of the results.

Modules:

* `grid`: swept settings, the grid of experiments, its compile groups and shards.
* `sweep`: running a sweep and merging its runs into tables (`run_sweep`, `merge`).
* `table`: per-run rows and a table per configuration, each seed one draw: shares
  with clipped t-intervals, flags as k of m seeds with exact intervals, other means
  with t-intervals, times to perfect play as seeds reached
  and their median.
* `plots`: each metric against each swept setting, summarised as in the table.

May import: everything below it (`envs`, `azjax.core`, `run`, `go`, `evaluation`,
`driver`).
"""

from azjax.sweep.grid import parse_params, parse_shard
from azjax.sweep.sweep import merge, run_sweep, saved_base

__all__ = ["merge", "parse_params", "parse_shard", "run_sweep", "saved_base"]
