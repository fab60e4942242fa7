"""A referee between two GTP engines (`python -m azjax.gtp_referee --black CMD --white CMD`).

    python -m azjax.gtp_referee --black "python -m azjax.gtp --agent go9.azjax" \\
        --white "gnugo --mode gtp --level 0 --chinese-rules --capture-all-dead" \\
        --games 10 --alternate --sgf games/ --json result.json

Like gogui-twogtp: both engines get `boardsize`, `clear_board` and `komi`; the side to
move gets `genmove`, the other `play` of that move. The referee keeps its own azjax Go env
(`envs.make("go", size, komi, max_moves)`, the env's default ko rule) and checks every move:

* an unreadable or illegal move, or a failed `genmove` (`? ...`, the engine dying or
  staying silent), loses the game for that engine ("illegal" / "error");
* a `? ...` refusal of a move the referee found legal is a *refused move*: the game ends
  there and the refusing engine loses it (result `B+F` / `W+F`, "forfeit");
* the game ends on two consecutive passes, a resignation (`B+R` / `W+R`), or at
  `--max-moves` plies (default `4 * size * size`, twice the env's own default: a cap
  that stops endless games without cutting normal ones, even between weak engines).

A game ended by passes or the cap is scored by Tromp-Taylor area with the env (every
stone on the board counts as alive; so use engines that capture dead stones before
passing, e.g. GNU Go's `--capture-all-dead`). After a game that ended by two passes both
engines are asked `final_score`; an answer that differs from the referee's count is
reported as a disagreement. Engine A is `--black`, engine B `--white`; with `--alternate`
they swap colours every other game. Exit status 0 when every game was played, 2 (one
`error:` line) for bad arguments or an engine that cannot start or be restarted.
"""

from __future__ import annotations

import dataclasses
import datetime
import shlex
import shutil
from pathlib import Path

import jax
import numpy as np

import envs
from azjax.go import sgf
from azjax.go.gtp_client import INSTALL_GNUGO, EngineDied, GtpError, GtpProcess
from azjax.go.gtp_protocol import parse_score
from envs.go_board import BLACK, WHITE, format_move, parse_move

COLOURS = ("black", "white")
ENDINGS = ("passes", "resignation", "move cap", "illegal", "error", "forfeit")


@dataclasses.dataclass
class GameRecord:
    number: int
    black: str  # "A" or "B"
    white: str
    actions: list[int]
    ending: str  # one of ENDINGS
    winner: int | None  # BLACK, WHITE, or None for a draw
    margin: float | None  # Black's area minus White's minus komi (games scored on the board)
    result: str  # "B+3.5", "W+R", "B+F", "0", ...
    note: str = ""  # what went wrong, for illegal / error / forfeit games
    refused: int = 0
    illegal: int = 0
    engine_scores: dict[str, str] = dataclasses.field(default_factory=dict)
    disagreements: list[str] = dataclasses.field(default_factory=list)

    def engine(self, colour: int) -> str:
        """The label of the engine that played `colour`.

        Args:
          colour: `BLACK` (0) or `WHITE` (1).

        Returns:
          "A" or "B".
        """
        return self.black if colour == BLACK else self.white


class Seat:
    """One engine (`A` or `B`) and its command line; restarted when it has died."""

    def __init__(self, label: str, command: str, timeout: float):
        self.label = label
        self.command = command
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError(f"engine {label}: the command is empty")
        self.timeout = timeout
        self.process: GtpProcess | None = None
        self.name = command
        self.died = False  # it died or went silent: restart it before the next game

    def send(self, command: str) -> str:
        """`command`'s reply (GtpError for `? ...`; EngineDied marks it for a restart).

        Args:
          command: one GTP command line.

        Returns:
          The reply's text.

        Raises:
          GtpError: the engine answered `? ...`.
          EngineDied: the engine died or went silent.
        """
        try:
            return self.process.send(command)
        except EngineDied:
            self.died = True
            raise

    def start(self) -> GtpProcess:
        """The running engine, started (again) if it has not started or has died.

        Returns:
          The running `GtpProcess`.

        Raises:
          ValueError: the engine cannot start or does not answer `name`.
        """
        if self.process is None or self.died or not self.process.alive:
            if self.process is not None:
                if self.died:  # its output is gone: do not wait long for a reply to quit
                    self.process.timeout = 1.0
                self.process.close()
            self.died = False
            try:
                self.process = GtpProcess(self.argv, timeout=self.timeout)
                name = self.process.send("name")
                try:
                    version = self.process.send("version")
                except GtpError:
                    version = ""
            except (EngineDied, GtpError) as err:
                hint = ""
                if Path(self.argv[0]).name == "gnugo" and shutil.which(self.argv[0]) is None:
                    hint = f"; GNU Go is not installed or not on PATH: {INSTALL_GNUGO}"
                raise ValueError(f"engine {self.label} ({self.command!r}) cannot start: "
                                 f"{err}{hint}") from None
            self.name = f"{name} {version}".strip() or self.command
        return self.process

    def close(self) -> None:
        """Closes the engine's process, if it was started."""
        if self.process is not None:
            self.process.close()


