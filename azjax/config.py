"""The training configuration: one frozen dataclass, saved as `config.json` in a run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal, Union

import envs
from azjax.learner import LearnerConfig
from azjax.networks import NetworkConfig
from azjax.search import SearchConfig
from azjax.selfplay import SelfPlayConfig

AUGMENT_MODES = ("sample", "write", "none")
REGIMES = ("alphazero", "gating")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run."""

    game: str = "tictactoe"
    """Game to train on (a name accepted by `envs.make`)."""
    game_options: dict[str, Union[int, float]] = dataclasses.field(default_factory=dict)
    """Keyword options of the game (e.g. size=9, komi=7.5 for go), passed to `envs.make`."""
    seed: int = 0
    """Seed of the run's PRNG key."""
    network: NetworkConfig = NetworkConfig()
    search: SearchConfig = SearchConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    learner: LearnerConfig = LearnerConfig()
    replay_capacity: int = 2**15
    """Positions held in the replay ring (FIFO)."""
    augment: Literal["sample", "write", "none"] = "sample"
    """Symmetry augmentation: 'sample' (a random symmetry per sampled position), 'write'
    (all symmetric copies written to replay) or 'none'."""
    gradient_steps: int = 64
    """Gradient steps per iteration (K)."""
    value_target_mix: float = 0.0
    """Value target = (1 - mix) * z + mix * search root value (0 = the paper's z)."""
    iterations: int = 200
    """Training iterations to run (a resumed run continues up to this number)."""
    max_minutes: float = 0.0
    """Stop after this much training wall time, resumes included (0 = no limit)."""
    log_every: int = 1
    """Iterations between progress lines and metrics.jsonl records."""
    eval_every: int = 5
    """Iterations between evaluations (0 = never)."""
    eval_search_every: int = 4
    """Evaluations between the (costlier) evaluations of network + search (0 = never)."""
    checkpoint_every: int = 20
    """Iterations between checkpoints (the last iteration is always checkpointed)."""
    keep_every: int = 0
    """Keep every checkpoint whose iteration is a multiple of this, besides the newest
    three (0 = only those), e.g. for a ratings league over training."""
    tensorboard: bool = False
    """Also write the metrics as TensorBoard event files into `run_dir/tensorboard`
    (needs `pip install 'azjax[tensorboard]'`)."""
    stop_when_perfect: bool = True
    """Stop once the network alone is perfect (where the game's evaluation can tell)."""
    eval_opponents: tuple[str, ...] = ()
    """Baselines the agent (network + search, noise off) plays at every evaluation, as
    player specs (e.g. 'random', 'mcts:100', 'alphabeta:2'); scores go to metrics.jsonl."""
    eval_games: int = 64
    """Games per baseline at each evaluation (half per seat)."""
    eval_openings: int = 2
    """Random opening plies of those games (paired across seats)."""
    regime: Literal["alphazero", "gating"] = "alphazero"
    """'alphazero': self-play with the latest network. 'gating' (AlphaGo Zero): self-play
    with the best network so far, replaced when the latest one beats it in an arena."""
    gate_every: int = 10
    """Iterations between gating arenas (gating regime)."""
    gate_games: int = 400
    """Games of each gating arena, half per seat."""
    gate_threshold: float = 0.55
    """Score (wins + draws / 2) the latest network needs against the best to replace it."""
    gate_simulations: int = 0
    """Search simulations per move in the gating arena (0 = the training budget)."""
    gate_openings: int = 2
    """Random opening plies of the gating games (paired across seats)."""

    def validate(self) -> None:
        """Raises ValueError, with a message naming the option, for bad values."""
        self.network.validate()
        self.search.validate()
        self.selfplay.validate()
        self.learner.validate()
        if self.augment not in AUGMENT_MODES:
            raise ValueError(f"augment must be one of {AUGMENT_MODES}, got {self.augment!r}")
        if self.gradient_steps < 0:
            raise ValueError(f"gradient_steps must be >= 0, got {self.gradient_steps}")
        if not 0.0 <= self.value_target_mix <= 1.0:
            raise ValueError(f"value_target_mix must be in [0, 1], got {self.value_target_mix}")
        for name in ("iterations", "log_every", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_minutes < 0:
            raise ValueError(f"max_minutes must be >= 0, got {self.max_minutes}")
        for name in ("eval_every", "eval_search_every", "gate_simulations", "eval_openings",
                     "keep_every",
                     "gate_openings"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("eval_games", "gate_every", "gate_games"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {REGIMES}, got {self.regime!r}")
        if not 0.5 <= self.gate_threshold <= 1.0:
            raise ValueError(f"gate_threshold must be in [0.5, 1], got {self.gate_threshold}")
        if isinstance(self.eval_opponents, str):
            raise ValueError("eval_opponents must be a list of player specs, not one string")
        from azjax.player_specs import parse_spec

        for spec in self.eval_opponents:
            parse_spec(spec)

    def make_env(self) -> envs.Env:
        """The game this config trains on (ValueError for an unknown game or bad options)."""
        return envs.make(self.game, **self.game_options)

    @property
    def positions_per_iteration(self) -> int:
        """Positions self-play produces per iteration (B * S)."""
        return self.selfplay.num_games * self.selfplay.steps_per_iteration

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        """Inverse of `to_dict`; unknown keys are a ValueError."""
        nested = {
            "network": NetworkConfig,
            "search": SearchConfig,
            "selfplay": SelfPlayConfig,
            "learner": LearnerConfig,
        }
        kwargs = {}
        names = {f.name for f in dataclasses.fields(cls)}
        for key, value in data.items():
            if key not in names:
                raise ValueError(f"unknown config field {key!r}")
            kwargs[key] = nested[key](**value) if key in nested else value
        if "eval_opponents" in kwargs:
            kwargs["eval_opponents"] = tuple(kwargs["eval_opponents"])
        return cls(**kwargs)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> "TrainConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))
