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
    stop_when_perfect: bool = True
    """Stop once the network alone is perfect (where the game's evaluation can tell)."""

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
        for name in ("eval_every", "eval_search_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

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
        return cls(**kwargs)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> "TrainConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))
