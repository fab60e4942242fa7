"""A warm-up run before a run (`RunConfig.warm_up`): another recipe, trained on the
run's own network for `warm_up_minutes`, whose weights start the run (`warm_start`).

The curriculum of 9x9 Go: 7x7 games are four times cheaper and teach captures, eyes and
living groups first (KataGo trains on several board sizes at once for the same reason);
a network with `network.pooled_heads` has the same weights on both boards.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from azjax.core.networks import abstract_params
from azjax.run import checkpoint as ckpt
from azjax.run.config import TrainConfig
from azjax.run.recipes import recipe
from azjax.run.warm_start import same_shapes

WARM_UP_DIR = "warm-up"
"""The warm-up run's directory, inside the run's own."""


def warm_up_config(config: TrainConfig, run_dir: Path | None) -> TrainConfig:
    """The warm-up run of `config`: the recipe `config.run.warm_up` (in the run's preset)
    with the run's network, seed and devices, for `warm_up_minutes`. Raises ValueError for
    no run directory, an unknown recipe, a warm start asked for twice, or a network whose
    weights would not carry over to the run's board."""
    run = config.run
    if run_dir is None:
        raise ValueError("run.warm_up needs a run directory (the warm-up run goes into "
                         "RUN_DIR/warm-up)")
    if run.warm_start:
        raise ValueError("run.warm_up trains the run's starting weights; run.warm_start "
                         "names them: set one of the two")
    if run.warm_up_minutes <= 0:
        raise ValueError("run.warm_up needs run.warm_up_minutes > 0, got "
                         f"{run.warm_up_minutes!r}")
    try:
        base = recipe(run.warm_up, run.preset or "cpu")
    except ValueError as error:
        raise ValueError(f"run.warm_up: {error}") from None
    network = config.program.network
    warm = base.replace(network=network, max_minutes=run.warm_up_minutes,
                        devices=run.devices, seed=config.seed)
    mine, theirs = (abstract_params(c.make_env(), network) for c in (config, warm))
    if not same_shapes(mine, theirs):
        raise ValueError(
            f"run.warm_up: the network's weights on {warm.program.game} "
            f"{warm.program.game_options} would not fit this run's "
            f"{config.program.game} {config.program.game_options} (across board sizes it "
            f"needs --network.pooled-heads, and the same observation planes)")
    return warm


def warm_up(config: TrainConfig, warm: TrainConfig, run_dir: Path,
            train: Callable[..., object], say: Callable[[str], None]) -> None:
    """Trains `warm` (`warm_up_config(config, run_dir)`) in RUN_DIR/warm-up, resumed there
    if it stopped, while the run has no checkpoint."""
    if not ckpt.checkpoint_steps(run_dir):
        say(f"warm-up: {config.run.warm_up} for {config.run.warm_up_minutes:g} minutes "
            f"in {run_dir / WARM_UP_DIR}, then this run from its weights")
        train(warm, run_dir / WARM_UP_DIR, lambda line: say(f"[warm-up] {line}"))


def warm_start_source(config: TrainConfig, run_dir: Path | None) -> str:
    """Where a fresh run's starting weights come from: `run.warm_start`, or the warm-up
    run's directory; '' for fresh weights."""
    if config.run.warm_up and run_dir is not None:
        return str(run_dir / WARM_UP_DIR)
    return config.run.warm_start
