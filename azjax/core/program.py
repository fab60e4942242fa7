"""What the compiled training iteration is built from: `ProgramConfig`.

The game, network, search, self-play, learner, replay, augmentation, gradient steps,
value-target mix and regime. A resumed run must keep it. Its traced settings (marked on
their fields, `azjax.core.fields.traced`) reach the program as arrays; the rest is
compiled in. How a run is run (budget, cadences, evaluation) is `azjax.run.RunConfig`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from typing import Any, Literal, Union

import envs
from azjax.core import memory
from azjax.core.fields import bounded, checked, compiled_part
from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig
from envs import Env
from envs.limits import INT32_MAX

AUGMENT_MODES = ("sample", "write", "none")
REGIMES = ("alphazero", "gating")


@checked()
class ProgramConfig:
    """What the compiled training iteration is built from (a resumed run keeps it)."""

    game: str = "tictactoe"
    """Game to train on: a registered name, pgx:<id>, or the import path of a game of
    your own (my_module:MyGame); anything `envs.make` takes."""
    game_options: dict[str, Union[int, float]] = dataclasses.field(default_factory=dict)
    """Keyword options of the game (e.g. size=9, komi=7.5 for go), passed to `envs.make`."""
    network: NetworkConfig = NetworkConfig()
    search: SearchConfig = SearchConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    learner: LearnerConfig = LearnerConfig()
    replay_capacity: int = bounded(2**15, low=1)
    """Positions held in the replay ring (FIFO)."""
    augment: Literal["sample", "write", "none"] = "sample"
    """Symmetry augmentation: 'sample' (a random symmetry per sampled position), 'write'
    (all symmetric copies written to replay) or 'none'."""
    gradient_steps: int = bounded(64, low=0)
    """Gradient steps per iteration (K)."""
    learn_after: int = bounded(0, low=0)
    """Positions with a known outcome the replay must hold (every device's ring
    together; a position, not each of its symmetric copies under 'write' augmentation)
    before the gradient steps change the network (DQN's `learning_starts`): a run
    started from trained weights (`run.warm_start`) does not fit them to its first few,
    short games. At most the positions the replay holds less one iteration of self-play,
    since the games in flight hold positions whose outcome is not known yet. 0: from
    the first iteration."""
    value_target_mix: float = bounded(0.0, low=0, high=1)
    """Value target = (1 - mix) * z + mix * search root value (0 = the paper's z)."""
    reanalyse_positions: int = bounded(0, low=0)
    """Reanalysis (MuZero Reanalyse): positions with a known outcome, drawn uniformly from
    the replay each iteration, that self-play's search runs again with the latest network
    and without root noise before the gradient steps; their policy target and search
    value become the new search's. The replay then keeps each position's game state.
    0: off."""
    regime: Literal["alphazero", "gating"] = "alphazero"
    """'alphazero': self-play with the latest network. 'gating' (AlphaGo Zero): self-play
    with the best network so far, replaced when the latest one beats it in an arena."""

    def _check(self) -> None:
        """The rules that join settings (each field's own bounds are on the field)."""
        if not self.game:
            raise ValueError(f"game must be a non-empty string, got {self.game!r}")
        _check_game_options(self.game_options)
        self.check_learn_after(1)
        if self.value_target_mix > 0 and self.search.score_utility > 0:
            # The root value it mixes into the value target already holds the utility,
            # which the search then adds again on top of the value head.
            raise ValueError(
                "value_target_mix > 0 and search.score_utility > 0 would count the score "
                "utility twice (the search value mixed into the value target holds it): "
                "set one of them to 0")
        check_int32("positions per iteration: selfplay.num_games x "
                     "selfplay.steps_per_iteration", self.positions_per_iteration)
        if self.reanalyse_positions > self.replay_capacity:
            raise ValueError(
                f"reanalyse_positions ({self.reanalyse_positions}) must be at most "
                f"replay_capacity ({self.replay_capacity})")
        if self.reanalyse_positions and self.augment == "write":
            raise ValueError(
                "reanalyse_positions needs augment 'sample' or 'none': under 'write' the "
                "replay holds transformed copies, not the positions whose states it keeps")
        if (self.selfplay.full_search_prob < 1.0
                and self.selfplay.cheap_simulations >= self.search.num_simulations):
            raise ValueError(
                f"selfplay.cheap_simulations ({self.selfplay.cheap_simulations}) must be "
                f"fewer than search.num_simulations ({self.search.num_simulations}) when "
                f"selfplay.full_search_prob < 1 (playout cap randomisation)")

    def make_env(self) -> envs.Env:
        """The game this config trains on (ValueError for an unknown game or bad options)."""
        return envs.make(self.game, **self.game_options)

    @property
    def positions_per_iteration(self) -> int:
        """Positions self-play produces per iteration (B * S)."""
        return self.selfplay.num_games * self.selfplay.steps_per_iteration

    @property
    def rows_per_iteration(self) -> int:
        """Positions written to replay per iteration, before symmetric copies: B * S, or
        the full searches' S * F with KataGo's cheap moves."""
        if self.selfplay.katago_cheap_moves:
            return self.selfplay.full_search_games * self.selfplay.steps_per_iteration
        return self.positions_per_iteration

    def check_learn_after(self, copies: int) -> None:
        """ValueError when the replay can never hold `learn_after` positions with a known
        outcome: it holds replay_capacity / `copies` positions (`copies` entries each
        under 'write' augmentation), and the games in flight keep at least about one
        iteration of them unresolved."""
        if self.learn_after == 0:
            return
        held = self.replay_capacity // copies
        most = held - self.positions_per_iteration
        if self.learn_after > most:
            held_text = (f"replay_capacity {self.replay_capacity}" if copies == 1 else
                         f"replay_capacity {self.replay_capacity} / {copies} symmetric "
                         f"copies = {held}")
            raise ValueError(
                f"learn_after ({self.learn_after}) must be at most {max(most, 0)}: the "
                f"positions the replay holds ({held_text}) less one iteration of "
                f"self-play ({self.positions_per_iteration} = selfplay.num_games x "
                f"selfplay.steps_per_iteration), whose games in flight have no outcome "
                f"yet; the replay would never hold learn_after positions to learn from")

    def replay_entries_per_iteration(self, env: envs.Env) -> int:
        """Entries self-play writes to replay each iteration."""
        copies = env.symmetries.size if self.augment == "write" else 1
        return self.rows_per_iteration * copies

    def check(self, env: envs.Env) -> None:
        """The checks that need the game (ValueError): `check_rules`, and whether the
        program fits in memory (`program_bytes`, estimated from shapes before anything is
        built). A training run is checked by `azjax.run.config.TrainConfig.check`, which
        counts the run's matches too; the core functions trust their caller to have
        checked (`azjax.core.iteration.make_iteration_fn`)."""
        self.check_rules(env)
        check_program_fits(self, env)

    def check_rules(self, env: envs.Env) -> None:
        """The rules that need the game (ValueError): the replay holds an iteration of
        self-play, its indices fit int32, the auxiliary heads have their targets and
        pooled heads a board; self-play's search keeps no tree under playout cap
        randomisation (an agent's program may: it is its play search)."""
        if self.selfplay.full_search_prob < 1.0 and self.search.reuse_tree:
            raise ValueError(
                "search.reuse_tree does not combine with selfplay.full_search_prob < 1 "
                "(playout cap randomisation): set one of them off")
        needed = self.replay_entries_per_iteration(env)
        symmetries = " x symmetries" if self.augment == "write" else ""
        check_int32("replay entries per iteration: selfplay.num_games x "
                     f"selfplay.steps_per_iteration{symmetries}", needed)
        if self.replay_capacity < needed:
            raise ValueError(
                f"replay_capacity ({self.replay_capacity}) must hold at least one iteration "
                f"of self-play ({needed} entries = num_games x steps_per_iteration"
                f"{symmetries})"
            )
        check_int32("replay ring indices: replay_capacity + one iteration's entries",
                     self.replay_capacity + needed)
        if self.augment == "write":
            self.check_learn_after(env.symmetries.size)
        self.check_auxiliary(env)
        self.check_pooled_heads(env)

    @property
    def keeps_score(self) -> bool:
        """Whether replay keeps each game's final score margin (for the score head or
        the score-aware value target)."""
        return self.network.score_head or self.learner.score_value_mix > 0

    def check_auxiliary(self, env: envs.Env) -> None:
        """ValueError when the network has an auxiliary head whose target `env` lacks,
        or the value target needs a score margin `env` does not give."""
        for head, hook in (("ownership_head", "ownership"), ("score_head", "score_margin")):
            if getattr(self.network, head) and getattr(env, hook)() is None:
                raise ValueError(
                    f"network.{head} needs a game with targets for it: {env.name} has no "
                    f"Env.{hook} (switch it off with --network.no-{head.replace('_', '-')})")
        if self.learner.score_value_mix > 0 and env.score_margin() is None:
            raise ValueError(f"learner.score_value_mix needs a game with a score margin: "
                             f"{env.name} has no Env.score_margin (set it to 0)")
        if self.search.score_utility > 0 and not self.network.score_head:
            raise ValueError("search.score_utility needs a network with a score head "
                             "(--network.score-head)")

    def check_pooled_heads(self, env: envs.Env) -> None:
        """ValueError when `network.pooled_heads` is asked of a game whose observation is
        not a board [H, W, C] or whose actions are not its cells (then extra moves)."""
        if not self.network.pooled_heads:
            return
        shape = env.observation_shape
        if len(shape) != 3 or env.num_actions < shape[0] * shape[1]:
            raise ValueError(
                f"network.pooled_heads needs a game whose actions are its board's cells "
                f"(then any extra moves such as pass): {env.name} observes {shape} and has "
                f"{env.num_actions} actions (switch it off with --network.no-pooled-heads)")

    def compile_key(self) -> str:
        """Equal for configs that compile to one training program: everything but the
        traced settings (`azjax.core.fields`)."""
        return json.dumps(compiled_part(self), sort_keys=True)


def auxiliary_targets(env: envs.Env, program: ProgramConfig) -> dict:
    """The functions of a finished state that give the program's auxiliary targets, by
    `azjax.core.replay.Positions` field: 'ownership' (`Env.ownership`) and 'score'
    (`Env.score_margin`), for the heads `program.network` has and the score-aware value
    target (`LearnerConfig.score_value_mix`)."""
    program.check_auxiliary(env)
    targets = {}
    if program.network.ownership_head:
        targets["ownership"] = env.ownership()
    if program.keeps_score:
        targets["score"] = env.score_margin()
    return targets


def _check_game_options(options: Any) -> None:
    if not isinstance(options, dict):
        raise ValueError(f"game_options must be a mapping of option names to values, "
                         f"got {options!r}")
    for name, value in options.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"game_options names must be non-empty strings, got {name!r}")
        if isinstance(value, numbers.Real) and not math.isfinite(value):
            raise ValueError(f"game_options {name} must be a finite number, got {value!r}")


def check_int32(what: str, value: int, hint: str = "") -> None:
    """ValueError when `value` (`what`) does not fit the program's int32 indices."""
    if value > INT32_MAX:
        raise ValueError(f"{what} = {value:,}, more than an int32 index of the compiled "
                         f"program holds (2**31 - 1){hint}")


def program_parts(program: ProgramConfig, env: Env) -> dict[str, int]:
    """Bytes a training program holds, by part: replay ring, self-play search trees and
    games, one iteration's positions, network and optimizer, network activations (the
    estimate `program_bytes` sums)."""
    games = program.selfplay.num_games
    entry = memory.replay_entry_bytes(env) + auxiliary_entry_bytes(program, env)
    # Parameters, gradients and Adam's two moments; the gating regime keeps a best copy.
    copies = 5 if program.regime == "gating" else 4
    # Training keeps forward activations for the backward pass: about twice the batch.
    activations = max(2 * program.learner.batch_size, games)
    return {
        "replay ring": program.replay_capacity * entry,
        "self-play search trees": memory.search_tree_bytes(
            env, games, program.search.tree_nodes - 1),
        "self-play games": (games + (program.selfplay.archive_size
                                     if program.selfplay.restarts else 0))
        * memory.state_bytes(env),
        "one iteration's positions": program.replay_entries_per_iteration(env) * entry,
        "network and optimizer": copies * memory.network_bytes(env, program.network),
        "network activations": memory.activation_bytes(env, program.network, activations),
    }


def auxiliary_entry_bytes(program: ProgramConfig, env: Env) -> int:
    """Bytes a replay entry holds beyond `memory.replay_entry_bytes`: the ownership map
    (int8 a cell), the score (float32), the full-search flag, where trained, and the
    game state with reanalysis."""
    cells = math.prod(env.observation_shape[:-1])
    return ((cells if program.network.ownership_head else 0)
            + (4 if program.keeps_score else 0)
            + (1 if program.selfplay.full_search_prob < 1.0 else 0)
            + (memory.state_bytes(env) if program.reanalyse_positions else 0))


def program_bytes(program: ProgramConfig, env: Env, experiments: int = 1) -> int:
    """Estimated bytes of a training program on `env`, for `experiments` programs run
    side by side (a vmapped group)."""
    return experiments * sum(program_parts(program, env).values())


def check_program_fits(program: ProgramConfig, env: Env, experiments: int = 1) -> None:
    """Raises ValueError (one line, the largest parts named) when the training program
    would not fit in memory (`program_bytes` against `available_bytes`)."""
    memory.check_parts("this training program", program_parts(program, env), experiments)
