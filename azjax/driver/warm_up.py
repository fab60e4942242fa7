"""A warm-up run before a run (`RunConfig.warm_up`): another recipe, trained on the
run's own network for `warm_up_minutes`, whose weights start the run (`warm_start`).

The curriculum of 9x9 Go: 7x7 games are four times cheaper and teach captures, eyes and
living groups first (KataGo trains on several board sizes at once for the same reason);
a network with `network.pooled_heads` has the same weights on both boards.

The run's budget bounds its warm-up too: the warm-up trains at most the run's
`iterations` (a smoke run of 2 iterations warms up for 2), and on the command line
`--max-minutes M` is the whole command's time, shared between the warm-up and the run in
the ratio of their minutes (`share_minutes`) unless `--warm-up-minutes` is given too. A
warm-up that stopped resumes with the config.json it began with, as any run does, even
where the recipe it came from has changed since.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from azjax.core.networks import abstract_params
from azjax.driver.status import budget_text, changed_settings, minutes_text
from azjax.run.agents.warm_start import same_shapes
from azjax.run.config import RunConfig, TrainConfig
from azjax.run.directory.layout import CONFIG_FILE, WARM_UP_DIR
from azjax.run.directory.run_dir import RunDir
from azjax.run.recipes import recipe


def warm_up_config(config: TrainConfig, run_dir: RunDir | None) -> TrainConfig:
    """The warm-up run of `config`: the recipe `config.run.warm_up` (in the run's preset)
    with the run's network and seed or, while the run has no checkpoint yet, the
    config.json of the warm-up already in RUN_DIR/warm-up; for `warm_up_minutes` and at
    most the run's iterations, on the run's devices.

    Args:
      config: the run's config (`run.warm_up` names the recipe to warm up with).
      run_dir: the run's directory (the warm-up goes into RUN_DIR/warm-up).

    Returns:
      The warm-up run's config.

    Raises:
      ValueError: for no run directory, an unknown recipe, a
        network whose weights would not carry over to the run's board, or a warm-up in
        progress of another network than the run's.
    """
    run = config.run
    if run_dir is None:
        raise ValueError("run.warm_up needs a run directory (the warm-up run goes into "
                         f"RUN_DIR/{WARM_UP_DIR})")
    base = _recipe(config)
    network = config.program.network
    saved = _saved(config, run_dir)
    start = base.replace(network=network, seed=config.seed) if saved is None else saved
    warm = start.replace(devices=run.devices, **_budget(run, base.run))
    if warm.program.network != network:
        changed = [path for path in changed_settings(warm, config)
                   if path.startswith("network.")]
        raise ValueError(
            f"{run_dir.warm_up} holds a warm-up of another network (it differs in "
            f"{', '.join(changed)}): rerun with the network options it began with, or "
            "delete that directory to warm up afresh")
    mine, theirs = (abstract_params(c.make_env(), network) for c in (config, warm))
    if not same_shapes(mine, theirs):
        raise ValueError(
            f"run.warm_up: the network's weights on {warm.program.game} "
            f"{warm.program.game_options} would not fit this run's "
            f"{config.program.game} {config.program.game_options} (across board sizes it "
            f"needs --network.pooled-heads, and the same observation planes)")
    return warm


def _recipe(config: TrainConfig) -> TrainConfig:
    """The recipe `config.run.warm_up` in the run's preset (ValueError naming it)."""
    try:
        return recipe(config.run.warm_up, config.run.preset or "cpu")
    except ValueError as error:
        raise ValueError(f"run.warm_up: {error}") from None


def _budget(run: RunConfig, recipe_run: RunConfig) -> dict[str, float | int]:
    """The warm-up's budget: its `warm_up_minutes`, and at most the run's iterations."""
    return {"max_minutes": run.warm_up_minutes,
            "iterations": min(recipe_run.iterations, run.iterations)}


def _saved(config: TrainConfig, run_dir: RunDir) -> TrainConfig | None:
    """The config.json of the warm-up in RUN_DIR/warm-up while the run is still to train
    from it (no checkpoint of its own yet), else None."""
    if run_dir.checkpoints.steps():
        return None
    return run_dir.warm_up.saved_config()


def share_minutes(total: float, warm_up_minutes: float, max_minutes: float
                  ) -> tuple[float, float]:
    """`total` minutes of training shared between a warm-up and its run in the ratio of
    `warm_up_minutes` to `max_minutes` (20 minutes of 14 + 6: 14 and 6; 10: 7 and 3).

    Args:
      total: the minutes of the whole command (`--max-minutes`); <= 0 for no limit.
      warm_up_minutes: the warm-up's minutes in the recipe (or the resumed run).
      max_minutes: the run's own minutes in the recipe (or the resumed run).

    Returns:
      The warm-up's minutes and the run's: (`warm_up_minutes`, `total`) unchanged where
      there is nothing to share (no limit, or a part with no minutes of its own).
    """
    if total <= 0 or warm_up_minutes <= 0 or max_minutes <= 0:
        return warm_up_minutes, total
    warm = round(total * warm_up_minutes / (warm_up_minutes + max_minutes), 6)
    return warm, round(total - warm, 6)


def plan(config: TrainConfig, run_dir: RunDir | None, name: str) -> str:
    """What a run trains, and for how long, in words.

    Args:
      config: the run's config.
      run_dir: its directory (None: none yet, or not given); only looked at, so a path
        that cannot be a run directory is left for training to refuse.
      name: what the run trains (its recipe's name), as the words name it.

    Returns:
      Its budget (`budget_text`), after its warm-up's while the warm-up is still to
      train, with how to skip it.
    """
    budget = budget_text(config.run)
    run = config.run
    if not run.warm_up:
        return budget
    if run_dir is not None and run_dir.checkpoints.steps():
        return f"{budget} (its warm-up on {run.warm_up} is done)"
    try:
        base = _recipe(config).run
    except ValueError:
        return budget  # training says what is wrong with the warm-up
    warm = budget_text(dataclasses.replace(base, **_budget(run, base)))
    where = f"RUN_DIR/{WARM_UP_DIR}" if run_dir is None else run_dir.warm_up
    total = (f": {minutes_text(run.warm_up_minutes + run.max_minutes)} in all"
             if run.max_minutes > 0 else "")
    return (f"first the {run.warm_up} recipe as a warm-up for {warm} in {where} (--warm-up "
            f"'' skips it), then {name} from its weights for {budget}{total}")


def warm_up(config: TrainConfig, warm: TrainConfig, run_dir: RunDir,
            train: Callable[..., object], say: Callable[[str], None]) -> None:
    """Trains `warm` (`warm_up_config(config, run_dir)`) in RUN_DIR/warm-up, resumed there
    if it stopped, while the run has no checkpoint.

    Args:
      config: the run's config.
      warm: the warm-up's config.
      run_dir: the run's directory.
      train: `azjax.driver.driver.train`.
      say: receives the status lines.
    """
    if run_dir.checkpoints.steps():
        return
    where, budget = run_dir.warm_up, budget_text(warm.run)
    saved = _saved(config, run_dir)
    if saved is None:
        what = f"the {config.run.warm_up} recipe for {budget} in {where}"
    else:
        changed = changed_settings(saved, _recipe(config).replace(
            network=saved.program.network, seed=saved.seed))
        what = f"resuming {where} with its {CONFIG_FILE}" + (
            f" (it differs from today's {config.run.warm_up} recipe in {', '.join(changed)})"
            if changed else "") + f" for {budget}"
    say(f"warm-up: {what}, then this run from its weights")
    train(warm, where, lambda line: say(f"[warm-up] {line}"))


def warm_start_source(config: TrainConfig, run_dir: RunDir | None) -> str:
    """Where a fresh run's starting weights come from.

    Args:
      config: the run's config.
      run_dir: its directory (None: none).

    Returns:
      `run.warm_start`, or the warm-up run's directory; '' for fresh weights.
    """
    if config.run.warm_up and run_dir is not None:
        return str(run_dir.warm_up)
    return config.run.warm_start
