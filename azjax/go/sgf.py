"""Go games as SGF (Smart Game Format, FF[4]) files, readable by any Go program.

    text = go_game_sgf(9, 7.5, [40, 30, 81, 81], black="A", white="B", result="B+3.5")
    write_sgf("game.sgf", text)

`go_game_sgf` writes one game: a root node (FF[4] GM[1] CA[UTF-8] AP SZ KM RU PB PW,
and DT RE GC when given) and one node per move, Black first. An action is `row * size +
col` with row 0 the top line (`envs.go`); SGF names a point by its column letter then
its row letter, both from `a` and the row counted from the top, so action `r * size + c`
is `chr(97 + c) + chr(97 + r)`, and a pass (action `size * size`) is the empty value
`B[]`. Text values escape `\\` and `]`.

`match_sgfs` / `write_match_sgfs` turn a recorded match (`play_match(..., record=True)`)
on `envs.go.Go` into one SGF per game: the players by seat (A is Black where it is
player 0), the random opening plies included (and noted in GC), and the result from the
final board (Tromp-Taylor area with komi), a forfeit (an illegal move, `W+F` / `B+F`) or
`Void` for a game still running when the match's ply cap stopped it.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
from collections.abc import Sequence
from pathlib import Path

import jax
import numpy as np

from azjax.core.identity import cache_by_identity
from azjax.run.files import check_output_dir, write_atomic
from envs import Env
from envs.go import Go

MAX_SGF_SIZE = 52  # SGF letters a-z then A-Z


def _version() -> str:
    try:
        return importlib.metadata.version("azjax")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0"


APPLICATION = f"azjax:{_version()}"  # AP, the program that wrote the file


def escape(text: str) -> str:
    """`text` as an SGF Text/SimpleText value: `\\` and `]` escaped with a backslash.

    Args:
      text: any text (converted with `str`).

    Returns:
      The escaped text.
    """
    return str(text).replace("\\", "\\\\").replace("]", "\\]")


def _letter(i: int) -> str:
    return chr(ord("a") + i) if i < 26 else chr(ord("A") + i - 26)


def _sgf_point(action: int, size: int) -> str:
    """An action as an SGF point: `chr(97 + col) + chr(97 + row)` (row 0 the top line),
    or "" for a pass (`size * size`). ValueError for an action off the board.

    Args:
      action: the action id, in [0, size * size].
      size: the board's side N.

    Returns:
      Two letters, or "".

    Raises:
      ValueError: `action` is off the board.
    """
    action = int(action)
    if action == size * size:
        return ""
    if not 0 <= action < size * size:
        raise ValueError(f"not an action on a {size}x{size} board: {action}")
    row, col = divmod(action, size)
    return _letter(col) + _letter(row)


def _number(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def sgf_result(margin: float) -> str:
    """The SGF result (RE) of a game scored `margin` = Black's area - White's area - komi:
    "B+3.5", "W+0.5", or "0" for a draw.

    Args:
      margin: Black's area minus White's minus komi.

    Returns:
      The RE value.

    Raises:
      ValueError: `margin` is not finite.
    """
    margin = float(margin)
    if not math.isfinite(margin):
        raise ValueError(f"the score margin must be finite, got {margin}")
    if margin == 0:
        return "0"
    return f"{'B' if margin > 0 else 'W'}+{_number(abs(margin))}"


def go_game_sgf(size: int, komi: float, actions: Sequence[int], *, black: str, white: str,
                result: str | None = None, date: str | None = None, rules: str = "Chinese",
                comment: str | None = None) -> str:
    """One Go game as SGF FF[4] text.

    Args:
      size: the board side (1..52).
      komi: KM.
      actions: the moves from the empty board, Black first and alternating; each
        `row * size + col` (row 0 the top line) or `size * size` for a pass. The list ends
        at its first negative entry (the -1 padding of `MatchResult.moves`).
      black: Black's name (PB).
      white: White's name (PW).
      result: RE, e.g. "B+3.5", "W+R", "W+F", "0" (see `sgf_result`); omitted if None.
      date: DT, e.g. "2026-11-24"; omitted if None.
      rules: RU.
      comment: GC, the game comment; omitted if None.

    Returns:
      The SGF text, ending in a newline.

    Raises:
      ValueError: for a size SGF cannot name or an action off the board.
    """
    size = int(size)
    if not 1 <= size <= MAX_SGF_SIZE:
        raise ValueError(f"SGF boards are 1x1 to {MAX_SGF_SIZE}x{MAX_SGF_SIZE}, got {size}")
    props = [("FF", "4"), ("GM", "1"), ("CA", "UTF-8"), ("AP", APPLICATION),
             ("SZ", str(size)), ("KM", _number(komi)), ("RU", rules),
             ("PB", black), ("PW", white)]
    props += [(name, value) for name, value in (("DT", date), ("RE", result),
                                                ("GC", comment)) if value is not None]
    root = "(;" + "".join(f"{name}[{escape(value)}]" for name, value in props)
    nodes = []
    for ply, action in enumerate(int(a) for a in actions):
        if action < 0:
            break
        nodes.append(f";{'BW'[ply % 2]}[{_sgf_point(action, size)}]")
    lines = [root] + ["".join(nodes[i:i + 12]) for i in range(0, len(nodes), 12)]
    return "\n".join(lines) + ")\n"


def write_sgf(path: str | Path, text: str) -> Path:
    """Writes SGF `text` to `path` (UTF-8), whole or not at all (`azjax.run.files.write_atomic`).

    Args:
      path: the file to write.
      text: the SGF text.

    Returns:
      `path` as a `Path`.
    """
    return write_atomic(path, text)


# --------------------------------------------------------------------------------------
# Recorded matches
# --------------------------------------------------------------------------------------


@cache_by_identity(maxsize=16)
def _compiled_areas(env: Go):
    return jax.jit(jax.vmap(env.area_scores))


def check_go(env: Env, what: str = "--sgf") -> Go:
    """`env` if it is Go (`envs.go.Go`), else a one-line ValueError: game records are
    written for Go only.

    Args:
      env: the game.
      what: the option or command named in the message.

    Returns:
      `env`, as a `Go`.

    Raises:
      ValueError: `env` is not Go.
    """
    if not isinstance(env, Go):  # a user's choice of game: a ValueError, told in one line
        message = f"{what}: SGF game records are written for Go only, not {env.name!r}"
        raise ValueError(message)  # noqa: TRY004
    return env


def check_sgf_dir(env: Env, path: str | Path, what: str = "--sgf") -> Path:
    """The directory for a match's SGF files, checked before any game is played: the game
    must be Go, and the directory writable or possible to make (one-line ValueError).

    Args:
      env: the game.
      path: the directory.
      what: the option named in the messages.

    Returns:
      The directory as a `Path`.

    Raises:
      ValueError: the game is not Go or the directory cannot be written.
    """
    check_go(env, what)
    return check_output_dir(path, what)


def game_file_name(game: int, num_games: int) -> str:
    """The file name of game `game` (0-based) of `num_games`: game-0001.sgf, ...

    Args:
      game: the game's index, 0-based.
      num_games: the number of games of the match (sets the digits, at least 4).

    Returns:
      The file name.
    """
    return f"game-{game + 1:0{max(4, len(str(num_games)))}d}.sgf"


def safe_name(text: str) -> str:
    """`text` as a file name: runs of characters other than letters, digits and `._=+-`
    become `_` (never empty, never hidden, at most 80 characters).

    Args:
      text: any text (converted with `str`).

    Returns:
      The file name.
    """
    name = re.sub(r"[^A-Za-z0-9._=+-]+", "_", str(text)).lstrip(".")[:80]
    return name or "_"


def match_sgfs(env: Env, result, *, date: str | None = None, event: str = "match",
               rules: str = "Chinese") -> list[str]:
    """One SGF text per game of a recorded Go match (`play_match(..., record=True)`), in
    game order. ValueError for a game other than Go or a match recorded without moves.

    Args:
      env: the Go game of the match.
      result: the `MatchResult`, recorded: `moves` (n, T) integer actions padded with -1,
        `final_states` a `GoState` batched (n,).
      date: DT of every game, or None.
      event: what the match was, named in each game's comment.
      rules: RU.

    Returns:
      n SGF texts.

    Raises:
      ValueError: the game is not Go, or the match was not recorded.
    """
    env = check_go(env)
    if result.moves is None or result.final_states is None:
        raise ValueError("the match was not recorded: play it with record=True")
    final = result.final_states
    areas = np.asarray(jax.device_get(_compiled_areas(env)(final))).astype(int)
    terminated = np.asarray(final.terminated)
    # A forfeit ends a game without playing its move: neither two passes nor the move cap.
    num_moves = np.asarray(final.step_count)
    forfeit = terminated & (np.asarray(final.passes) < 2) & (num_moves < env.max_moves)
    n = result.num_games
    distinct = n - n // 2
    texts = []
    for i in range(n):
        a_black = int(result.a_seat[i]) == 0
        black, white = ((result.name_a, result.name_b) if a_black
                        else (result.name_b, result.name_a))
        notes = [f"azjax {event}: {result.name_a} vs {result.name_b}, game {i + 1} of {n}"]
        if result.opening_plies:
            partner = i + distinct if i < distinct else i - distinct
            shared = (f", as in game {partner + 1} with the seats swapped"
                      if partner < n and partner != i else "")
            notes.append(f"the first {result.opening_plies} moves were random "
                         f"(the opening{shared})")
        black_area, white_area = areas[i].tolist()
        count = (f"Tromp-Taylor area: Black {black_area}, White {white_area}, "
                 f"komi {_number(env.komi)}")
        moves = result.moves[i][:num_moves[i]]
        if forfeit[i]:
            loser = int(num_moves[i]) % 2  # the player to move: 0 Black, 1 White
            outcome = f"{'WB'[loser]}+F"
            notes.append(f"{('Black', 'White')[loser]} played an illegal move "
                         f"({int(result.moves[i][num_moves[i]])}) and forfeited")
        elif terminated[i]:
            outcome = sgf_result(black_area - white_area - env.komi)
            notes.append(count)
        else:
            outcome = "Void"
            notes.append(f"unfinished after {num_moves[i]} moves (a draw in the match); "
                         f"{count}")
        texts.append(go_game_sgf(env.size, env.komi, moves, black=black, white=white,
                                 result=outcome, date=date, rules=rules,
                                 comment="; ".join(notes)))
    return texts


def write_match_sgfs(env: Env, result, directory: str | Path, *, date: str | None = None,
                     event: str = "match") -> list[Path]:
    """Writes `match_sgfs` into `directory` (created) as game-0001.sgf, game-0002.sgf,
    ...; returns the paths.

    Args:
      env: the Go game of the match.
      result: the recorded `MatchResult` (see `match_sgfs`).
      directory: where the files go.
      date: DT of every game, or None.
      event: what the match was, named in each game's comment.

    Returns:
      The n paths, in game order.

    Raises:
      ValueError: as `match_sgfs`.
    """
    texts = match_sgfs(env, result, date=date, event=event)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return [write_sgf(directory / game_file_name(i, len(texts)), text)
            for i, text in enumerate(texts)]