def _setup(seat: Seat, size: int, komi: float) -> None:
    try:
        seat.start().send_all([f"boardsize {size}", "clear_board", f"komi {komi:g}"])
    except (EngineDied, GtpError) as err:
        raise ValueError(f"engine {seat.label} ({seat.command!r}) cannot set up a "
                         f"{size}x{size} game with komi {komi:g}: {err}") from None


class Rules:
    """The referee's Go env and its compiled `init`, `step` and score margin."""

    def __init__(self, size: int, komi: float, max_moves: int):
        self.env = envs.make("go", size=size, komi=komi, max_moves=max_moves)
        self.init, self.step = jax.jit(self.env.init), jax.jit(self.env.step)
        self.score_margin = jax.jit(self.env.score_margin())


def _play_game(number: int, seats: dict[int, Seat], rules: Rules) -> GameRecord:
    """Plays one game between `seats[BLACK]` and `seats[WHITE]` (started engines).

    Args:
      number: the game's number, 1-based, for the record.
      seats: the engines by colour, `BLACK` (0) and `WHITE` (1).
      rules: the referee's Go rules.

    Returns:
      The `GameRecord`.

    Raises:
      ValueError: an engine cannot set up the game.
    """
    env, step = rules.env, rules.step
    size, komi = env.size, env.komi
    state = rules.init(jax.random.key(0))
    for seat in seats.values():
        _setup(seat, size, komi)
    record = GameRecord(number, seats[BLACK].label, seats[WHITE].label, [], "", None, None, "")

    def lose(colour: int, ending: str, note: str) -> GameRecord:
        record.ending, record.note = ending, note
        record.winner = 1 - colour
        record.result = "BW"[1 - colour] + {"resignation": "+R"}.get(ending, "+F")
        return record

    while not bool(state.terminated):
        colour = int(state.current_player)
        mover, other = seats[colour], seats[1 - colour]
        try:
            text = mover.send(f"genmove {COLOURS[colour]}")
        except (GtpError, EngineDied) as err:
            return lose(colour, "error", f"engine {mover.label} failed genmove at move "
                        f"{len(record.actions) + 1}: {err}")
        word = text.strip().lower()
        if word == "resign":
            return lose(colour, "resignation", f"{COLOURS[colour]} resigned")
        try:
            action = parse_move(word, size)
        except ValueError:
            record.illegal += 1
            return lose(colour, "illegal", f"engine {mover.label} played unreadable {text!r}")
        if not bool(state.legal_action_mask[action]):
            record.illegal += 1
            return lose(colour, "illegal", f"engine {mover.label} played illegal "
                        f"{format_move(action, size)} at move {len(record.actions) + 1}")
        move = format_move(action, size)
        try:
            other.send(f"play {COLOURS[colour]} {move}")
        except GtpError as err:
            record.refused += 1
            record.actions.append(action)
            return lose(1 - colour, "forfeit", f"engine {other.label} refused legal "
                        f"{COLOURS[colour]} {move} at move {len(record.actions)}: {err}")
        except EngineDied as err:
            record.actions.append(action)
            return lose(1 - colour, "error", f"engine {other.label} failed 'play' at move "
                        f"{len(record.actions)}: {err}")
        record.actions.append(action)
        state = step(state, np.int32(action))

    margin = float(rules.score_margin(state))
    record.margin = margin
    record.winner = BLACK if margin > 0 else WHITE if margin < 0 else None
    record.result = sgf.sgf_result(margin)
    record.ending = "passes" if int(state.passes) >= 2 else "move cap"
    if record.ending == "passes":
        for colour, seat in seats.items():
            try:
                answer = seat.send("final_score")
            except (GtpError, EngineDied) as err:
                answer = f"? {err}"
            record.engine_scores[seat.label] = answer
            try:
                agrees = parse_score(answer) == margin
            except ValueError:
                agrees = False
            if not agrees:
                record.disagreements.append(f"engine {seat.label} says {answer!r}, the "
                                            f"referee counts {record.result}")
    return record


def _game_line(record: GameRecord) -> str:
    """One line for a finished game: colours, result, ending, moves and what went wrong.

    Args:
      record: the finished game.

    Returns:
      One line of text.
    """
    moves = len(record.actions)
    line = (f"game {record.number}: black {record.black}, white {record.white}: "
            f"{record.result} ({record.ending}, {moves} moves)")
    if record.note:
        line += f"; {record.note}"
    for text in record.disagreements:
        line += f"; final_score disagreement: {text}"
    return line


