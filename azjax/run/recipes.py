"""The training recipes of the experiment scripts, as importable configs.

`recipe("tictactoe", "cpu")` is what `python experiments/tictactoe.py` trains with on a CPU;
notebooks and sweeps start from the same configs (`.replace(...)` them: any field of either
half by its name, e.g. `recipe("tictactoe", "cpu").replace(seed=3, iterations=50)`).

Each recipe has two variants, its presets: 'cpu', sized for a 2-core CPU (the machine
of docs/results.md), and 'gpu', sized to keep one GPU busy
(thousands of games per iteration, a wider network, more gradient steps, cadences in
minutes of wall time); 'auto' takes the one for the backend JAX runs on (any accelerator,
a TPU too, takes 'gpu'). The scripts take `--preset auto|cpu|gpu`, and a run's
config.json records which it used (`run.preset`).
"""

from __future__ import annotations

import dataclasses

import jax

from azjax.core.learner import LearnerConfig
from azjax.core.networks import NetworkConfig
from azjax.core.program import ProgramConfig
from azjax.core.search import SearchConfig
from azjax.core.selfplay import SelfPlayConfig
from azjax.run.config import RunConfig, TrainConfig

# 15x15, five in a row, a small residual network, Gumbel search with 16 simulations,
# 20 minutes of training.
_GOMOKU = TrainConfig(
    program=ProgramConfig(
        game="gomoku",
        game_options={"size": 15, "k": 5},
        network=NetworkConfig(
            channels=32, num_blocks=2, policy_filters=2, value_filters=1, value_hidden=64
        ),
        search=SearchConfig(policy="gumbel", num_simulations=16, max_num_considered_actions=16),
        selfplay=SelfPlayConfig(
            num_games=128,
            steps_per_iteration=8,
            temperature_moves=4,
            random_move_prob=0.0,
            random_opening_moves=2,
        ),
        learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-4, batch_size=128),
        replay_capacity=32 * 128 * 8,
        augment="sample",
        gradient_steps=16,
        value_target_mix=0.5,
    ),
    run=RunConfig(
        iterations=100_000,
        max_minutes=20.0,
        eval_every=10,
        eval_search_every=4,
        checkpoint_every=50,
        stop_when_perfect=False,
    ),
)

