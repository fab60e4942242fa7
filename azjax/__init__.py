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
    "NetworkConfig",
    "PolicyValueNet",
    "SearchConfig",
    "SelfPlayConfig",
    "TrainConfig",
    "train",
]
