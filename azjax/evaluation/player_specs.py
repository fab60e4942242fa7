"""Players named by short strings, for the command line and the league.

Grammar: `kind[:arg][,key=value ...]`:

| spec | player |
| --- | --- |
| `random` | uniform over legal moves |
| `solver` | exact solution (tic-tac-toe, coin splitting) |
| `mcts:N[,c=C]` | pure MCTS with random rollouts, N simulations, UCB1 constant C |
| `alphabeta:D[,eval=lines\\|zero]` | minimax with alpha-beta pruning to depth D (host) |
| `gnugo:LEVEL[,seed=S][,timeout=T]` | GNU Go at level 0-10 (Go only; host; needs the `gnugo` program, or `$AZJAX_GNUGO`; T: seconds to wait for a move, default 120) |
| `network:DIR[,step=S][,greedy=false]` | a trained run's policy head alone (argmax, or sampled) |
| `alphazero:DIR[,sims=N][,step=S][,policy=puct\\|gumbel][,utility=U][,futile=skip\\|keep][,greedy=false]` | a trained run's network + search (noise off and the search's choice, or noise on and sampled from its policy); U: weight of the score head's margin in the search's values (`search.score_utility`); futile: leave the game's futile moves out of the search or not (`search.skip_futile`) |
| `alphago:DIR,lambda=L[,sims=N][,step=S][,policy=...]` | the same with AlphaGo leaf mix L |

DIR is a training run directory, or an agent file written by `python -m azjax.export`
(`alphazero:agent.azjax`); S picks one of a run's checkpoints (newest by default).
"""

from __future__ import annotations

from pathlib import Path

from azjax.core.players import AgentParams, Player
from azjax.evaluation.alphabeta import alphabeta_player, line_count_eval, zero_eval
from azjax.evaluation.baselines import random_player, rollout_mcts_player, solver_player
from azjax.go.gnugo import gnugo_player
from azjax.run import checkpoint as ckpt
from azjax.run.agent import Agent
from azjax.run.specs import RUN_KINDS, PlayerSpec, parse_spec
from envs import Env, spec_of


def _number(spec: PlayerSpec, value: str, cast, what: str):
    try:
        return cast(value)
    except ValueError:
        raise ValueError(f"player {spec.text!r}: {what} must be a number, got {value!r}") from None


def _check_options(spec: PlayerSpec, allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(spec.options) - set(allowed))
    if unknown:
        raise ValueError(
            f"player {spec.text!r}: unknown option(s) {unknown}; '{spec.kind}' takes "
            f"{list(allowed) or 'none'}"
        )


def run_dir_of(text: str) -> Path | None:
    """The run directory a spec refers to, if any."""
    spec = parse_spec(text)
    return Path(spec.arg) if spec.kind in RUN_KINDS else None


def game_of(texts: list[str]) -> Env | None:
    """The game of the first spec naming a run directory or an agent file (None if none
    does)."""
    for text in texts:
        run_dir = run_dir_of(text)
        if run_dir is not None and run_dir.is_file():
            return Agent.load(run_dir).env  # an agent file: its config is inside it
        if run_dir is not None:
            return ckpt.load_config(run_dir).make_env()
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
    search = ("sims", "step", "policy", "utility", "futile", "greedy")
    allowed = {"network": ("step", "greedy"), "alphazero": search,
               "alphago": ("lambda", *search)}[spec.kind]
    _check_options(spec, allowed)
    greedy = spec.options.get("greedy", "true").lower()
    if greedy not in ("true", "false"):
        raise ValueError(f"player {spec.text!r}: greedy must be true or false, got {greedy!r}")
    greedy = greedy == "true"
    step = spec.options.get("step")
    step = None if step is None else _number(spec, step, int, "step")
    agent = Agent.load(spec.arg, step=step)
    if agent.env.name != env.name or agent.env.num_actions != env.num_actions:
        if not fits_any_board(agent, env):
            raise ValueError(f"player {spec.text!r} was trained on {_described(agent.env)}, "
                             f"not on {_described(env)}")
        agent = Agent.load(spec.arg, step=step, env=env)  # its weights, on this board
    if spec.kind == "network":
        return agent.player("network", name, greedy)
    changes = {}
    if "sims" in spec.options:
        changes["num_simulations"] = _number(spec, spec.options["sims"], int, "sims")
    if "policy" in spec.options:
        changes["policy"] = spec.options["policy"]
    if "utility" in spec.options:
        changes["score_utility"] = _number(spec, spec.options["utility"], float, "utility")
    if "futile" in spec.options:
        futile = spec.options["futile"].lower()
        if futile not in ("skip", "keep"):
            raise ValueError(f"player {spec.text!r}: futile must be skip or keep, got "
                             f"{futile!r}")
        changes["skip_futile"] = futile == "skip"
    if spec.kind == "alphago":
        if "lambda" not in spec.options:
            raise ValueError(f"player {spec.text!r}: alphago needs lambda=L")
        changes["rollout_lambda"] = _number(spec, spec.options["lambda"], float, "lambda")
    return agent.with_search(**changes).player("alphazero", name, greedy)


def make_player(text: str, env: Env, name: str | None = None) -> Player:
    """The player a spec string names, for `env` (ValueError with the reason otherwise)."""
    spec = parse_spec(text)
    name = name or spec.text
    if spec.kind == "random":
        _check_options(spec, ())
        return random_player(name)
    if spec.kind == "solver":
        _check_options(spec, ())
        return solver_player(env, name)
    if spec.kind == "mcts":
        _check_options(spec, ("c",))
        sims = _number(spec, spec.arg, int, "the simulation count")
        c = _number(spec, spec.options.get("c", "1.4142135623730951"), float, "c")
        return rollout_mcts_player(env, sims, c, name)
    if spec.kind == "alphabeta":
        _check_options(spec, ("eval",))
        depth = _number(spec, spec.arg, int, "the depth")
        evals = {"lines": lambda: line_count_eval(env), "zero": lambda: zero_eval}
        choice = spec.options.get("eval")
        if choice is not None and choice not in evals:
            raise ValueError(f"player {spec.text!r}: eval must be 'lines' or 'zero'")
        eval_fn = evals[choice]() if choice else None
        return alphabeta_player(env, depth, eval_fn=eval_fn, name=name)
    if spec.kind == "gnugo":
        _check_options(spec, ("seed", "timeout"))
        seed = _number(spec, spec.options.get("seed", "0"), int, "seed")
        if not 0 <= seed < 2**31:
            raise ValueError(f"player {spec.text!r}: seed must be from 0 to {2**31 - 1}")
        timeout = _number(spec, spec.options.get("timeout", "120"), float, "timeout")
        if not 0 < timeout < float("inf"):
            raise ValueError(f"player {spec.text!r}: timeout must be a positive number")
        return gnugo_player(env, int(spec.arg), seed, name, timeout=timeout)
    return _run_player(spec, env, name)


def search_simulations(spec: str | None, player: Player) -> int:
    """Simulations per move of a searching player (network + search, or `mcts:N`), 0
    for one that does not search; `spec` is the player's spec string, if it has one."""
    if isinstance(player.params, AgentParams):
        return int(player.params.search.num_simulations)
    parsed = None if spec is None else parse_spec(spec)
    return int(parsed.arg) if parsed is not None and parsed.kind == "mcts" else 0