CPU_RECIPES: dict[str, TrainConfig] = {
    # Random openings and a few random moves for coverage, a 3x128 MLP (the board is too
    # small for convolutions to pay), half the search value in the value target, a replay
    # of the last 8 iterations and 256 gradient steps each at learning rate 2e-3 (the
    # fastest to perfect play of the rates tried); the network is evaluated after every
    # iteration (one batched pass) so the run stops as soon as it is perfect
    # (docs/results.md#tic-tac-toe: the time to perfect play and what each setting is worth).
    "tictactoe": TrainConfig(
        program=ProgramConfig(
            game="tictactoe",
            network=NetworkConfig(torso="mlp", channels=128, mlp_layers=3),
            search=SearchConfig(
                policy="gumbel", num_simulations=32, max_num_considered_actions=16
            ),
            selfplay=SelfPlayConfig(
                num_games=256,
                steps_per_iteration=9,
                temperature_moves=2,
                random_move_prob=0.05,
                random_opening_moves=6,
            ),
            learner=LearnerConfig(learning_rate=2e-3, weight_decay=1e-5, batch_size=256),
            replay_capacity=8 * 256 * 9,
            augment="sample",
            gradient_steps=256,
            value_target_mix=0.5,
        ),
        run=RunConfig(
            iterations=300,
            eval_every=1,
            eval_search_every=0,
            checkpoint_every=20,
        ),
    ),
    # Fits a 2-core CPU: a small residual network (the search is bound by the network on
    # CPU), Gumbel search with 32 simulations, 60 minutes of training.
    "connect_four": TrainConfig(
        program=ProgramConfig(
            game="connect_four",
            network=NetworkConfig(
                channels=32, num_blocks=3, policy_filters=4, value_filters=2, value_hidden=64
            ),
            search=SearchConfig(policy="gumbel", num_simulations=32, max_num_considered_actions=8,
                                discount=0.97),
            selfplay=SelfPlayConfig(
                num_games=256,
                steps_per_iteration=8,
                temperature_moves=6,
                random_move_prob=0.02,
                random_opening_moves=4,
            ),
            learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-4, batch_size=256),
            replay_capacity=64 * 256 * 8,
            augment="sample",
            gradient_steps=32,
            value_target_mix=0.5,
        ),
        run=RunConfig(
            iterations=100_000,
            max_minutes=60.0,
            eval_every=10,
            eval_search_every=12,
            eval_simulations=512,
            checkpoint_every=50,
            stop_when_perfect=False,
        ),
    ),
    # Every reachable position is solved exactly; stops once the network alone is perfect.
    "coin_split": TrainConfig(
        program=ProgramConfig(
            game="coin_split",
            game_options={"coins": 20},
            network=NetworkConfig(channels=64, policy_filters=8, value_filters=4, value_hidden=64),
            search=SearchConfig(policy="gumbel", num_simulations=16, max_num_considered_actions=16),
            selfplay=SelfPlayConfig(
                num_games=256,
                steps_per_iteration=8,
                temperature_moves=2,
                random_move_prob=0.05,
                random_opening_moves=4,
            ),
            learner=LearnerConfig(learning_rate=1e-3, weight_decay=1e-5, batch_size=256),
            replay_capacity=16 * 256 * 8,
            augment="none",
            gradient_steps=64,
            value_target_mix=0.5,
        ),
        run=RunConfig(
            iterations=300,
            eval_every=2,
            eval_search_every=5,
            checkpoint_every=20,
        ),
    ),
    "gomoku": _GOMOKU,
    # 7x7 Go (area scoring, komi 9: by the 1989 analysis Black wins by 9 with best play),
    # with KataGo's ownership and score heads trained on each game's final position;
    # every move gets the 32-simulation search: playout cap randomisation (a quarter of
    # the games searched in full at each move, the others with 8 simulations) plays more
    # games but scored less against GNU Go in the same time
    # (docs/go.md#which-levers-help-on-7x7).
    # 60 minutes, scored against GNU Go level 1 (20 games) every 5 minutes; every 100th
    # iteration's checkpoint is kept, for the curve against both levels afterwards.
    "go7x7": _GOMOKU.replace(
        game="go",
        game_options={"size": 7, "komi": 9.0, "history": 4},
        network=dataclasses.replace(_GOMOKU.program.network, ownership_head=True,
                                    score_head=True),
        search=SearchConfig(policy="gumbel", num_simulations=32,
                            max_num_considered_actions=16),
        selfplay=dataclasses.replace(_GOMOKU.program.selfplay, temperature_moves=6),
        replay_capacity=64 * 128 * 8,
        gradient_steps=16,
        max_minutes=60.0,
        eval_every=0,
        eval_every_minutes=5.0,
        eval_search_every=0,
        eval_opponents=("gnugo:1",),
        eval_games=20,
        checkpoint_every=50,
        keep_every=100,
    ),
}
# 9x9 Go as a curriculum over board sizes, 20 minutes: the go7x7 recipe on this recipe's
# network for the first 14 (in RUN_DIR/warm-up), then 9x9 (komi 7.5, 4 positions of
# history) from its weights for 6, searched as on 7x7. Global-pooling heads give both
# boards one set of weights; learning waits for 10,000 positions of finished 9x9 games.
# Scored against GNU Go level 1 (16 games) every 3 minutes of the 9x9 part. The trained
# agent plays with 128 simulations of PUCT (self-play: 32 of Gumbel) that never fill its
# own eyes: a deeper search that does not throw away its own eyes loses by far smaller
# margins than the training search (docs/go.md#9x9).
CPU_RECIPES["go9x9"] = CPU_RECIPES["go7x7"].replace(
    game_options={"size": 9, "komi": 7.5, "history": 4},
    network=dataclasses.replace(CPU_RECIPES["go7x7"].program.network, pooled_heads=True),
    search=dataclasses.replace(CPU_RECIPES["go7x7"].program.search, play_simulations=128,
                               play_policy="puct", play_skip_futile=True),
    learn_after=10_000,
    max_minutes=6.0,
    warm_up="go7x7",
    warm_up_minutes=14.0,
    eval_every_minutes=3.0,
    eval_games=16,
    keep_every=0,
)


def _variant(base: TrainConfig, **paths: object) -> TrainConfig:
    """`base` with settings changed by path: `_variant(c, selfplay__num_games=4096)`."""
    for path, value in paths.items():
        base = base.with_value(path.replace("__", "."), value)
    return base


# One GPU: self-play and the learner batch wide enough to fill it (an iteration is bound
# by the search's sequential simulations, so more games cost little time), cadences in
# minutes of wall time, minutes of training rather than an hour.
GPU_RECIPES: dict[str, TrainConfig] = {
    # Twice the games, twice the batch, half the gradient steps: an iteration is bound by
    # sequential steps (simulations, gradient steps), not by the batch, so more games
    # with as many steps only cost time (docs/scaling.md#measured-on-an-nvidia-h200).
    "tictactoe": _variant(
        CPU_RECIPES["tictactoe"], selfplay__num_games=512, learner__batch_size=512,
        gradient_steps=128, replay_capacity=8 * 512 * 9),
    # 4,096 games, a 64x5 residual network, 128 steps of batch 1,024 per iteration, a
    # replay of 32 iterations, 10 minutes: wide enough to keep one GPU busy, and its
    # accuracy levels off within the 10 minutes (docs/scaling.md#measured-on-an-nvidia-h200).
    "connect_four": _variant(
        CPU_RECIPES["connect_four"], selfplay__num_games=4096, learner__batch_size=1024,
        gradient_steps=128, replay_capacity=1_048_576, network__channels=64,
        network__num_blocks=5, iterations=10_000_000, max_minutes=10.0, eval_every=0,
        eval_every_minutes=1.0, eval_search_every=1, checkpoint_every=0,
        checkpoint_every_minutes=2.0),
    # Sized as tic-tac-toe's (another small game bound by sequential steps).
    "coin_split": _variant(
        CPU_RECIPES["coin_split"], selfplay__num_games=512, learner__batch_size=512,
        replay_capacity=16 * 512 * 8),
    "gomoku": _variant(
        CPU_RECIPES["gomoku"], selfplay__num_games=1024, learner__batch_size=512,
        gradient_steps=64, replay_capacity=32 * 1024 * 8, network__channels=64,
        network__num_blocks=4, iterations=10_000_000, max_minutes=10.0, eval_every=0,
        eval_every_minutes=1.0, checkpoint_every=0, checkpoint_every_minutes=2.0),
}
# 9x9 as on the CPU, widened as go7x7's gpu variant, 6 minutes: 3 of the go7x7 gpu recipe,
# then 3 of 9x9 (what it scored against GNU Go: docs/go.md#9x9-on-a-gpu). Both Go gpu
# variants keep playout cap randomisation (8 simulations on 3 moves in 4), the setting of
# the only GPU trainings of Go (docs/results.md#go-9x9-on-a-gpu), which ran an earlier
# form of it (one full-or-cheap choice for the whole batch); the per-game, per-move form
# is not measured on a GPU. The CPU recipes dropped it on CPU budgets, which say nothing
# of a GPU's (docs/go.md).
_GPU_GO_SELFPLAY = {"selfplay__num_games": 1024, "selfplay__full_search_prob": 0.25,
                    "selfplay__cheap_simulations": 8}
