"""The games a browser plays against an agent (`python -m azjax.serve`), kept apart from
HTTP: `GameTable` holds a bounded number of games by id, checks every request against
the game it names, plays the agent's replies, and describes a game as a `dict` of plain
values (its pictures as SVG text) that the page shows.

A request the table refuses raises `GameError`, whose text is meant for the person at the
page; nothing a request holds can change a game except a legal move of the human's side
at the ply the page last saw.
"""

from __future__ import annotations

import collections
import dataclasses
import secrets
import threading
from typing import Any

import jax
import numpy as np

from azjax.run.agents.agent import Agent
from azjax.run.browser.analysis_board import analyse_position, analysis_picture
from envs import State
from envs.picture import Picture

SIDES = ("first", "second", "random")
MAX_GAMES = 64
TARGET = ('<circle class="target" data-action="{action}" cx="{x:.1f}" cy="{y:.1f}" '
          'r="{r:.1f}" fill="#000" fill-opacity="0" style="cursor:pointer"/>')


class GameError(ValueError):
    """A request the table refuses, with the reason for the person at the page."""


@dataclasses.dataclass
class Game:
    """One game: its states (the first is the start), the moves between them, the side
    the human plays, and the agent's analysis of its last move (SVG), if any."""

    human: int
    states: list[State]
    moves: list[int] = dataclasses.field(default_factory=list)
    analysis: str | None = None
    analysis_of: str = ""

    @property
    def state(self) -> State:
        return self.states[-1]


def _int_field(request: dict[str, Any], name: str) -> int:
    value = request.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise GameError(f"'{name}' must be an integer, got {value!r:.40}")
    return value


