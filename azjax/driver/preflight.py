"""A group's runs checked once, before anything is written or compiled: `preflight`
returns the checked `Plan` (the game, the configs as they will train, their warm-ups, the
devices, the players and baselines, and the memory the program needs) that the driver
then trusts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from jax.sharding import Mesh

from azjax.core import memory
from azjax.core.identity import Identity
from azjax.core.stacked import cached
from azjax.driver.program_players import ProgramPlayers
from azjax.driver.warm_up import warm_up_config
from azjax.run.agents.warm_start import warm_start_params
from azjax.run.config import TrainConfig, game_settings, run_parts
from azjax.run.directory.metrics_log import check_tensorboard
from azjax.run.directory.run_dir import RunDir
from azjax.run.game_check import check_game
from azjax.run.process.devices import data_mesh, device_count
from envs import Env
from envs.registry import registered_at_runtime

Say = Callable[[str], None]


@dataclasses.dataclass
class Plan:
    """A training group, checked: what `train_group` trains, and with what.

    Attributes:
      configs: the E configs as they train (the game as `envs.make` builds it again, the
        device count they train on).
      run_dirs: their run directories, opened (None: nothing written for one).
      warm_ups: each run's warm-up config (None: none).
      env: the game.
      players: the program's players, evaluator and baselines (made once per program).
      mesh: the data mesh over the devices (None for one device).
      memory_parts: the bytes of the largest run's parts (`azjax.run.config.run_parts`),
        checked to fit E times.
    """

    configs: list[TrainConfig]
    run_dirs: list[RunDir | None]
    warm_ups: list[TrainConfig | None]
    env: Env
    players: ProgramPlayers
    mesh: Mesh | None
    memory_parts: dict[str, int]


def preflight(configs: Sequence[TrainConfig], run_dirs: Sequence[RunDir | None],
              env: Env | None, say: Say) -> Plan:
    """Checks a group's runs, once each, before any is written or compiled.

    Args:
      configs: the E configs (one program: `ProgramConfig.compile_key`).
      run_dirs: their run directories, opened (`RunDir.open`), or None each.
      env: the game (None: the configs' game).
      say: receives notices (the device count chosen, say).

    Returns:
      The checked plan.

    Raises:
      ValueError: one line (RunDirError for a run directory holding another run), for a
        game that fails its check, settings the game cannot take, a group that is not
        one program, a program that does not fit in memory or does not split over the
        devices, a baseline that cannot be made, or a warm-up or warm start that cannot
        start its run.
    """
    configs = list(configs)
    if not configs:
        raise ValueError("no experiments to train")
    if len(run_dirs) != len(configs):
        raise ValueError(f"{len(configs)} configs but {len(run_dirs)} run directories")
    configs, env = _game(configs, env)
    check_game(env, configs[0].program.game)  # a game of the user's, before any write
    parts = _check_group(configs, run_dirs, env)
    warm_ups = [warm_up_config(config, run_dir) if config.run.warm_up else None
                for config, run_dir in zip(configs, run_dirs)]
    configs, warm_ups, mesh = _devices(configs, run_dirs, warm_ups, say)
    program = configs[0].program
    players = cached(("players", Identity(env), program.compile_key()),
                     lambda: ProgramPlayers(env, program))
    players.forget_loaded()
    for config, run_dir in zip(configs, run_dirs):
        players.opponents(config.run.eval_opponents)  # bad baselines fail before any write
        if config.run.warm_start and (run_dir is None or not run_dir.checkpoints.steps()):
            warm_start_params(config.run.warm_start, players.env, config.program)
    return Plan(configs, list(run_dirs), warm_ups, players.env, players, mesh, parts)


def _game(configs: list[TrainConfig], env: Env | None) -> tuple[list[TrainConfig], Env]:
    """The group's configs naming the game as `envs.make` builds it again, and the env:
    `env` when given, else the configs' game (one object per game and options, so that
    compiled steps are reused)."""
    if env is None:
        program = configs[0].program
        options = tuple(sorted(program.game_options.items()))
        env = cached(("env", program.game, options), program.make_env)
        if program.game not in registered_at_runtime():
            return configs, env
    if not isinstance(env, Env):
        raise ValueError(f"env must be an envs.Env, got {type(env).__name__}")
    game = game_settings(env)
    return [c.replace(**game) for c in configs], env


def _check_group(configs: list[TrainConfig], run_dirs: Sequence[RunDir | None],
                 env: Env) -> dict[str, int]:
    """Checks each run's settings against the game and its run directory, and that the
    group's program fits in memory E times; returns the largest run's parts."""
    named = [d.path.resolve() for d in run_dirs if d is not None]
    if len(set(named)) != len(named):
        raise ValueError("two experiments of a group cannot share a run directory")
    for config, run_dir in zip(configs, run_dirs):
        config.check_rules(env)
        if config.program.compile_key() != configs[0].program.compile_key():
            raise ValueError("the experiments of a group must compile to one program (they "
                             "may differ in seeds, traced settings and run options only)")
        if run_dir is not None:
            run_dir.check(config)  # every run is checked before any is written
            if config.run.tensorboard:
                check_tensorboard()
    # E experiments in one program need E times the memory of the largest.
    parts = max((run_parts(c, env) for c in configs), key=lambda p: sum(p.values()))
    memory.check_parts("this training run", parts, len(configs))
    return parts


def _devices(configs: list[TrainConfig], run_dirs: Sequence[RunDir | None],
             warm_ups: list[TrainConfig | None], say: Say
             ) -> tuple[list[TrainConfig], list[TrainConfig | None], Mesh | None]:
    """The group's configs and their warm-ups' recording the device count they train on,
    and its data mesh (None for one device); ValueError, before anything trains, for a
    count that the runs or the warm-ups still to train cannot be split over."""
    requested = {c.run.devices for c in configs}
    if len(requested) > 1:
        raise ValueError(f"a group trains on one set of devices, not on {sorted(requested)}")
    pending = [warm.program for warm, run_dir in zip(warm_ups, run_dirs)
               if warm is not None and not run_dir.checkpoints.steps()]
    count, notice = device_count(requested.pop(), configs[0].program, pending)
    if notice:
        say(notice)
    for run_dir in filter(None, run_dirs):
        run_dir.check_device_count(count)
    return ([c.replace(devices=count) for c in configs],
            [None if w is None else w.replace(devices=count) for w in warm_ups],
            data_mesh(count) if count > 1 else None)
