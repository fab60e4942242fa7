"""The one training driver: E experiments of one program trained as one stacked,
vmapped step, each into its own run directory (a single run is a group of one).

Modules:

* `driver`: `train`, `train_group`, `TrainResult`: the group's jitted steps.
* `preflight`: a group's runs checked once, before anything is written or compiled: the
  `Plan` the driver trusts.
* `host_run`: the host side of one experiment: its run directory, evaluations, gating,
  checkpoints, budget and clock.
* `program_players`: the players and evaluator of one training program, made once.
* `status`: status lines, the closing summary, and verdicts on a run's records.
* `warm_up`: a warm-up run of another recipe that starts a run (a curriculum).

May import: `envs`, `azjax.core`, `azjax.run`, `azjax.go`, `azjax.evaluation`.
"""

from azjax.driver.driver import TrainResult, train, train_group
from azjax.driver.status import TrainingDiverged, finished, summarize

__all__ = [
    "TrainResult",
    "TrainingDiverged",
    "finished",
    "summarize",
    "train",
    "train_group",
]
