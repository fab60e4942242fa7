"""azjax: AlphaZero in JAX — mctx search, Flax network, Optax learner, one XLA iteration."""

from azjax.agent import Agent
from azjax.config import TrainConfig
from azjax.learner import LearnerConfig
from azjax.networks import NetworkConfig, PolicyValueNet
from azjax.search import SearchConfig
from azjax.selfplay import SelfPlayConfig
from azjax.train import train

__all__ = [
    "Agent",
    "LearnerConfig",
    "MatchResult",
    "NetworkConfig",
    "PolicyValueNet",
    "SearchConfig",
    "SelfPlayConfig",
    "TrainConfig",
    "evaluate",
    "train",
]


def __getattr__(name: str):
    # The arena is imported on first use, so `python -m azjax.arena` runs it fresh.
    if name in ("evaluate", "MatchResult"):
        from azjax import arena

        return getattr(arena, name)
    raise AttributeError(f"module 'azjax' has no attribute {name!r}")
