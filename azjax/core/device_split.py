"""A program split over N devices: what each device runs, and what keeps a program from
splitting.

Each of N devices plays num_games/N of the games into a replay ring of
replay_capacity/N and samples batch_size/N positions from it (`azjax.core.iteration`).
The rules that join a program's settings (`ProgramConfig._check`) are rules of the whole
run and hold on the whole config: `learn_after` counts the positions of every device's
ring, for one. A device's share is therefore made without checking them again; what a
share itself needs (sizes that divide, a whole number of fully searched games per device
under playout cap randomisation) is `misfits`, checked before anything trains.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from azjax.core.fields import checks_deferred
from azjax.core.program import ProgramConfig


def nearest_multiple(value: int, factor: int) -> int:
    """The multiple of `factor` nearest `value` (the larger one on a tie, never 0).

    Args:
      value: a positive size.
      factor: a positive integer.

    Returns:
      The multiple.
    """
    low = value // factor * factor
    high = low + factor
    return high if low == 0 or high - value <= value - low else low


def split_sizes(program: ProgramConfig) -> dict[str, int]:
    """The sizes of a program that are split over the devices, by option name."""
    sizes = {
        "selfplay.num_games": program.selfplay.num_games,
        "learner.batch_size": program.learner.batch_size,
        "replay_capacity": program.replay_capacity,
    }
    if program.selfplay.restarts:  # each device keeps its own archive
        sizes["selfplay.archive_size"] = program.selfplay.archive_size
    if program.reanalyse_positions:
        sizes["reanalyse_positions"] = program.reanalyse_positions
    return sizes


def _full_search_step(share: float) -> int:
    """The smallest number of games of which `share` is a whole number (the denominator
    of `share` as a fraction)."""
    return Fraction(share).limit_denominator(1 << 20).denominator


def misfits(program: ProgramConfig, count: int) -> list[str]:
    """What keeps `program` from splitting over `count` devices, one phrase each with the
    nearest value that would split.

    Args:
      program: the whole run's program.
      count: a number of devices, at least 1.

    Returns:
      The phrases; empty when every device's share is a program of its own.
    """
    wrong = [f"{name} {size} is not a multiple of {count} (nearest that is: "
             f"{nearest_multiple(size, count)})"
             for name, size in split_sizes(program).items() if size % count]
    selfplay = program.selfplay
    if selfplay.full_search_prob < 1.0:
        games = selfplay.num_games / count
        full = selfplay.full_search_prob * games
        if abs(full - round(full)) > 1e-9 or round(full) < 1:
            step = count * _full_search_step(selfplay.full_search_prob)
            wrong.append(
                f"selfplay.full_search_prob x selfplay.num_games per device must be a whole "
                f"number of fully searched games, at least 1, on each of the {count} "
                f"devices: {selfplay.full_search_prob:g} x {selfplay.num_games} / {count} = "
                f"{full:g} (nearest selfplay.num_games that is: "
                f"{nearest_multiple(selfplay.num_games, step)})")
    return wrong


def cannot_split(count: int, wrong: list[str]) -> str:
    """The one line that refuses to split a run over `count` devices.

    Args:
      count: a number of devices.
      wrong: what keeps it from splitting (`misfits`' phrases).

    Returns:
      'cannot split the run over N devices: ...'.
    """
    return f"cannot split the run over {count} devices: " + "; ".join(wrong)


def per_device(config: ProgramConfig, devices: int) -> ProgramConfig:
    """The program one of `devices` devices runs: its share of the games, the replay ring
    and the learner's batch.

    The share is not checked against the whole run's rules (`ProgramConfig._check`),
    which hold on `config`; `misfits` checks what a share needs.

    Args:
      config: the whole program (checked).
      devices: the number of devices the iteration is split over.

    Returns:
      `config` with `num_games`, `batch_size`, `replay_capacity` (and with restarts
      `archive_size`, with reanalysis `reanalyse_positions`) divided; `config` itself
      for one device.

    Raises:
      ValueError: 'cannot split the run over N devices: ...' (`misfits`).
    """
    if devices == 1:
        return config
    wrong = misfits(config, devices)
    if wrong:
        raise ValueError(cannot_split(devices, wrong))
    with checks_deferred():
        return dataclasses.replace(
            config,
            selfplay=dataclasses.replace(
                config.selfplay, num_games=config.selfplay.num_games // devices,
                archive_size=max(config.selfplay.archive_size // devices, 1)),
            reanalyse_positions=config.reanalyse_positions // devices,
            learner=dataclasses.replace(config.learner,
                                        batch_size=config.learner.batch_size // devices),
            replay_capacity=config.replay_capacity // devices,
        )