GPU_RECIPES["go9x9"] = _variant(
    CPU_RECIPES["go9x9"], **_GPU_GO_SELFPLAY, learner__batch_size=512, gradient_steps=64,
    replay_capacity=64 * 1024 * 8, network__channels=64, network__num_blocks=4,
    learn_after=80_000, iterations=10_000_000, max_minutes=3.0, warm_up_minutes=3.0,
    eval_every=0, eval_every_minutes=2.0, checkpoint_every=0,
    checkpoint_every_minutes=2.0)
GPU_RECIPES["go7x7"] = _variant(
    CPU_RECIPES["go7x7"], **_GPU_GO_SELFPLAY, learner__batch_size=512, gradient_steps=64,
    replay_capacity=64 * 1024 * 8, network__channels=64, network__num_blocks=4,
    iterations=10_000_000, max_minutes=10.0, eval_every=0, eval_every_minutes=2.0,
    checkpoint_every=0, checkpoint_every_minutes=2.0, keep_every=0)
# (keep_every=0: checkpoints every 2 minutes seldom fall on a multiple of 100 iterations;
# the newest three are go_curve.py's points.)

PRESETS = ("cpu", "gpu")
"""The variants of every recipe: 'cpu' (a 2-core CPU) and 'gpu' (one accelerator)."""
_BY_PRESET = {"cpu": CPU_RECIPES, "gpu": GPU_RECIPES}
RECIPES = CPU_RECIPES
"""The recipes' names, each with its CPU variant (`recipe(name, preset)` for either)."""


def backend_preset() -> str:
    """The preset for the backend JAX runs on: 'cpu' on a CPU, else 'gpu' (this starts
    JAX's backend: arrange devices first, `azjax.run.process.devices.arrange`)."""
    return "cpu" if jax.default_backend() == "cpu" else "gpu"


def check_preset(preset: str) -> str:
    """`preset` if it is one of `PRESETS` (ValueError naming them otherwise)."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    return preset


def recipe(name: str, preset: str | None = None) -> TrainConfig:
    """The training config of `experiments/<name>.py` in one of its variants.

    Args:
      name: a recipe's name (`RECIPES`; ValueError for another).
      preset: 'cpu', 'gpu', or 'auto' for the backend JAX runs on (`backend_preset`);
        required: without it, a TypeError that names the three.

    Returns:
      The recipe's config, its `run.preset` set to the variant taken.

    Raises:
      ValueError: for a name of no recipe or a preset not in `PRESETS` (or 'auto').
      TypeError: when `preset` is left out.
    """
    if name not in CPU_RECIPES:
        raise ValueError(f"no recipe {name!r}; recipes: {', '.join(sorted(CPU_RECIPES))}")
    preset = _preset_of(preset, f"recipe({name!r}")
    return _BY_PRESET[preset][name].replace(preset=preset)


def defaults_for(game: str, preset: str | None = None) -> TrainConfig:
    """The recipe called `game` (`go9x9` included) in `preset`'s variant (as `recipe`
    takes it, required for a recipe), else plain defaults for the game `game` names (any
    `envs.make` takes; `preset` unused)."""
    if game in CPU_RECIPES:
        return recipe(game, _preset_of(preset, f"defaults_for({game!r}"))
    return TrainConfig(program=ProgramConfig(game=game))


def _preset_of(preset: str | None, call: str) -> str:
    """'cpu' or 'gpu' for `preset` ('auto': the backend's); a TypeError that names the
    choices for `call` when `preset` is None (left out)."""
    if preset is None:
        raise TypeError(f"{call}) needs a preset: {call}, 'cpu'), 'gpu', or 'auto' for the "
                        "variant of the backend JAX runs on")
    return backend_preset() if preset == "auto" else check_preset(preset)