def summarise(records: list[GameRecord], seats: dict[str, Seat], komi: float) -> dict:
    """Per-engine wins by colour and mean margin, and the counts of problems.

    Args:
      records: the finished games.
      seats: the engines by label, "A" and "B".
      komi: the games' komi, recorded in the summary.

    Returns:
      A JSON-able dict: `games`, `engines` (by label: `command`, `name`, `games` and
      `wins` by colour, `draws`, `mean_margin`, `scored_games`), `endings`,
      `refused_moves`, `illegal_moves`, `final_score_disagreements` and `komi`.
    """
    engines = {}
    for label, seat in seats.items():
        wins = {c: sum(1 for r in records if r.winner == i and r.engine(i) == label)
                for i, c in enumerate(COLOURS)}
        games = {c: sum(1 for r in records if r.engine(i) == label)
                 for i, c in enumerate(COLOURS)}
        margins = [r.margin * (1 if r.black == label else -1) for r in records
                   if r.margin is not None]
        engines[label] = {
            "command": seat.command, "name": seat.name, "games": games, "wins": wins,
            "draws": sum(1 for r in records if r.winner is None and label in (r.black, r.white)),
            "mean_margin": float(np.mean(margins)) if margins else None,
            "scored_games": len(margins),
        }
    return {
        "games": len(records),
        "engines": engines,
        "endings": {e: sum(1 for r in records if r.ending == e) for e in ENDINGS},
        "refused_moves": sum(r.refused for r in records),
        "illegal_moves": sum(r.illegal for r in records),
        "final_score_disagreements": sum(len(r.disagreements) for r in records),
        "komi": komi,
    }


def summary_lines(summary: dict) -> list[str]:
    """The summary as text for humans: per engine, its wins by colour and mean margin; then
    the endings and the problems.

    Args:
      summary: what `summarise` returns.

    Returns:
      The lines.
    """
    lines = [f"{summary['games']} games"]
    for label, e in summary["engines"].items():
        margin = ("n/a" if e["mean_margin"] is None
                  else f"{e['mean_margin']:+.2f} over {e['scored_games']} scored games")
        lines.append(
            f"  engine {label} ({e['name']}): wins as black {e['wins']['black']}/"
            f"{e['games']['black']}, as white {e['wins']['white']}/{e['games']['white']}, "
            f"draws {e['draws']}; mean score margin {margin}")
    endings = ", ".join(f"{k} {v}" for k, v in summary["endings"].items() if v)
    lines.append(f"  endings: {endings or 'none'}")
    lines.append(f"  refused moves {summary['refused_moves']}, illegal moves "
                 f"{summary['illegal_moves']}, final_score disagreements "
                 f"{summary['final_score_disagreements']}")
    return lines


def referee(black: str, white: str, games: int = 1, size: int = 9, komi: float = 7.5,
            max_moves: int | None = None, alternate: bool = False, sgf_dir: Path | None = None,
            timeout: float = 120.0, log=print) -> tuple[list[GameRecord], dict]:
    """Plays `games` games between the engines of the command lines `black` (engine A)
    and `white` (engine B); returns the game records and the summary. ValueError for
    bad settings or an engine that cannot start.

    Args:
      black: engine A's command line (Black in odd games).
      white: engine B's command line.
      games: the number of games, at least 1.
      size: the board's side.
      komi: the komi.
      max_moves: the move cap (None: 4 * size * size).
      alternate: swap colours every other game.
      sgf_dir: where to write each game as `game-NNN.sgf`, or None.
      timeout: seconds to wait for one engine reply.
      log: called with one line per finished game.

    Returns:
      `(records, summary)`: the `GameRecord`s in order, and `summarise`'s dict.

    Raises:
      ValueError: bad settings, or an engine that cannot start or set up a game.
    """
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"--games must be at least 1, got {games!r}")
    max_moves = 4 * size * size if max_moves is None else max_moves
    rules = Rules(size, komi, max_moves)  # checks the options before any engine starts
    seats = {"A": Seat("A", black, timeout), "B": Seat("B", white, timeout)}
    records: list[GameRecord] = []
    try:
        for seat in seats.values():
            seat.start()
        for number in range(1, games + 1):
            swap = alternate and number % 2 == 0
            by_colour = {BLACK: seats["B" if swap else "A"], WHITE: seats["A" if swap else "B"]}
            for seat in by_colour.values():
                seat.start()
            record = _play_game(number, by_colour, rules)
            records.append(record)
            log(_game_line(record))
            if sgf_dir is not None:
                text = sgf.go_game_sgf(
                    size, komi, record.actions, black=by_colour[BLACK].name,
                    white=by_colour[WHITE].name, result=record.result,
                    date=datetime.date.today().isoformat(),
                    comment=f"azjax.gtp_referee game {number}: {record.ending}"
                    + (f"; {record.note}" if record.note else ""))
                sgf.write_sgf(Path(sgf_dir) / f"game-{number:03d}.sgf", text)
    finally:
        for seat in seats.values():
            seat.close()
    return records, summarise(records, seats, komi)
