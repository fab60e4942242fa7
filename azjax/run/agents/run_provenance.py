"""The provenance of a run's checkpoint (`run_provenance`), as `azjax export` writes it
into the agent file: what the run directory records, and what the exporting code knows.

The budget (iterations, games, positions, wall time) is the run's own (metrics.jsonl).
The version, commit and command are those the training processes recorded in
provenance.jsonl as each started or resumed the run (`azjax.run.directory.process_record`): of
the processes whose training the checkpoint holds (`trained_by`), all of them in order,
with the iteration each started from, where there were several. A run from before azjax
kept provenance.jsonl has no such record: then the command is rebuilt from config.json
(`training_command`: the canonical `azjax train RECIPE ...` that trains that config),
and the version and commit are those of the code exporting it (`installed_version`,
`code_commit`); the notes of the provenance say which it is.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from azjax.core.program import ProgramConfig
from azjax.run.agents.provenance import NOT_RECORDED, Provenance
from azjax.run.config import TrainConfig, flatten_settings, game_defaults
from azjax.run.directory.process_record import git_commit, installed_version
from azjax.run.directory.run_dir import RunDir
from azjax.run.metric_schema import GAMES, ITERATION, POSITIONS, WALL_TIME
from azjax.run.recipes import PRESETS, RECIPES, recipe

UNKNOWN = "unknown"
"""The commit where the code is not a git checkout (an installed wheel)."""


def code_commit() -> str:
    """The git commit of the code running now, in words.

    Returns:
      HEAD's full hash, followed by ' with uncommitted changes' where tracked files
      differ from it; `UNKNOWN` where this code is not a git checkout's or git cannot
      tell (`azjax.run.directory.process_record.git_commit`).
    """
    return _commit_text(*git_commit())


def _commit_text(commit: Any, dirty: Any) -> str:
    if not isinstance(commit, str) or not commit:
        return UNKNOWN
    return f"{commit} with uncommitted changes" if dirty is True else commit


def game_text(program: ProgramConfig) -> str:
    """A program's game with its options.

    Args:
      program: the program config.

    Returns:
      e.g. 'connect_four', 'go (size=7, komi=9.0, history=4)'.
    """
    options = ", ".join(f"{k}={v}" for k, v in program.game_options.items())
    return f"{program.game} ({options})" if options else program.game


def _flat(config: TrainConfig) -> dict[str, Any]:
    """Every setting of `config` by its flag's path ('search.c_puct', 'iterations',
    'seed'), game options apart (with the game's defaults filled in)."""
    data = config.to_dict()
    out: dict[str, Any] = {"seed": config.seed, **flatten_settings(data["program"]),
                           **flatten_settings(data["run"])}
    out["game_options"] = {**game_defaults(config.program.game), **out["game_options"]}
    return out


def _flag(path: str, value: Any) -> list[str]:
    """The words that set `path` to `value` on `azjax train`'s command line (tyro's
    spelling: dashes within names, `--no-X` and `--head.no-X` for false)."""
    head, dot, last = path.replace("_", "-").rpartition(".")
    if isinstance(value, bool):
        return [f"--{head}{dot}{'' if value else 'no-'}{last}"]
    name = f"--{head}{dot}{last}"
    if isinstance(value, (list, tuple)):
        return [name, *(shlex.quote(str(v)) for v in value)]
    return [name, shlex.quote(str(value))]


def _differences(config: TrainConfig, base: TrainConfig) -> list[str]:
    """The flags that turn `base` into `config` (game and preset apart)."""
    ours, theirs = _flat(config), _flat(base)
    words = []
    options = [f"{k}={v}" for k, v in sorted(ours["game_options"].items())
               if theirs["game_options"].get(k) != v]
    if options:
        words += ["--game-options", *map(shlex.quote, options)]
    skip = {"game", "game_options", "preset"}
    changed = {p for p in ours if p not in skip and ours[p] != theirs.get(p)}
    # A --max-minutes alone is shared with a warm-up in its recipe's ratio; naming the
    # warm-up's minutes too keeps each part's own.
    if config.run.warm_up and changed & {"max_minutes", "warm_up_minutes"}:
        changed |= {"max_minutes", "warm_up_minutes"}
    for path in sorted(changed):
        words += _flag(path, ours[path])
    return words


def training_command(config: TrainConfig, run_dir: str | Path) -> str:
    """The canonical command that trains `config` into `run_dir`: the recipe of its game
    whose variant differs least from it, then the settings that differ.

    Args:
      config: a run's config (its config.json).
      run_dir: its directory.

    Returns:
      `azjax train RECIPE --preset P --run-dir DIR [--setting VALUE ...]`, or for a
      game of no recipe `azjax train GAME --run-dir DIR ...` over plain defaults.
    """
    preset, game = config.run.preset, config.program.game
    names = [n for n in RECIPES if RECIPES[n].program.game == game] if preset in PRESETS else []
    if names:
        name = min(names, key=lambda n: len(_differences(config, recipe(n, preset))))
        words, base = [name, "--preset", preset], recipe(name, preset)
    else:
        words, base = [game], TrainConfig(program=ProgramConfig(game=game))
    words += ["--run-dir", str(run_dir)]
    return " ".join(["azjax", "train", *map(shlex.quote, words), *_differences(config, base)])


def _count(record: dict[str, Any], name: str) -> int | None:
    value = record.get(name)
    return int(value) if isinstance(value, (int, float)) else None


def trained_by(records: Sequence[dict[str, Any]], step: int | None) -> list[dict[str, Any]]:
    """The training processes whose work a checkpoint holds.

    Each process trained from the iteration it started from up to the next process's
    start, or further: a process that resumed from an older checkpoint (a newer one was
    damaged, or never written) redid what the processes since had trained, and a
    process that started at `step` or later trained nothing of it. So, from the newest,
    each one kept started before the one after it.

    Args:
      records: provenance.jsonl's records, oldest first (`RunDir.read_provenance`).
      step: the checkpoint's iteration (None: the newest).

    Returns:
      Their records, oldest first; [] where none started before `step`.
    """
    kept: list[dict[str, Any]] = []
    bound = step
    for record in reversed(records):
        if bound is None or record["iteration"] < bound:
            kept.append(record)
            bound = record["iteration"]
    return kept[::-1]


def _in_order(facts: list[tuple[int, str]], merge: bool) -> str:
    """Facts of the processes that trained a run, in words: the one fact, else each
    with the iteration its process started from ('A (from iteration 0); B (from
    iteration 40)'); `merge`: a fact that a process shares with the one before it is
    said once."""
    if merge:
        facts = [f for i, f in enumerate(facts) if i == 0 or f[1] != facts[i - 1][1]]
    if len(facts) == 1:
        return facts[0][1]
    return "; ".join(f"{fact} (from iteration {start})" for start, fact in facts)


def _text(record: dict[str, Any], name: str) -> str:
    value = record.get(name)
    return value if isinstance(value, str) and value else NOT_RECORDED


def _machine(record: dict[str, Any]) -> str:
    devices, kind = record.get("devices"), _text(record, "device_kind")
    backend = _text(record, "backend")
    on = f"{devices} x {kind}" if isinstance(devices, int) else kind
    return f"{on} ({backend}), host processor {_text(record, 'processor')}"


def _recorded(processes: list[dict[str, Any]]
              ) -> tuple[dict[str, str | None], list[str]]:
    """The version, commit and command of the processes that trained a checkpoint (by
    the field of `Provenance` they go to), and the notes that say what they rest on."""
    starts = [p["iteration"] for p in processes]
    facts = {
        "azjax_version": [_text(p, "azjax_version") for p in processes],
        "commit": [_commit_text(p.get("commit"), p.get("dirty")) for p in processes],
        "command": [_text(p, "command") for p in processes],
    }
    machines = [_machine(p) for p in processes]
    who = ("the training process" if len(processes) == 1 else
           f"the {len(processes)} training processes")
    notes = [f"version, commit and command as {who} recorded them on starting "
             "(provenance.jsonl)"]
    if starts[0] > 0:  # the first iterations' processes wrote no record
        starts.insert(0, 0)
        for values in (*facts.values(), machines):
            values.insert(0, NOT_RECORDED)
        notes.append(f"the iterations up to {starts[1]} were trained by processes that "
                     "recorded nothing in provenance.jsonl (an azjax from before it)")
    notes.append("trained on " + _in_order(list(zip(starts, machines)), merge=True))
    # A command is said each time, so that the reader sees where the run resumed.
    said = {name: _in_order(list(zip(starts, values)), merge=name != "command")
            for name, values in facts.items()}
    return {name: None if text == NOT_RECORDED else text  # a fact nobody recorded: None
            for name, text in said.items()}, notes


def _rebuilt(run: RunDir, step: int | None, config: TrainConfig
             ) -> tuple[dict[str, str | None], list[str]]:
    """The version, commit and command of a run whose provenance.jsonl records none of
    the processes that trained a checkpoint: this code's, and the command rebuilt from
    its config; and the notes that say so."""
    up_to = "" if step is None else f" up to iteration {step}"
    why = (f"its provenance.jsonl records no process that trained it{up_to}"
           if run.provenance_file.is_file() else
           "the run directory has no provenance.jsonl (a run from before azjax recorded "
           "the code and commands that trained it)")
    facts = {"azjax_version": installed_version(), "commit": code_commit(),
             "command": training_command(config, run.path)}
    return facts, [f"version and commit are the exporting code's, and the command was "
                   f"rebuilt from config.json: {why}"]


def run_provenance(run: RunDir, step: int | None, config: TrainConfig) -> Provenance:
    """The provenance of a run's checkpoint, not yet exported.

    Args:
      run: the run directory.
      step: the checkpoint's iteration (None: the newest the metrics record).
      config: the run's config.

    Returns:
      The provenance: the budget from the newest metrics record at or before `step`;
      the version, commit and command its training processes recorded (`trained_by`),
      or for a run of no such record this code's version and commit and the command
      rebuilt from `config`; `exported` None (`Agent.export` dates it).
    """
    records = [r for r in run.metrics.read()
               if step is None or _count(r, ITERATION.name) is not None
               and _count(r, ITERATION.name) <= step]
    record = records[-1] if records else {}
    logged = _count(record, ITERATION.name)
    iterations = step if step is not None else logged
    wall = record.get(WALL_TIME.name)
    processes = trained_by(run.read_provenance(), iterations)
    facts, notes = (_recorded(processes) if processes else
                    _rebuilt(run, iterations, config))
    if not record:
        notes.append("metrics.jsonl holds no record of it: games, positions and wall time "
                     "not recorded")
    elif logged != iterations:
        notes.append(f"games, positions and wall time as of iteration {logged}, the last "
                     "one metrics.jsonl records before it")
    if config.run.warm_up or config.run.warm_start:
        notes.append("its first weights came from another run (warm-up or warm start), "
                     "whose budget is not counted here")
    return Provenance(
        **facts, game=game_text(config.program),
        preset=config.run.preset, iterations=iterations,
        games=_count(record, GAMES.name), positions=_count(record, POSITIONS.name),
        wall_minutes=wall / 60 if isinstance(wall, (int, float)) else None,
        notes=tuple(notes))
