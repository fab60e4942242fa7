"""Players named by short strings, for the command line and the league: `make_player`.

Importing this module registers every player kind azjax ships (`azjax.run.grammar.specs` holds
the registry and the grammar): the baselines from their own modules
(`azjax.evaluation.baselines`, `azjax.evaluation.alphabeta`, `azjax.go.gnugo_kind`), and
here the kinds of a trained run's agent (`network`, `alphazero`, `alphago`). The table
below is built from the registry (`azjax.run.grammar.specs.players_help`); the arena prints it.

DIR is a training run directory, an agent file written by `python -m azjax.export`
(`alphazero:agent.azjax`), or the name of an agent that ships with azjax
(`alphazero:go7x7`; `azjax.run.agents.shipped_agents`); S picks one of a run's checkpoints
(newest by default).
"""

from __future__ import annotations

from pathlib import Path

from azjax.core.players import AgentParams, Player
from azjax.evaluation import alphabeta as _alphabeta  # noqa: F401 - registers `alphabeta`
from azjax.evaluation import baselines as _baselines  # noqa: F401 - registers its kinds
from azjax.go import gnugo_kind as _gnugo_kind  # noqa: F401 - registers `gnugo`
from azjax.run.agents.agent import Agent
from azjax.run.agents.shipped_agents import resolve
from azjax.run.directory.run_dir import RunDir
from azjax.run.grammar.specs import (
    RUN_KINDS,
    PlayerKind,
    PlayerSpec,
    choice,
    number,
    parse_spec,
    player_kind,
    players_help,
    register_player,
)
from envs import Env, spec_of


def run_dir_of(text: str) -> Path | None:
    """The run directory (or agent file) a spec refers to, if any.

    Args:
      text: the spec.

    Returns:
      Its path for a run kind (`RUN_KINDS`), a shipped agent's name turned into its
      file's (`azjax.run.agents.shipped_agents.resolve`), else None.
    """
    spec = parse_spec(text)
    return resolve(spec.arg) if spec.kind in RUN_KINDS else None


def game_of(texts: list[str]) -> Env | None:
    """The game of the first spec naming a run directory or an agent file (None if none
    does)."""
    for text in texts:
        run_dir = run_dir_of(text)
        if run_dir is not None and (run_dir.is_file() or not run_dir.exists()):
            # an agent file (its config is inside it), or nothing: Agent.load's error
            return Agent.load(run_dir).env
        if run_dir is not None:
            return RunDir(run_dir).load_config().make_env()
    return None


def fits_any_board(agent: Agent, env: Env) -> bool:
    """Whether `agent`'s network runs on `env`'s board though it was trained on another:
    the same game, the same observation planes, and weights that fit every board size
    (`network.pooled_heads`), e.g. a 7x7 Go agent playing 9x9."""
    return (agent.program.network.pooled_heads and agent.env.name == env.name
            and agent.env.observation_shape[-1:] == env.observation_shape[-1:]
            and len(agent.env.observation_shape) == len(env.observation_shape) == 3)


def _described(env: Env) -> str:
    game, options = spec_of(env)
    return repr(game) + (f" ({', '.join(f'{k}={v}' for k, v in options.items())})"
                         if options else "")


def _run_player(spec: PlayerSpec, env: Env, name: str) -> Player:
    step, greedy = spec.values.get("step"), spec.values.get("greedy", True)
    agent = Agent.load(spec.arg, step=step)
    if agent.env.name != env.name or agent.env.num_actions != env.num_actions:
        if not fits_any_board(agent, env):
            raise ValueError(f"player {spec.text!r} was trained on {_described(agent.env)}, "
                             f"not on {_described(env)}")
        agent = Agent.load(spec.arg, step=step, env=env)  # its weights, on this board
    if spec.kind == "network":
        return agent.player("network", name, greedy)
    fields = {"sims": "num_simulations", "policy": "policy", "utility": "score_utility",
              "futile": "skip_futile", "lambda": "rollout_lambda", "tree": "reuse_tree"}
    changes = {fields[key]: value for key, value in spec.values.items() if key in fields}
    return agent.with_search(**changes).player("alphazero", name, greedy)


def _needs_lambda(spec: PlayerSpec) -> None:
    if "lambda" not in spec.values:
        raise ValueError("alphago needs lambda=L")


_NETWORK = {"step": number("step", int),
            "greedy": choice("greedy", {"true": True, "false": False})}
_SEARCH = {**_NETWORK, "sims": number("sims", int), "policy": str,
           "utility": number("utility"),
           "futile": choice("futile", {"skip": True, "keep": False}),
           "tree": choice("tree", {"keep": True, "fresh": False})}
register_player(PlayerKind(
    "network", "network:DIR[,step=S][,greedy=false]",
    "a trained run's policy head alone (argmax, or sampled)", _run_player, arg=str,
    options=_NETWORK))
register_player(PlayerKind(
    "alphazero", "alphazero:DIR[,sims=N][,step=S][,policy=puct|gumbel][,utility=U]"
    "[,futile=skip|keep][,tree=keep|fresh][,greedy=false]",
    "a trained run's network + search (noise off and the search's choice, or noise on and "
    "sampled from its policy); U: weight of the score head's margin in the search's values "
    "(`search.score_utility`); futile: leave the game's futile moves out of the search or "
    "not (`search.skip_futile`); tree: start each search from the subtree its last search "
    "kept, or afresh (`search.reuse_tree`)", _run_player, arg=str, options=_SEARCH))
register_player(PlayerKind(
    "alphago", "alphago:DIR,lambda=L[,sims=N][,step=S][,policy=...]",
    "as alphazero, with AlphaGo's leaf mix L (value = (1 - L) * network + L * rollout)",
    _run_player, arg=str,
    options={**_SEARCH, "lambda": number("lambda")}, check=_needs_lambda))


def make_player(text: str, env: Env, name: str | None = None) -> Player:
    """The player a spec string names, built by its registered kind.

    Args:
      text: the spec, e.g. `mcts:100,c=2` (`azjax.run.grammar.specs.parse_spec`).
      env: the game it plays.
      name: the player's name (default: the spec's text).

    Returns:
      The `Player`.

    Raises:
      ValueError: one line with the reason: a bad spec, or one its kind cannot build for
        `env`.
    """
    spec = parse_spec(text)
    return player_kind(spec.kind).build(spec, env, name or spec.text)


def search_simulations(spec: str | None, player: Player) -> int:
    """Simulations per move of a searching player: network + search, or a kind that
    states them (`PlayerKind.simulations`, e.g. `mcts:N`).

    Args:
      spec: the player's spec string, if it has one.
      player: the player.

    Returns:
      The simulations per move, 0 for a player that does not search.
    """
    if isinstance(player.params, AgentParams):
        return int(player.params.search.num_simulations)
    parsed = None if spec is None else parse_spec(spec)
    simulations = None if parsed is None else player_kind(parsed.kind).simulations
    return 0 if simulations is None else int(simulations(parsed))


# The arena's help prints this docstring after its first paragraph: the table comes from
# the registry, so that each kind's help is written once, by the module that defines it.
__doc__ = f"{__doc__.rstrip()}\n\n{players_help()}\n"
