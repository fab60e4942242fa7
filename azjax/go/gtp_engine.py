"""A trained Go agent as a GTP version 2 engine: `python -m azjax.gtp --agent FILE`.

    python -m azjax.gtp --agent go9.azjax [--simulations 200] [--seed 0] [--resign -0.95]
    python -m azjax.gtp --run-dir runs/go9 [--step S]

It reads GTP commands on stdin and writes only GTP replies on stdout (diagnostics go to
stderr), so any GTP controller (GoGui, gogui-twogtp, Sabaki, `azjax.gtp_referee`) can
drive it. `Engine(agent).handle(line)` answers one line and `serve(engine, input,
output)` runs the loop on any text streams (tests and notebooks use them in-process).

Commands: protocol_version, name, version, known_command, list_commands, boardsize (the
size the agent was trained on; any size from 2 to 19 for a network with pooled heads,
`network.pooled_heads`), clear_board, komi, play, genmove, reg_genmove, undo,
showboard, final_score, time_settings and time_left (accepted and ignored), quit, and
azjax-ownership (the network's predicted ownership and score: `azjax.go.ownership`).

Design choices:

* The game is the agent's Go env, rebuilt with the komi from `komi` (and `max_moves`
  from `--max-moves`, default `max(the agent's, 10 * size * size)`, so that a controller's
  move cap is met first). The engine keeps the list of moves and the states after each;
  `undo` drops the last move, `komi` replays the moves in the new env.
* Colours: GTP lets a controller send `play` or `genmove` for the side that is not to
  move (e.g. two black moves in a row). The env alternates colours, so the engine inserts
  a pass by the other colour first; `undo` takes back the move and that inserted pass
  together. If the previous move was a pass, the inserted pass ends the game (two passes).
* End of game: the env ends a game after two consecutive passes or at `max_moves` plies.
  After that `genmove` answers `pass` (and records nothing) and `play` answers
  `? illegal move`; `undo` or `clear_board` reopens it.
* Moves: `genmove` plays the agent's greedy search move (root noise off, as `agent.act`)
  with a fresh key split from `--seed` for every search. With `--resign V` (V in (-1, 0))
  the engine answers `resign` when the search's root value for the side to move is below
  V, from move `RESIGN_AFTER` on; a resignation does not change the position.
* `final_score` is the Tromp-Taylor area count of the current board (every stone on the
  board alive) minus komi: `B+3.5`, `W+0.5` or `0`.
* Ownership: with a network that has an ownership head, `showboard` adds a second board
  of predicted owners and `azjax-ownership` prints the numbers (Black's view); without
  one, `azjax-ownership` answers `? the network has no ownership head`.
"""

from __future__ import annotations

import math
import traceback
import weakref
from collections.abc import Callable
from typing import NamedTuple, TextIO

import jax
import numpy as np

import envs
from azjax.go import ownership
from azjax.go.gtp_protocol import (
    NAME,
    PROTOCOL_VERSION,
    GtpFailure,
    colour_name,
    command_words,
    package_version,
    parse_colour,
    success,
)
from azjax.go.sgf import sgf_result
from azjax.run.agents.agent import Agent
from envs.go_board import MAX_SIZE, format_move, parse_move

RESIGN_AFTER = 20
"""Plies played before the engine may resign."""
MAX_MOVES_PER_POINT = 10
"""The engine's default move cap is this many plies per board point (or the agent's own
cap if larger): well above a referee's, so the controller ends games, not the engine."""


class Move(NamedTuple):
    colour: int  # BLACK or WHITE
    action: int  # row * size + col, size * size for pass
    inserted: bool  # a pass the engine inserted to fix the side to move


_GAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per loaded agent: {(komi, max_moves, size): (agent in that env, its compiled init,
step, area count and score margin)}."""


class Engine:
    """The GTP engine around a Go agent.

    Args:
      agent: a Go agent (`Agent.load`), its search budget already set.
      seed: the seed of the engine's PRNG key; every search gets a fresh key split off it.
      resign: resign when the search's root value is below this (in (-1, 0)); None: never.
      max_moves: the game's move cap in plies (default: see the module docstring).
      log: a text stream for diagnostics (each search's value and move); None: none
        (the command line passes stderr).
    """

    def __init__(self, agent: Agent, seed: int = 0, resign: float | None = None,
                 max_moves: int | None = None, log: TextIO | None = None):
        if agent.env.name != "go":
            raise ValueError(f"a GTP engine needs a Go agent, not a {agent.env.name} agent")
        if resign is not None and not -1.0 < resign < 0.0:
            raise ValueError(f"--resign must be a value in (-1, 0), got {resign!r}")
        self.base_agent = agent
        self.size = agent.env.size
        self.resign = resign
        self._moves_per_size = max_moves is None
        self.max_moves = self._move_cap() if max_moves is None else max_moves
        if isinstance(self.max_moves, bool) or not isinstance(self.max_moves, int) \
                or self.max_moves < 1:
            raise ValueError(f"--max-moves must be an integer of at least 1, got {max_moves!r}")
        self.log = log
        self._key = jax.random.key(seed)
        self.komi = float(agent.env.komi)
        self.agent = self._agent_for(self.komi)
        self.moves: list[Move] = []
        self.states = [self._init()]
        self.quit = False
        self._predict = None  # the ownership predictor, compiled on first use
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda args: PROTOCOL_VERSION,
            "name": lambda args: NAME,
            "version": lambda args: package_version(),
            "known_command": self.cmd_known_command,
            "list_commands": lambda args: "\n".join(self.commands),
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "reg_genmove": self.cmd_reg_genmove,
            "undo": self.cmd_undo,
            "showboard": self.cmd_showboard,
            "final_score": self.cmd_final_score,
            "azjax-ownership": self.cmd_ownership,
            "time_settings": lambda args: "",
            "time_left": lambda args: "",
            "quit": self.cmd_quit,
        }

    # -- game state -------------------------------------------------------------------

    @property
    def env(self) -> envs.Env:
        """The Go game being played (the current size and komi)."""
        return self.agent.env

    def _move_cap(self) -> int:
        return max(self.base_agent.env.max_moves, MAX_MOVES_PER_POINT * self.size ** 2)

    def _agent_for(self, komi: float) -> Agent:
        """The agent in the env with this komi (and the current size), shared by the
        engines of one agent (so that its search and rules are compiled once)."""
        games = _GAMES.setdefault(self.base_agent, {})
        key = (komi, self.max_moves, self.size)
        if key not in games:
            program = self.base_agent.program
            env = envs.make(program.game, **{**program.game_options, "komi": komi,
                                             "max_moves": self.max_moves, "size": self.size})
            agent = Agent(env, self.base_agent.program, self.base_agent.params,
                          self.base_agent.search_config)
            games[key] = (agent, (jax.jit(env.init), jax.jit(env.step),
                                  jax.jit(env.area_scores), jax.jit(env.score_margin())))
        self._rules = games[key][1]
        return games[key][0]

    def _init(self):
        return self._rules[0](jax.random.key(0))

    def _step(self, state, action: int):
        return self._rules[1](state, np.int32(action))

    def area(self) -> tuple[float, float]:
        """Tromp-Taylor area (Black, White) of the current board, komi not included.

        Returns:
          `(black, white)`.
        """
        black, white = np.asarray(jax.device_get(self._rules[2](self.state))).tolist()
        return float(black), float(white)

    @property
    def state(self):
        """The current position, an unbatched `GoState`."""
        return self.states[-1]

    @property
    def to_move(self) -> int:
        """The colour to move: `BLACK` (0) or `WHITE` (1)."""
        return int(self.state.current_player)

    @property
    def over(self) -> bool:
        """Whether the current game has ended."""
        return bool(self.state.terminated)

    def _replay(self) -> None:
        """Rebuilds the states from the move list (after a change of env)."""
        self.states = [self._init()]
        for move in self.moves:
            self.states.append(self._step(self.state, move.action))

    def _append(self, colour: int, action: int, inserted: bool = False) -> None:
        """Plays `action` for `colour` on the current state (no check)."""
        self.moves.append(Move(colour, action, inserted))
        self.states.append(self._step(self.state, action))

    def _push(self, colour: int, action: int) -> bool:
        """Plays `action` for `colour` (a pass by the other colour first if it is not
        `colour`'s turn); False, with nothing changed, if the move is illegal."""
        inserted = 0
        if self.to_move != colour:
            if self.over:
                return False
            self._append(1 - colour, self.size * self.size, inserted=True)
            inserted = 1
        legal = not self.over and bool(self.state.legal_action_mask[action])
        if not legal:
            del self.moves[len(self.moves) - inserted:], self.states[len(self.states) - inserted:]
            return False
        self._append(colour, action)
        return True

    def _next_key(self) -> jax.Array:
        self._key, key = jax.random.split(self._key)
        return key

    def _choose(self, colour: int) -> str:
        """The agent's move for `colour` as GTP text ("D4", "pass", "resign"); the state is
        left with `colour` to move (a pass inserted if needed) but the move not played."""
        if self.over:
            return "pass"
        if self.to_move != colour:
            self._append(1 - colour, self.size * self.size, inserted=True)
            if self.over:
                return "pass"
        batched = jax.tree.map(lambda x: x[None], self.state)
        analysis = jax.device_get(self.agent.analyse(batched, self._next_key()))
        action, value = int(analysis.action[0]), float(analysis.value[0])
        self._say(f"{colour_name(colour)}: search value {value:+.3f}, move "
                  f"{format_move(action, self.size)}")
        if (self.resign is not None and len(self.moves) >= RESIGN_AFTER
                and value < self.resign):
            return "resign"
        if not bool(self.state.legal_action_mask[action]):  # never expected: be safe
            action = self.size * self.size
        return format_move(action, self.size)

    def _say(self, text: str) -> None:
        if self.log is not None:
            print(text, file=self.log, flush=True)

    # -- commands ---------------------------------------------------------------------

    @staticmethod
    def _args(args: list[str], count: int, usage: str) -> list[str]:
        if len(args) < count:
            raise GtpFailure(f"syntax error: expected {usage}")
        return args

    def cmd_known_command(self, args: list[str]) -> str:
        """GTP `known_command NAME`: whether the engine knows the command.

        Args:
          args: the command's arguments: the command's name.

        Returns:
          "true" or "false".

        Raises:
          GtpFailure: no name given.
        """
        self._args(args, 1, "a command name")
        return "true" if args[0] in self.commands else "false"

    def cmd_boardsize(self, args: list[str]) -> str:
        """GTP `boardsize N`: a new empty board of that size.

        Args:
          args: the command's arguments: the size.

        Returns:
          "".

        Raises:
          GtpFailure: a size that is not an integer, or one the network cannot play.
        """
        self._args(args, 1, "a board size")
        try:
            size = int(args[0])
        except ValueError:
            raise GtpFailure(f"syntax error: board size {args[0]!r} is not an integer") from None
        if size != self.size:
            if not (self.base_agent.program.network.pooled_heads and 2 <= size <= MAX_SIZE):
                raise GtpFailure("unacceptable size")
            self.size = size
            self.max_moves = self._move_cap() if self._moves_per_size else self.max_moves
            self.agent, self._predict = self._agent_for(self.komi), None
        self.cmd_clear_board([])
        return ""

    def cmd_clear_board(self, args: list[str]) -> str:
        """GTP `clear_board`: an empty board, the move list cleared.

        Args:
          args: the command's arguments (none).

        Returns:
          "".
        """
        self.moves = []
        self.states = [self._init()]
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        """GTP `komi K`: the komi of the game (its moves are kept).

        Args:
          args: the command's arguments: the komi.

        Returns:
          "".

        Raises:
          GtpFailure: a komi that is not a finite number up to 1000.
        """
        self._args(args, 1, "a komi value")
        try:
            komi = float(args[0])
        except ValueError:
            raise GtpFailure(f"syntax error: komi {args[0]!r} is not a number") from None
        if not math.isfinite(komi) or abs(komi) > 1000:
            raise GtpFailure(f"syntax error: komi {args[0]!r} is not a finite value up to 1000")
        if komi != self.komi:
            self.komi = komi
            self.agent = self._agent_for(komi)
            self._replay()
        return ""

    def _colour_and_move(self, args: list[str]) -> tuple[int, int]:
        self._args(args, 2, "a color and a vertex, e.g. 'play black D4'")
        colour = parse_colour(args[0])
        try:
            action = parse_move(args[1], self.size)
        except ValueError:
            raise GtpFailure(f"syntax error: invalid vertex {args[1]!r}") from None
        return colour, action

    def cmd_play(self, args: list[str]) -> str:
        """GTP `play COLOUR VERTEX`: plays a move for a colour (a pass by the
        other colour first if it is not that colour's turn).

        Args:
          args: the command's arguments: the colour and the vertex.

        Returns:
          "".

        Raises:
          GtpFailure: bad arguments, or an illegal move.
        """
        colour, action = self._colour_and_move(args)
        if not self._push(colour, action):
            raise GtpFailure("illegal move")
        return ""

    def cmd_genmove(self, args: list[str]) -> str:
        """GTP `genmove COLOUR`: the agent's move for a colour, played.

        Args:
          args: the command's arguments: the colour.

        Returns:
          The move ("D4", "pass" or "resign").

        Raises:
          GtpFailure: no or a bad colour.
        """
        self._args(args, 1, "a color")
        colour = parse_colour(args[0])
        move = self._choose(colour)
        if move != "resign" and not self.over:
            self._append(colour, parse_move(move, self.size))
        return move

    def cmd_reg_genmove(self, args: list[str]) -> str:
        """GTP `reg_genmove COLOUR`: the agent's move for a colour, not played.

        Args:
          args: the colour, as for `genmove`.

        Returns:
          The move `genmove` would choose; moves and states are left as they were.

        Raises:
          GtpFailure: as `genmove`.
        """
        self._args(args, 1, "a color")
        colour = parse_colour(args[0])
        moves, states = list(self.moves), list(self.states)
        try:
            return self._choose(colour)
        finally:
            self.moves, self.states = moves, states

    def cmd_undo(self, args: list[str]) -> str:
        """GTP `undo`: takes back the last move (and the passes inserted before it).

        Args:
          args: the command's arguments (none).

        Returns:
          "".

        Raises:
          GtpFailure: no move to take back.
        """
        if not self.moves:
            raise GtpFailure("cannot undo")
        del self.moves[-1], self.states[-1]
        while self.moves and self.moves[-1].inserted:
            del self.moves[-1], self.states[-1]
        return ""

    def cmd_showboard(self, args: list[str]) -> str:
        """GTP `showboard`: the board, the move number, komi and area, and the
        predicted ownership where the network has an ownership head.

        Args:
          args: the command's arguments (none).

        Returns:
          The lines, after a newline.
        """
        black, white = self.area()
        lines = [line for line in self.env.render(self.state).splitlines() if line.strip()]
        lines.append(f"move {len(self.moves)}, komi {self.komi:g}, area: Black {black:g}, "
                     f"White {white:g}")
        if ownership.has_ownership_head(self.base_agent):
            lines += ownership.ownership_board(self.prediction())
        return "\n" + "\n".join(lines)

    def prediction(self) -> ownership.Prediction:
        """The network's ownership and score of the current position (Black's view).

        Returns:
          The `Prediction`: `ownership` (N, N) float64, `score` a float or None.

        Raises:
          ValueError: the network has no ownership head.
        """
        if self._predict is None:
            self._predict = ownership.predictor(self.agent)
        return self._predict(self.state)

    def cmd_ownership(self, args: list[str]) -> str:
        """GTP `azjax-ownership`: the predicted ownership of every point and the
        predicted score, from Black's view.

        Args:
          args: the command's arguments (none).

        Returns:
          The lines (`ownership.ownership_lines`), after a newline.

        Raises:
          GtpFailure: the network has no ownership head.
        """
        if not ownership.has_ownership_head(self.base_agent):
            raise GtpFailure("the network has no ownership head")
        return "\n" + "\n".join(ownership.ownership_lines(self.prediction()))

    def score_margin(self) -> float:
        """Black's Tromp-Taylor area minus White's minus komi, on the current board.

        Returns:
          The margin in points, positive when Black is ahead.
        """
        return float(self._rules[3](self.state))

    def cmd_final_score(self, args: list[str]) -> str:
        """GTP `final_score`: the Tromp-Taylor result of the current board.

        Args:
          args: the command's arguments (none).

        Returns:
          The result, e.g. "B+3.5", "W+0.5" or "0".
        """
        return sgf_result(self.score_margin())

    def cmd_quit(self, args: list[str]) -> str:
        """GTP `quit`: the engine stops after this reply.

        Args:
          args: the command's arguments (none).

        Returns:
          "".
        """
        self.quit = True
        return ""

    # -- protocol ---------------------------------------------------------------------

    def handle(self, line: str) -> str | None:
        """The full reply (`=id text` or `?id message`, ending in a blank line) to one
        input line, or None for a line GTP ignores (empty, or only a comment).

        Args:
          line: one line of the engine's input.

        Returns:
          The reply, or None.
        """
        parsed = command_words(line)
        if parsed is None:
            return None
        ident, words = parsed
        if not words:
            return f"?{ident} syntax error: no command after the id\n\n"
        name, args = words[0], words[1:]
        try:
            command = self.commands.get(name)
            if command is None:
                raise GtpFailure("unknown command")
            text = command(args)
        except GtpFailure as err:
            return f"?{ident} {err}\n\n"
        except Exception as err:  # noqa: BLE001 - an engine must survive any input line
            self._say("internal error: " + "".join(
                traceback.format_exception_only(type(err), err)).strip())
            return f"?{ident} internal error: {' '.join(str(err).split()) or type(err).__name__}\n\n"
        return success(ident, text)


def serve(engine: Engine, input: TextIO, output: TextIO) -> int:
    """Answers GTP commands from `input` on `output` (flushed after each reply) until
    `quit` or the end of the input; returns 0.

    Args:
      engine: the engine that answers.
      input: where the commands come from, one a line.
      output: where the replies go.

    Returns:
      0, the exit status.
    """
    for line in input:
        reply = engine.handle(line)
        if reply is None:
            continue
        output.write(reply)
        output.flush()
        if engine.quit:
            break
    return 0
