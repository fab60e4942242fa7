"""Play a trained agent in the terminal: `python -m azjax.play GAME --run-dir DIR` (or
`--agent FILE`, an agent exported with `python -m azjax.export`; `--run-dir` takes one too),
or `azjax play --agent NAME` for an agent that ships with azjax (`tictactoe`,
`connect_four`, `go7x7`; the game, when left out, is the agent's).

The human picks a side, types moves in the game's notation (`env.parse_move`), and the
board is drawn after every move. At the prompt, besides a move: `help` (notation, legal
moves), `hint` (the agent's choice for your position), `eval` (show or hide the agent's
evaluation and search visits), `board`, `quit`. `play_game` plays one game with any
`read`/`write` pair (a notebook can call it); `main` is the command line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NamedTuple

import chex
import jax
import numpy as np

from azjax.commands.errors import one_line_errors, run_script
from azjax.core.identity import cache_by_identity
from azjax.run.agents.agent import Agent
from azjax.run.agents.agent_source import REUSE_TREE_HELP, check_source, load_agent
from azjax.run.agents.shipped_agents import AGENT_HELP
from azjax.run.config import check_seed
from azjax.run.grammar.game_options import GAME_OPTIONS_FLAG, GAME_OPTIONS_HELP, split_game_options
from envs import Env, State

SIDES = ("first", "second", "random")
COMMANDS = ("commands: help, hint (the agent's choice for you), eval (show/hide the agent's "
            "evaluation in this game), board, quit")
QUIT = ("quit", "exit", "q")


class Quit(Exception):
    """The human ended the session (`quit` typed, or end of input)."""


class RootSearch(NamedTuple):
    """The agent's search from one position; values are from the mover's point of view."""

    action: int  # the search's greedy choice: the move the agent plays
    visits: np.ndarray  # int [A] root visit counts
    value: float  # the search's value of the position, in [-1, 1]
    network_value: float  # the network's value of the position, in [-1, 1]


@cache_by_identity(maxsize=8)
def _compiled_rules(env: Env):
    return jax.jit(env.init), jax.jit(env.step)


def search_root(agent: Agent, state: State, key: chex.PRNGKey) -> RootSearch:
    """The agent's greedy search (root noise off, as `agent.act`) on one unbatched live
    state: its move, the root visit counts and the search and network values."""
    batched = jax.tree.map(lambda x: x[None], state)
    found = jax.device_get(agent.analyse(batched, key))
    return RootSearch(int(found.action[0]), np.asarray(found.visits[0]).astype(np.int64),
                      float(found.value[0]), float(found.network_value[0]))


def _describe(env: Env, root: RootSearch, top: int = 5) -> str:
    order = np.argsort(-root.visits, kind="stable")[:top]
    moves = ", ".join(f"{env.format_move(a)} {root.visits[a]}" for a in order if root.visits[a])
    return (f"network value {root.network_value:+.2f}, search value {root.value:+.2f} "
            f"(-1 loss .. +1 win); search visits: {moves}")


def _legal_moves(env: Env, state: State) -> str:
    legal = np.flatnonzero(np.asarray(jax.device_get(state.legal_action_mask)))
    return " ".join(env.format_move(a) for a in legal)


def _ask(read: Callable[[str], str], prompt: str) -> str:
    try:
        return read(prompt).strip()
    except EOFError:
        raise Quit("end of input") from None


def _human_move(agent: Agent, state: State, read, write, key: chex.PRNGKey, show: dict) -> int:
    """Reads lines until one is a legal move (commands are carried out on the way)."""
    env = agent.env
    while True:
        text = _ask(read, "Your move: ")
        command = text.lower()
        if not command:
            continue
        if command in QUIT:
            raise Quit("you quit")
        if command in ("help", "?"):
            write(f"Moves: {env.move_notation}.")
            write(f"Legal moves: {_legal_moves(env, state)}")
            write(COMMANDS)
        elif command == "hint":
            root = search_root(agent, state, key)
            write(f"Hint: the agent would play {env.format_move(root.action)}. "
                  f"Your view: {_describe(env, root)}")
        elif command == "eval":
            show["eval"] = not show["eval"]
            write(f"agent evaluation {'shown' if show['eval'] else 'hidden'}")
        elif command == "board":
            write(env.render(state))
        else:
            try:
                action = env.parse_move(text)
            except ValueError as err:
                write(f"unreadable move: {err}; type 'help' for the notation")
                continue
            if bool(state.legal_action_mask[action]):
                return action
            write(f"illegal move: {env.format_move(action)} is not legal here; "
                  "type 'help' for the legal moves")


def play_game(agent: Agent, human: int, read: Callable[[str], str] = input,
              write: Callable[[str], None] = print, show_eval: bool = False,
              key: chex.PRNGKey | None = None) -> float:
    """Plays one game of the human (seat `human`: 0 moves first, 1 second) against the
    agent's greedy search; returns the human's result: +1 win, 0 draw, -1 loss.

    `read(prompt)` returns a typed line (EOFError ends the game), `write(text)` shows
    text. `key` is split into the start of the game (a pgx game may draw which player
    id moves first) and the agent's searches. Raises Quit on `quit` or end of input.
    """
    env = agent.env
    init, step = _compiled_rules(env)
    init_key, key = jax.random.split(jax.random.key(0) if key is None else key)
    state = init(init_key)
    me = int(state.current_player) if human == 0 else 1 - int(state.current_player)
    mark = f" ({env.player_marks[me]})" if env.player_marks else ""
    write(f"{env.name}: you move {SIDES[human]}{mark}. Type 'help' for the notation and commands.")
    write(env.render(state))
    show = {"eval": show_eval}
    while not bool(state.terminated):
        move_key = jax.random.fold_in(key, int(state.step_count))
        if int(state.current_player) == me:
            action = _human_move(agent, state, read, write, move_key, show)
            write(f"You play {env.format_move(action)}")
        else:
            root = search_root(agent, state, move_key)
            action = root.action
            if show["eval"]:
                write(f"Agent's view: {_describe(env, root)}")
            write(f"The agent plays {env.format_move(action)}")
        state = step(state, action)
        write(env.render(state))
    result_text = env.result_text(state)
    if result_text:
        write(result_text)
    result = float(np.sign(np.asarray(state.rewards)[me]))
    write({1.0: "You win!", 0.0: "Draw.", -1.0: "The agent wins."}[result])
    return result


def _ask_side(read, write, default: str) -> str:
    while True:
        answer = _ask(read, f"Move first, second or random? [f/s/r, default {default}]: ").lower()
        if answer in QUIT:
            raise Quit("you quit")
        choice = default if not answer else next((s for s in SIDES if s.startswith(answer)), None)
        if choice:
            return choice
        write(f"please answer first, second or random, not {answer!r}")


def _ask_again(read, write) -> bool:
    while True:
        answer = _ask(read, "Play again? [y/n]: ").lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("n", "no", *QUIT):
            return False
        write("please answer y or n")


def session(agent: Agent, side: str | None = None, seed: int = 0, show_eval: bool = False,
            read: Callable[[str], str] = input, write: Callable[[str], None] = print
            ) -> list[float]:
    """Games until the human declines another (or quits); returns the human's results.

    `side` ('first', 'second', 'random') is asked at the prompt when None, and again,
    with the last choice as default, before each further game.
    """
    rng = np.random.default_rng(seed)
    results: list[float] = []
    try:
        while True:
            if side is None or results:
                side = _ask_side(read, write, side or "first")
            human = int(rng.integers(2)) if side == "random" else SIDES.index(side)
            key = jax.random.fold_in(jax.random.key(seed), len(results))
            results.append(play_game(agent, human, read, write, show_eval, key))
            wins, losses = results.count(1.0), results.count(-1.0)
            write(f"Score: {wins} won, {len(results) - wins - losses} drawn, {losses} lost")
            if not _ask_again(read, write):
                return results
    except Quit as err:
        write(f"\n{err}; goodbye.")
        return results


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """`python -m azjax.play [GAME] (--run-dir DIR | --agent FILE|NAME) [--side S]
    [--show-eval] [--simulations N] [--reuse-tree] [--seed S]` (GAME, when left out, is
    the agent's); returns the exit status (2, with one `error:` line, for a bad argument,
    run or file)."""
    parser = argparse.ArgumentParser(
        prog="python -m azjax.play",
        description="Play a trained agent in the terminal. " + COMMANDS.capitalize() + ".",
    )
    parser.add_argument("game", nargs="?",
                        help="the agent's game, e.g. tictactoe, go, pgx:othello, or the "
                        "import path of a game of your own, e.g. hex_game:Hex (default: "
                        "the agent's own, read from it)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-dir", help="a training run directory (newest checkpoint) "
                        "or an agent file")
    source.add_argument("--agent", metavar="FILE|NAME", help=AGENT_HELP)
    parser.add_argument(GAME_OPTIONS_FLAG, nargs="+", metavar="KEY=VALUE",
                        help=GAME_OPTIONS_HELP + " (checked against the agent's game)")
    parser.add_argument("--side", choices=SIDES, help="your side (default: asked)")
    parser.add_argument("--simulations", type=int, help="search simulations per agent move")
    parser.add_argument("--reuse-tree", action="store_true", help=REUSE_TREE_HELP)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-eval", action="store_true",
                        help="show the agent's evaluation and search visits after its moves")
    argv, options = split_game_options(sys.argv[1:] if argv is None else list(argv),
                                       words=True)
    args = parser.parse_args(argv)
    check_seed(args.seed)
    check_source(args.run_dir, args.agent)
    if options and args.game is None:
        raise ValueError(f"{GAME_OPTIONS_FLAG} needs the GAME they are options of")
    agent = load_agent(args.game, args.run_dir or args.agent, args.simulations, options,
                       args.reuse_tree)
    try:
        session(agent, args.side, args.seed, args.show_eval)
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    return 0


if __name__ == "__main__":
    run_script(main)
