"""The training configuration, in two halves: what compiles, and how a run is run.

* `ProgramConfig` (`azjax.core.program`): the game, network, search, self-play, learner,
  replay, augmentation, gradient steps, value-target mix and regime, everything the
  jitted training iteration is built from. A resumed run must keep it.
* `RunConfig`: the budget, the cadences, the evaluation opponents, the gating arena and
  logging, read by the host-side driver only. Any of it may change when a run resumes.

`TrainConfig` holds both and the seed; it is saved as `config.json` in a run directory.
A setting is named by its path without the half: `search.c_puct`, `iterations`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from pathlib import Path
from typing import Annotated, Any

import tyro

import envs
from azjax.core import counters, memory
from azjax.core.fields import bounded, checked, setting_types
from azjax.core.program import ProgramConfig, program_parts
from azjax.core.search import search_changes
from azjax.run.files import write_atomic
from azjax.run.grammar.specs import parse_spec
from envs import Env

RUN_SEED_MAX = 2**32 - 1
"""The largest seed of a run: `jax.random.key` keeps the low 32 bits, so larger or
negative seeds would repeat smaller ones."""
HALVES = ("program", "run")


@checked()
class RunConfig:
    """How a run is run: budget, cadences, evaluation, gating arena, logging (any of it
    may change when a run resumes)."""

    iterations: int = bounded(200, low=1, high=counters.MAX_VALUE)
    """Training iterations to run (a resumed run continues up to this number)."""
    max_minutes: float = bounded(0.0, low=0)
    """Stop after this much training wall time, resumes included (0 = no limit)."""
    stop_when_perfect: bool = True
    """Stop once the network alone is perfect (where the game's evaluation can tell)."""
    log_every: int = bounded(1, low=1)
    """Iterations between progress lines and metrics.jsonl records."""
    eval_every: int = bounded(5, low=0)
    """Iterations between evaluations (0 = none counted in iterations)."""
    eval_every_minutes: float = bounded(0.0, low=0)
    """Also evaluate once this many minutes of training passed since the last evaluation
    (0 = off): a cadence that means the same at 0.2 s and at 5 s an iteration."""
    eval_search_every: int = bounded(4, low=0)
    """Evaluations between the (costlier) evaluations of network + search (0 = never)."""
    eval_simulations: int = bounded(0, low=0)
    """Search simulations per move when network + search is scored on the game's ground
    truth (0 = the training budget; games against `eval_opponents` use that budget)."""
    eval_search_with: tuple[str, ...] = ()
    """Settings of the search scored on the ground truth that differ from the training
    search, as NAME=VALUE (e.g. 'average_symmetries=true', 'gumbel_value_scale=1';
    `azjax.core.search.search_changes`); self-play keeps its own."""
    checkpoint_every: int = bounded(20, low=0)
    """Iterations between checkpoints (0 = none counted in iterations; the last iteration
    is always checkpointed)."""
    checkpoint_every_minutes: float = bounded(0.0, low=0)
    """Also checkpoint once this many minutes of training passed since the last
    checkpoint (0 = off)."""
    keep_every: int = bounded(0, low=0)
    """Keep every checkpoint whose iteration is a multiple of this, besides the newest
    three (0 = only those), e.g. for a ratings league over training."""
    eval_opponents: tuple[str, ...] = ()
    """Baselines the agent (network + search, noise off) plays at every evaluation, as
    player specs (e.g. 'random', 'mcts:100', 'alphabeta:2'); scores go to metrics.jsonl."""
    eval_games: int = bounded(64, low=1)
    """Games per baseline at each evaluation (half per seat)."""
    eval_openings: int = bounded(2, low=0)
    """Random opening plies of those games (paired across seats)."""
    gate_every: int = bounded(10, low=1)
    """Iterations between gating arenas (gating regime)."""
    gate_games: int = bounded(400, low=1)
    """Games of each gating arena, half per seat."""
    gate_threshold: float = bounded(0.55, low=0.5, high=1)
    """Score (wins + draws / 2) the latest network needs against the best to replace it."""
    gate_simulations: int = bounded(0, low=0)
    """Search simulations per move in the gating arena (0 = the training budget)."""
    gate_openings: int = bounded(2, low=0)
    """Random opening plies of the gating games (paired across seats)."""
    tensorboard: bool = False
    """Also write the metrics as TensorBoard event files into `run_dir/tensorboard`
    (needs `pip install 'azjax[tensorboard]'`)."""
    preset: Annotated[str, tyro.conf.Suppress] = ""
    """The variant of the script's recipe this config started from ('cpu' or 'gpu',
    `azjax.run.recipes`; '' for a config of no recipe), recorded in config.json."""
    devices: int = bounded(0, low=0)
    """Devices to split self-play, replay and learning over (0: all there are; a CPU is
    one host device per core under the scripts). A run resumes on as many as it was
    trained on; its config.json records the number."""

    warm_start: str = ""
    """A run directory (its newest checkpoint) or agent file whose network weights start
    this run instead of fresh ones; the optimizer, replay and counters start fresh. The
    networks must have the same parameters (across board sizes: `network.pooled_heads`).
    Read only when the run starts; a resumed run goes on from its own checkpoint."""
    warm_up: str = ""
    """A recipe to train first, with this run's network and seed, for `warm_up_minutes`,
    into RUN_DIR/warm-up; its weights then start this run (a curriculum: 'go7x7' before
    9x9 Go, with `network.pooled_heads`). Trained while the run has no checkpoint yet;
    rerunning the command resumes it. '' for none."""
    warm_up_minutes: float = bounded(0.0, low=0)
    """Training minutes of the warm-up run (`warm_up`), beside this run's `max_minutes`."""

    @property
    def evaluates(self) -> bool:
        """Whether the run evaluates at all (by iterations or by minutes)."""
        return self.eval_every > 0 or self.eval_every_minutes > 0

    def _check(self) -> None:
        """The rules beyond each field's bounds: the preset's name, a warm-up with its
        minutes and without a warm start, and the search changes read from their text
        (the player specs are checked with the game, by `TrainConfig.check_rules`: a
        kind of player may be registered by a later import)."""
        if self.preset not in ("", "cpu", "gpu"):
            raise ValueError(f"preset must be 'cpu', 'gpu' or '' (none), got {self.preset!r}")
        if self.warm_up and self.warm_start:
            raise ValueError("run.warm_up trains the run's starting weights; run.warm_start "
                             "names them: set one of the two")
        if self.warm_up and self.warm_up_minutes <= 0:
            raise ValueError("run.warm_up needs run.warm_up_minutes > 0, got "
                             f"{self.warm_up_minutes!r}")
        try:
            search_changes(self.eval_search_with)
        except ValueError as error:
            raise ValueError(f"eval_search_with: {error}") from None


@checked()
class TrainConfig:
    """Everything that defines a training run: its program, how it is run, its seed."""

    program: Annotated[ProgramConfig, tyro.conf.arg(name="")] = ProgramConfig()
    run: Annotated[RunConfig, tyro.conf.arg(name="")] = RunConfig()
    seed: int = bounded(0, low=0, high=RUN_SEED_MAX)
    """Seed of the run's PRNG key."""

    def check(self, env: envs.Env) -> None:
        """The checks that need the game (the settings were checked when the config was
        made; ValueError): `check_rules`, and whether the program fits in memory with
        the run's evaluation and gating matches beside it (`check_run_fits`). The
        driver checks a run once (`azjax.driver.preflight`).

        Args:
          env: the game.
        """
        self.check_rules(env)
        check_run_fits(self, env)

    def check_rules(self, env: envs.Env) -> None:
        """The rules that need the game, without the memory estimate: the program's
        (`ProgramConfig.check_rules`) and the player specs of `run.eval_opponents`
        (ValueError).

        Args:
          env: the game.
        """
        self.program.check_rules(env)
        for spec in self.run.eval_opponents:
            parse_spec(spec)

    def make_env(self) -> envs.Env:
        """The game of the program half."""
        return self.program.make_env()

    def replace(self, **changes: Any) -> "TrainConfig":
        """A copy with `changes`: `program=`, `run=`, `seed=`, or any field of either
        half by its name (`iterations=4`, `search=SearchConfig(...)`)."""
        halves: dict[str, dict[str, Any]] = {half: {} for half in HALVES}
        top = {}
        for name, value in changes.items():
            if name in HALVES or name == "seed":
                top[name] = value
            else:
                halves[_half_of(name)][name] = value
        config = dataclasses.replace(self, **top)
        return dataclasses.replace(config, **{
            half: dataclasses.replace(getattr(config, half), **fields)
            for half, fields in halves.items() if fields
        })

    def get(self, path: str) -> Any:
        """The setting at `path` ('search.c_puct', 'iterations', 'seed')."""
        if path == "seed":
            return self.seed
        head, *rest = path.split(".")
        value = getattr(getattr(self, _half_of(head)), head)
        for part in rest:
            if isinstance(value, dict) and head == "game_options":  # an option by its name
                return value.get(part, game_defaults(self.program.game).get(part))
            if not dataclasses.is_dataclass(value) or part not in {
                    f.name for f in dataclasses.fields(value)}:
                raise ValueError(f"unknown setting {path!r}")
            value = getattr(value, part)
        return value

    def with_value(self, path: str, value: Any) -> "TrainConfig":
        """A copy with the setting at `path` replaced."""
        return self.with_values({path: value})

    def with_values(self, values: dict[str, Any]) -> "TrainConfig":
        """A copy with the setting at each path replaced, all in one new config, so that
        settings checked together (`learn_after` and `replay_capacity`) are checked with
        their new values only.

        Args:
          values: setting path ('search.c_puct', 'iterations', 'game_options.size') ->
            its new value.

        Returns:
          The new config (ValueError, naming the setting, for an unknown path or a bad
          value).
        """
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for path, value in values.items():
            head, _, rest = path.partition(".")
            if not rest:
                top[head] = value
            elif "." in rest:
                raise ValueError(f"unknown setting {path!r}")
            else:
                nested.setdefault(head, {})[rest] = value
        for head, fields in nested.items():
            if head == "game_options":
                top[head] = {**self.program.game_options, **fields}
                continue
            part = top.get(head, self.get(head))
            names = {f.name for f in dataclasses.fields(part)} if dataclasses.is_dataclass(
                part) else set()
            unknown = sorted(set(fields) - names)
            if unknown:
                raise ValueError(f"unknown setting {head}.{unknown[0]!r}")
            top[head] = dataclasses.replace(part, **fields)
        return self.replace(**top)

    def program_differences(self, other: "TrainConfig") -> list[str]:
        """What a resumed run may not change, in words (`program_changes`).

        Args:
          other: another config.

        Returns:
          One 'path: saved X, given Y' line per setting that differs, sorted.
        """
        return [f"{path}: saved {saved!r}, given {given!r}"
                for path, (saved, given) in self.program_changes(other).items()]

    def program_changes(self, other: "TrainConfig") -> dict[str, tuple[Any, Any]]:
        """What a resumed run may not change: the settings of the program half and the
        seed in which `other` differs from this config (a game option left at its
        default and one set to it agree).

        Args:
          other: another config.

        Returns:
          By dotted path ('search.c_puct', 'game_options.size', 'seed'), sorted: this
          config's value and `other`'s.
        """
        a, b = (flatten_settings(c.to_dict()["program"]) for c in (self, other))
        if self.program.game == other.program.game:  # options equal to the defaults agree
            defaults = game_defaults(self.program.game)
            for flat, config in ((a, self), (b, other)):
                del flat["game_options"]
                flat.update({f"game_options.{k}": v for k, v in
                             {**defaults, **config.program.game_options}.items()})
        out = {path: (a.get(path), b.get(path))
               for path in sorted(set(a) | set(b)) if a.get(path) != b.get(path)}
        if self.seed != other.seed:
            out["seed"] = (self.seed, other.seed)
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready apart from tuples)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        """Inverse of `to_dict` (a setting left out takes its default).

        Args:
          data: the config as plain data.

        Returns:
          The config.

        Raises:
          ValueError: for unknown keys, or a flat config (azjax before 0.1.0 wrote one).
        """
        data = dict(data)
        if not set(HALVES) & set(data):
            raise ValueError(
                "a config without its 'program' and 'run' halves: written by azjax before "
                "0.1.0, which 0.2.0 does not read (resume the run once with azjax 0.1.0 to "
                "rewrite it; CHANGELOG.md)")
        unknown = sorted(set(data) - {"program", "run", "seed"})
        if unknown:
            raise ValueError(f"unknown config field(s) {unknown}")
        program = dict(data.get("program", {}))
        for key, kind in typing.get_type_hints(ProgramConfig).items():
            if dataclasses.is_dataclass(kind) and key in program:
                program[key] = _build(kind, program[key], key)
        run = dict(data.get("run", {}))
        for name in ("eval_opponents", "eval_search_with"):
            if name in run:
                run[name] = tuple(run[name])
        return cls(program=_build(ProgramConfig, program, "program"),
                   run=_build(RunConfig, run, "run"), seed=data.get("seed", 0))

    def save(self, path: Path) -> None:
        """Writes `config.json` (atomically: a crash leaves the old file or the new)."""
        write_atomic(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> "TrainConfig":
        """Reads `config.json` (ValueError for one that is not a config)."""
        return cls.from_dict(json.loads(Path(path).read_text()))


def setting_paths() -> dict[str, Any]:
    """Every scalar setting of a `TrainConfig` by path (without the half) -> its type."""
    out = {"seed": int}
    for half in (ProgramConfig, RunConfig):
        out.update(setting_types(half))
    return out


_FIELDS = {half: {f.name for f in dataclasses.fields(kind)}
           for half, kind in (("program", ProgramConfig), ("run", RunConfig))}


def _half_of(name: str) -> str:
    for half, names in _FIELDS.items():
        if name in names:
            return half
    raise ValueError(f"unknown setting {name!r}")


def _build(kind: type, values: dict[str, Any], where: str) -> Any:
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown} in {where}")
    return kind(**values)


