"""A run: what it is (its config and recipe), what it needs (memory, devices) and what
it leaves behind (the run directory's checkpoints, lock and metrics, agent files, and the
`Agent` loaded from either).

Modules:

* `config`: `TrainConfig` = `ProgramConfig` + `RunConfig` + seed, saved as `config.json`.
* `recipes`: the measured training recipes of the experiment scripts (`recipe(name, preset)`).
* `game_options`: the grammar of `--game-options KEY=VALUE ...`.
* `game_check`: a game of the user's checked (`envs.check_env`) before training writes.
* `specs`: the grammar of player specs (`random`, `mcts:100`, `alphazero:DIR`, ...).
* `devices`: host devices on a CPU, `jax.distributed`, the data mesh, agreement.
* `peers`, `guard`: a run of several processes that loses one stops in one line.
* `stop_signals`: SIGTERM and Ctrl-C stop a run after its iteration, with a checkpoint.
* `files`: atomic writes and outputs checked before the work.
* `run_dir`: `RunDir`, which owns a run directory's layout, its checks, `config.json`,
  `metrics.jsonl` and `provenance.jsonl`.
* `checkpoint_files`, `checkpoint`: checked orbax checkpoints of the whole training state.
* `lock`: one writer per run directory.
* `metric_schema`: every metric of `metrics.jsonl`: its key, label, unit and direction.
* `metrics_log`: `metrics.jsonl` and TensorBoard.
* `progress`: status lines with rate and ETA for long commands.
* `compile_cache`: the persistent XLA compilation cache of the scripts.
* `agent_file`, `agent`: one-file agents and the `Agent` (network + search) of a run.
* `provenance`, `run_provenance`: where an agent came from (code, command, budget), as
  its file records it, and as a run directory tells it.
* `process_record`: what a training process records of itself (code, command, machine)
  in the run directory's `provenance.jsonl` when it starts or resumes a run.
* `shipped_agents`: the trained agents that ship with azjax, by name (`go7x7`).
* `agent_source`: the agent a command line names (run directory, agent file or shipped
  name), checked and loaded.
* `warm_start`: a run started from another run's network weights.
* `analysis_board`: a position drawn with the agent's search on it (SVG).
* `web_games`: the games the browser page plays against an agent (`azjax serve`).

May import: `envs`, `azjax.core`.
"""

from azjax.run.agent import Agent, Analysis
from azjax.run.agent_file import AgentFileError
from azjax.run.analysis_board import (
    PositionAnalysis,
    analyse_position,
    analysis_board,
    analysis_picture,
)
from azjax.run.checkpoint import DamagedCheckpointWarning
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.devices import arrange
from azjax.run.progress import Progress
from azjax.run.provenance import Provenance
from azjax.run.recipes import recipe
from azjax.run.run_dir import RunDir
from azjax.run.run_layout import RunDirError
from azjax.run.specs import PlayerSpec, parse_spec
from azjax.run.stop_signals import EXIT_STOPPED, Stopped

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