class GameTable:
    """Games against one agent, by id (at most `max_games`; the least recently used one
    goes first). Thread-safe: one request at a time touches the table and the agent."""

    def __init__(self, agent: Agent, seed: int = 0, max_games: int = MAX_GAMES):
        self.agent = agent
        self.env = agent.env
        self.max_games = max_games
        self._games: collections.OrderedDict[str, Game] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._key = jax.random.key(seed)
        self._rng = np.random.default_rng(seed)
        self._init, self._step = jax.jit(self.env.init), jax.jit(self.env.step)

    # -- requests -----------------------------------------------------------------------

    def new(self, request: dict[str, Any]) -> dict[str, Any]:
        """A new game; `side` is 'first', 'second' or 'random' (default 'first'). The
        agent moves at once when it plays first."""
        side = request.get("side", "first")
        if side not in SIDES:
            raise GameError(f"'side' must be one of {', '.join(SIDES)}, got {side!r:.40}")
        with self._lock:
            human = int(self._rng.integers(2)) if side == "random" else SIDES.index(side)
            game = Game(human, [jax.device_get(self._init(self._next_key()))])
            game_id = secrets.token_hex(8)
            self._games[game_id] = game
            while len(self._games) > self.max_games:
                self._games.popitem(last=False)
            self._agent_replies(game)
            return self._describe(game_id, game)

    def show(self, request: dict[str, Any]) -> dict[str, Any]:
        """The game `id` as it stands."""
        with self._lock:
            game_id, game = self._game(request)
            return self._describe(game_id, game)

    def move(self, request: dict[str, Any]) -> dict[str, Any]:
        """The human's move (`action`, an id, or `move`, in the game's notation) at ply
        `ply` of game `id`, and the agent's reply."""
        with self._lock:
            game_id, game = self._game(request)
            self._check_ply(request, game)
            if bool(game.state.terminated):
                raise GameError("this game is over: start a new one")
            if int(game.state.current_player) != game.human:
                raise GameError("it is the agent's turn, not yours")
            action = self._action(request)
            if not bool(game.state.legal_action_mask[action]):
                raise GameError(f"{self.env.format_move(action)} is not a legal move here")
            self._play(game, action)
            game.analysis = None
            self._agent_replies(game)
            return self._describe(game_id, game)

    def undo(self, request: dict[str, Any]) -> dict[str, Any]:
        """Takes back the human's last move (and the agent's replies to it)."""
        with self._lock:
            game_id, game = self._game(request)
            self._check_ply(request, game)
            mover = [int(s.current_player) for s in game.states[:-1]]
            if game.human not in mover:
                raise GameError("nothing to undo: you have not moved yet")
            keep = len(mover) - 1 - mover[::-1].index(game.human)
            del game.states[keep + 1:], game.moves[keep:]
            game.analysis = None
            return self._describe(game_id, game)

    def hint(self, request: dict[str, Any]) -> dict[str, Any]:
        """The game, with the agent's analysis of the human's position."""
        with self._lock:
            game_id, game = self._game(request)
            self._check_ply(request, game)
            if bool(game.state.terminated):
                raise GameError("this game is over: there is nothing to analyse")
            self._analyse(game, "your position (a hint)")
            return self._describe(game_id, game)

    # -- the game -----------------------------------------------------------------------

    def _next_key(self) -> jax.Array:
        self._key, key = jax.random.split(self._key)
        return key

    def _game(self, request: dict[str, Any]) -> tuple[str, Game]:
        game_id = request.get("id")
        if not isinstance(game_id, str) or game_id not in self._games:
            raise GameError("unknown game (the server may have restarted, or dropped it as "
                            "one of its oldest): start a new one")
        self._games.move_to_end(game_id)
        return game_id, self._games[game_id]

    def _check_ply(self, request: dict[str, Any], game: Game) -> None:
        ply = _int_field(request, "ply")
        if ply != len(game.moves):
            raise GameError(f"this page is out of date: the game is at ply {len(game.moves)},"
                            f" the page showed ply {ply}; reload it")

    def _action(self, request: dict[str, Any]) -> int:
        if "move" in request:
            if not isinstance(request["move"], str):
                raise GameError(f"'move' must be text, got {request['move']!r:.40}")
            try:
                return self.env.parse_move(request["move"][:40])
            except ValueError as err:
                raise GameError(f"unreadable move: {err}") from None
        action = _int_field(request, "action")
        if not 0 <= action < self.env.num_actions:
            raise GameError(f"'action' must be 0-{self.env.num_actions - 1}, got {action}")
        return action

    def _play(self, game: Game, action: int) -> None:
        game.states.append(jax.device_get(self._step(game.state, action)))
        game.moves.append(action)

    def _agent_replies(self, game: Game) -> None:
        while not bool(game.state.terminated) and int(game.state.current_player) != game.human:
            self._play(game, self._analyse(game, "the position it moved in"))

    def _analyse(self, game: Game, of: str) -> int:
        """Keeps the analysis board of the game's position; returns the agent's move."""
        found = analyse_position(self.agent, game.state, self._next_key())
        game.analysis = analysis_picture(self.env, found, self._last_move(game)).svg()
        game.analysis_of = of
        return found.action

    @staticmethod
    def _last_move(game: Game) -> int | None:
        return game.moves[-1] if game.moves else None

    def _result(self, game: Game) -> str | None:
        state = game.state
        if not bool(state.terminated):
            return None
        mine = float(state.rewards[game.human])
        verdict = "You won." if mine > 0 else "You lost." if mine < 0 else "A draw."
        detail = self.env.result_text(state)
        return f"{verdict} {detail}" if detail else verdict

    def _board(self, game: Game) -> tuple[Picture, list[dict[str, Any]]]:
        """The board with a click target on each legal move's spot, when it is the
        human's turn, and the legal moves that have no spot (shown as buttons)."""
        picture = self.env.picture(game.state, last_move=self._last_move(game))
        state = game.state
        if bool(state.terminated) or int(state.current_player) != game.human:
            return picture, []
        legal = np.flatnonzero(np.asarray(state.legal_action_mask))
        targets = [TARGET.format(action=a, x=picture.spots[a][0], y=picture.spots[a][1],
                                 r=picture.spot_size * 0.5)
                   for a in legal if a in picture.spots]
        buttons = [{"action": int(a), "text": self.env.format_move(a)}
                   for a in legal if a not in picture.spots]
        return picture.add(*targets), buttons

    def _describe(self, game_id: str, game: Game) -> dict[str, Any]:
        picture, buttons = self._board(game)
        state = game.state
        over = bool(state.terminated)
        return {
            "id": game_id,
            "game": self.env.name,
            "ply": len(game.moves),
            "human": game.human,
            "your_turn": not over and int(state.current_player) == game.human,
            "over": over,
            "result": self._result(game),
            "moves": [self.env.format_move(a) for a in game.moves],
            "board": picture.svg(),
            "buttons": buttons,
            "analysis": game.analysis,
            "analysis_of": game.analysis_of if game.analysis else "",
        }
