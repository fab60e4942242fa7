"""A run: what it is (its config and recipe), what it needs (memory, devices) and what
it leaves behind (the run directory's checkpoints, lock and metrics, agent files, and the
`Agent` loaded from either).

Modules, the config and its checks at the top and a folder per concern:

* `config`: `TrainConfig` = `ProgramConfig` + `RunConfig` + seed, saved as `config.json`.
* `recipes`: the measured training recipes of the experiment scripts (`recipe(name, preset)`).
* `metric_schema`: every metric of `metrics.jsonl`: its key, label, unit and direction.
* `game_check`: a game of the user's checked (`envs.check_env`) before training writes.
* `files`: atomic writes and outputs checked before the work.
* `directory`: the run's directory, `RunDir`, and its parts: the layout's names
  (`layout`), checkpoints (`checkpoint`, `checkpoint_files`), `metrics.jsonl` and
  TensorBoard (`metrics_log`), the one writer's lock (`lock`), the learning curves
  (`plots`), and what a training
  process records of itself in `provenance.jsonl` (`process_record`).
* `process`: the process's runtime: devices and `jax.distributed` (`devices`), a run of
  several processes that loses one (`peers`, `guard`), SIGTERM and Ctrl-C
  (`stop_signals`), the XLA compilation cache (`compile_cache`), status lines with rate
  and ETA (`progress`).
* `agents`: the `Agent` (network + search) of a run or of a one-file agent (`agent`,
  `agent_file`), where it came from (`provenance`, `run_provenance`), the shipped agents
  (`shipped_agents`), the agent a command line names (`agent_source`), and a run started
  from another's weights (`warm_start`).
* `browser`: the browser page's games against an agent (`web_games`) and a position
  drawn with the agent's search on it (`analysis_board`).
* `grammar`: what a command line spells: player specs and their registry of kinds
  (`specs`), and `--game-options KEY=VALUE ...` (`game_options`).

May import: `envs`, `azjax.core`.
"""

from azjax.run.agents.agent import Agent, Analysis
from azjax.run.agents.agent_file import AgentFileError
from azjax.run.agents.provenance import Provenance
from azjax.run.browser.analysis_board import (
    PositionAnalysis,
    analyse_position,
    analysis_board,
    analysis_picture,
)
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.directory.checkpoint import DamagedCheckpointWarning
from azjax.run.directory.layout import RunDirError
from azjax.run.directory.run_dir import RunDir
from azjax.run.grammar.specs import PlayerSpec, parse_spec
from azjax.run.process.devices import arrange
from azjax.run.process.progress import Progress
from azjax.run.process.stop_signals import EXIT_STOPPED, Stopped
from azjax.run.recipes import recipe

__all__ = [
    "Agent",
    "AgentFileError",
    "Analysis",
    "DamagedCheckpointWarning",
    "EXIT_STOPPED",
    "PlayerSpec",
    "PositionAnalysis",
    "Progress",
    "Provenance",
    "RunConfig",
    "RunDir",
    "RunDirError",
    "Stopped",
    "TrainConfig",
    "analyse_position",
    "analysis_board",
    "analysis_picture",
    "arrange",
    "parse_spec",
    "recipe",
]