def flatten_settings(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as one dict by dotted path.

    Args:
      data: a config's `to_dict()`, or one half of it ('program', 'run').
      prefix: put before every path.

    Returns:
      path -> value ('search.c_puct' -> 1.25); `game_options` stays one dict.
    """
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "game_options":
            out.update(flatten_settings(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def game_defaults(game: str) -> dict[str, Any]:
    """The default of each keyword option of `game` that has one (the signature of the
    class or factory `envs.make` calls); {} where it cannot be read (pgx games)."""
    if game.startswith(envs.PGX_PREFIX):
        return {}
    try:
        factory = envs.registry._factory(game)
        parameters = inspect.signature(factory).parameters.values()
    except (ValueError, TypeError, ImportError, AttributeError):
        return {}
    return {p.name: p.default for p in parameters
            if isinstance(p.default, (bool, int, float, str))}


def game_settings(env: envs.Env) -> dict[str, Any]:
    """`{"game": ..., "game_options": ...}` that make a config name `env` so that
    `envs.make` builds it again (`envs.registry.portable_spec`).

    Raises:
      ValueError: where the recorded name would build another game (say, an env changed
        after it was built).
    """
    game, options = envs.registry.portable_spec(env)
    try:
        rebuilt = envs.make(game, **options)
    except ValueError:
        rebuilt = None  # a game that only this process can build: load it with env=
    if rebuilt is not None and (rebuilt.name, rebuilt.num_actions, rebuilt.observation_shape
                                ) != (env.name, env.num_actions, env.observation_shape):
        raise ValueError(
            f"envs.make({game!r}, **{options}) builds another game than the env given "
            f"({rebuilt.name}, {rebuilt.num_actions} actions, observations "
            f"{rebuilt.observation_shape} instead of {env.name}, {env.num_actions}, "
            f"{env.observation_shape}); build the env with envs.make")
    return {"game": game, "game_options": options}


def run_parts(config: TrainConfig, env: Env) -> dict[str, int]:
    """`program_parts` and the largest match a run plays beside its training state: the
    evaluation games (network + search) or the gating arena."""
    program, run = config.program, config.run
    parts = program_parts(program, env)
    matches = {}
    if run.evaluates and (run.eval_search_every or run.eval_opponents):
        matches["evaluation games"] = memory.arena_bytes(
            env, run.eval_games, program.search.num_simulations)
    if program.regime == "gating":
        matches["gating arena"] = memory.arena_bytes(
            env, run.gate_games, run.gate_simulations or program.search.num_simulations)
    if matches:
        name = max(matches, key=matches.get)
        parts[name] = matches[name]
    return parts


def check_run_fits(config: TrainConfig, env: Env, experiments: int = 1) -> None:
    """`check_program_fits` with the run's evaluation and gating matches (`run_parts`)."""
    memory.check_parts("this training run", run_parts(config, env), experiments)


COMMAND_SEED_MAX = 2**63 - 1
"""The largest seed of a command that plays (arena, league, play, serve, gtp): JAX keys
take a signed 64-bit seed, NumPy's generators no negative one."""


def check_seed(seed: int, what: str = "--seed") -> int:
    """`seed`, or a ValueError when it is not an integer from 0 to `COMMAND_SEED_MAX`."""
    if (isinstance(seed, bool) or not isinstance(seed, int)
            or not 0 <= seed <= COMMAND_SEED_MAX):
        raise ValueError(f"{what} must be an integer from 0 to {COMMAND_SEED_MAX}, "
                         f"got {seed!r}")
    return seed
